package barrier_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// exampleServers returns the address of a server started for this test
// package, at its first call; TestMain stops it.
var exampleServers = testutil.ExampleServers

// Example holds workers at a barrier until a coordinator lowers it.
func Example() {
	ctx := context.Background()
	c, err := recipes.Connect(ctx, exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)
	gate, err := barrier.New(c, "/jobs/nightly/gate")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := gate.Set(ctx); err != nil {
		fmt.Println(err)
		return
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		if err := gate.Wait(ctx); err == nil { // a worker, in any process
			fmt.Println("worker: the gate is open")
		}
	}()
	if err := gate.Remove(ctx); err != nil { // the coordinator
		fmt.Println(err)
		return
	}
	<-released
	// Output: worker: the gate is open
}

// ExampleDoubleBarrier starts three workers together and lets them finish
// together.
func ExampleDoubleBarrier() {
	ctx := context.Background()
	c, err := recipes.Connect(ctx, exampleServers())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	entered := 0
	for range 3 {
		d, err := barrier.NewDouble(c, "/jobs/batch", 3)
		if err != nil {
			fmt.Println(err)
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.Enter(ctx); err != nil {
				fmt.Println(err)
				return
			}
			mu.Lock()
			entered++ // all three are in: none got here before the third arrived
			mu.Unlock()
			if err := d.Leave(ctx); err != nil {
				fmt.Println(err)
			}
		}()
	}
	wg.Wait()
	fmt.Println("entered and left together:", entered)
	// Output: entered and left together: 3
}
