package cleanup_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/cleanup"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// ExampleReaper finds, with Scan, the per-key lock parents an older client
// left behind as persistent nodes, and removes them with a Reaper that
// deletes a parent once it has stayed empty.
func ExampleReaper() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := testutil.ExampleServers() // e.g. []string{"127.0.0.1:2181"}
	c, err := recipes.Connect(context.Background(), servers)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())

	// What go-zookeeper's zk.Lock or Kazoo leaves: persistent parents.
	for _, p := range []string{"/locks", "/locks/orders", "/locks/orders/41", "/locks/orders/42"} {
		if _, err := c.Create(ctx, p, nil, 0); err != nil {
			fmt.Println(err)
			return
		}
	}
	found, err := cleanup.Scan(ctx, c, "/locks/orders")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("empty parents:", found.EmptyParents)

	r, err := cleanup.New(c, cleanup.WithParents("/locks/orders"),
		cleanup.WithThreshold(100*time.Millisecond), cleanup.WithChecks(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := r.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close(ctx)
	for {
		kids, _, err := c.Children(ctx, "/locks/orders")
		if err != nil {
			fmt.Println(err)
			return
		}
		if len(kids) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			fmt.Println("not reaped:", kids)
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	fmt.Println("reaped: /locks/orders is empty")
	// Output:
	// empty parents: 2
	// reaped: /locks/orders is empty
}
