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

// Details is a payload: com.example.Details on the Java side.
type Details struct {
	Zone string `json:"zone"`
}

// Example registers a service instance the way a Java service using
// Curator's ServiceDiscovery typed on its payload class would, and finds
// it through a Provider, its payload read as the Go type.
func Example() {
	ctx := context.Background()
	c, err := recipes.Connect(ctx, exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)
	// The payload, declared once: the Go type and the Java class the Java
	// services' ServiceDiscovery is typed on. Instances of another class
	// are skipped (and counted: Unreadable), as a Java reader refuses them.
	details := discovery.Payload[Details]{Class: "com.example.Details"}
	d, err := discovery.New(c, "/services", discovery.WithPayload(details)) // Spring Cloud's and Dubbo's base path
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := d.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close(ctx)

	inst := &discovery.Instance{
		Name: "orders", ID: "orders-1", Address: "10.0.0.5", Port: 8080,
		URISpec: discovery.MustParseURISpec("{scheme}://{address}:{port}"),
	}
	if err := details.Set(inst, Details{Zone: "eu-1"}); err != nil { // {"@class":"com.example.Details","zone":"eu-1"}
		fmt.Println(err)
		return
	}
	if err := d.Register(ctx, inst); err != nil {
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
	inst = p.Instance()
	v, err := details.Get(inst) // decoded once, when the provider's cache read it
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(inst.ID, inst.BuildURI(nil), inst.PayloadClass(), v.Zone)
	// Output: orders-1 http://10.0.0.5:8080 com.example.Details eu-1
}

// ExamplePayload shows the payloads a Payload writes: Curator's bytes for
// a class, and Jackson's typed form for a value of no natural JSON type.
func ExamplePayload() {
	details := discovery.Payload[Details]{Class: "com.example.Details"}
	inst := &discovery.Instance{Name: "orders", ID: "orders-1"}
	if err := details.Set(inst, Details{Zone: "eu-1"}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(inst.Payload))
	v, err := details.Get(inst)
	fmt.Println(v.Zone, err)

	count := discovery.Payload[int64]{Class: "java.lang.Long"}
	if err := count.Set(inst, 5); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(inst.Payload))
	_, err = details.Get(inst)
	fmt.Println(err)
	// Output:
	// {"@class":"com.example.Details","zone":"eu-1"}
	// eu-1 <nil>
	// ["java.lang.Long",5]
	// zkrecipes: corrupt data: service instance orders-1: payload class "java.lang.Long", not "com.example.Details"
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
