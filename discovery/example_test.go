package discovery_test

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// exampleServers returns the address of a server started for this test
// package, at its first call; TestMain stops it.
var exampleServers = testutil.ExampleServers

// Example registers a service instance the way a Java service using
// Curator's ServiceDiscovery would, and finds it through a Provider.
func Example() {
	ctx := context.Background()
	c, err := recipes.Connect(ctx, exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)
	d, err := discovery.New(c, "/services") // Spring Cloud's and Dubbo's base path
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := d.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close(ctx)

	// A payload a Java reader typed on com.example.Details accepts.
	payload, err := discovery.EncodePayload(map[string]string{"zone": "eu-1"}, "com.example.Details")
	if err != nil {
		fmt.Println(err)
		return
	}
	err = d.Register(ctx, &discovery.Instance{
		Name: "orders", ID: "orders-1", Address: "10.0.0.5", Port: 8080, Payload: payload,
		URISpec: discovery.MustParseURISpec("{scheme}://{address}:{port}"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	p, err := d.NewProvider("orders", discovery.WithStrategy(discovery.RoundRobin()))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close(ctx)
	inst := p.Instance()
	var details struct{ Zone string }
	if err := inst.DecodePayload(&details); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(inst.ID, inst.BuildURI(nil), inst.PayloadClass(), details.Zone)
	// Output: orders-1 http://10.0.0.5:8080 com.example.Details eu-1
}

// ExampleInstance_MarshalJSON shows the JSON Curator writes for an
// instance, byte for byte.
func ExampleInstance_MarshalJSON() {
	inst := &discovery.Instance{
		Name: "orders", ID: "id-1", Address: "10.0.0.5", Port: 8080,
		RegistrationTimeUTC: 1698197224917, ServiceType: discovery.Dynamic,
		URISpec: discovery.MustParseURISpec("{scheme}://{address}:{port}"),
	}
	b, _ := inst.MarshalJSON()
	fmt.Println(string(b))
	// Output: {"name":"orders","id":"id-1","address":"10.0.0.5","port":8080,"sslPort":null,"payload":null,"registrationTimeUTC":1698197224917,"serviceType":"DYNAMIC","uriSpec":{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false},{"value":"address","variable":true},{"value":":","variable":false},{"value":"port","variable":true}]}}
}
