package nodes_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// exampleServers returns the address of a server started for this test
// package, at its first call; TestMain stops it.
var exampleServers = testutil.ExampleServers

// Example keeps a node of this process in existence (made again if it
// goes) and joins a group.
func Example() {
	ctx := context.Background()
	c, err := recipes.Connect(ctx, exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)

	// A sequential ephemeral node: made again at the same path if deleted.
	n, err := nodes.NewPersistentNode(c, "/workers/w-", nodes.EphemeralSequential, []byte("idle"))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := n.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer n.Close(ctx)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := n.WaitReady(wctx); err != nil {
		fmt.Println(err)
		return
	}
	if err := n.SetData(wctx, []byte("busy")); err != nil {
		fmt.Println(err)
		return
	}
	data, _, _ := c.Get(ctx, n.ActualPath())
	fmt.Printf("node holds %q\n", data)

	// A group member, with its address as payload.
	g, err := nodes.NewGroupMember(c, "/services/api", "api-1", []byte("10.0.0.1:8080"))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := g.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close(ctx)
	if err := g.WaitReady(wctx); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range g.CurrentMembers() {
		fmt.Printf("member %s at %s\n", m.ID, m.Payload)
	}
	// Output:
	// node holds "busy"
	// member api-1 at 10.0.0.1:8080
}
