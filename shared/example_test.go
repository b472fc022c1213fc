package shared_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/shared"
)

// exampleServers starts one server, shared by the examples of this
// package, at its first call; TestMain stops it.
var exampleServers = sync.OnceValue(testutil.ExampleServers)

// ExampleSharedCount watches a count that another client changes.
func ExampleCount() {
	ctx := context.Background()
	servers := exampleServers() // e.g. []string{"127.0.0.1:2181"}
	a, err := recipes.Connect(context.Background(), servers)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close(context.Background())
	b, err := recipes.Connect(context.Background(), servers)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close(context.Background())

	// The node holds Curator's format: 4 bytes, big-endian. The seed is
	// written only if the node does not exist yet.
	watcher, err := shared.NewCount(a, "/config/replicas", 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := watcher.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer watcher.Close(ctx)
	changes, stop := watcher.Subscribe()
	defer stop()
	fmt.Println("watcher starts at:", (<-changes).Value) // the current value first

	setter, err := shared.NewCount(b, "/config/replicas", 100) // exists: the seed is ignored
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := setter.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer setter.Close(ctx)
	fmt.Println("setter reads:", setter.Get())

	// CompareAndSet succeeds only from the current version: of several
	// processes raising the count from the same value, one wins.
	prev := setter.GetVersioned()
	fmt.Println("set to 5:", setter.CompareAndSet(ctx, prev, 5))
	err = setter.CompareAndSet(ctx, prev, 6) // prev is stale now
	fmt.Println("set to 6 from a stale version:", errors.Is(err, recipes.ErrConflict))
	select {
	case v := <-changes:
		fmt.Println("watcher sees:", v.Value, "at version", v.Version)
	case <-time.After(10 * time.Second):
		fmt.Println("no change seen")
	}
	// Output:
	// watcher starts at: 3
	// setter reads: 3
	// set to 5: <nil>
	// set to 6 from a stale version: true
	// watcher sees: 5 at version 1
}

// ExampleSharedValue shares bytes: a configuration blob every process
// reads from its cache.
func ExampleValue() {
	ctx := context.Background()
	c, err := recipes.Connect(context.Background(), exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())

	v, err := shared.NewValue(c, "/config/banner", []byte("hello"))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := v.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer v.Close(ctx)
	fmt.Printf("%s\n", v.Get())
	if err := v.Set(ctx, []byte("maintenance at 22:00")); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s (version %d)\n", v.Get(), v.GetVersioned().Version)
	// Output:
	// hello
	// maintenance at 22:00 (version 1)
}
