package atomicval_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// exampleServers starts one server, shared by the examples of this
// package, at its first call; TestMain stops it.
var exampleServers = sync.OnceValue(testutil.ExampleServers)

// ExampleInt64 hands out order numbers from a counter that Go and Java
// (Curator's DistributedAtomicLong) processes share.
func ExampleInt64() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := recipes.Connect(ctx, exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())

	orders, err := atomicval.NewInt64(c, "/shop/order-number",
		// Updaters that lose the optimistic tries take turns on a lock
		// (Curator's PromotedToLock) instead of colliding.
		atomicval.WithPromotedToLock(atomicval.PromotedToLock{Path: "/shop/order-number-lock", Timeout: 5 * time.Second}))
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := orders.Initialize(ctx, 1000); err != nil { // only if it does not exist
		fmt.Println(err)
		return
	}
	for range 3 {
		res, err := orders.Increment(ctx)
		if err != nil { // an increment that did not happen is an error
			fmt.Println("no order number:", err, errors.Is(err, recipes.ErrConflict))
			return
		}
		fmt.Println("order", res.PostValue)
	}

	// A compare-and-set from a stale value changes nothing, and says so.
	res, err := orders.CompareAndSet(ctx, 1000, 0)
	fmt.Println(res.Succeeded, res.PreValue, errors.Is(err, recipes.ErrConflict))
	// Output:
	// order 1001
	// order 1002
	// order 1003
	// false 1003 true
}

// ExampleCachedInt64 takes ids in blocks of 100 (one ZooKeeper update
// per block, as Curator's CachedAtomicLong does): two allocators of one
// counter never hand out the same id.
func ExampleCachedInt64() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := recipes.Connect(ctx, exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())

	counter, err := atomicval.NewInt64(c, "/jobs/ids")
	if err != nil {
		fmt.Println(err)
		return
	}
	a, _ := atomicval.NewCachedInt64(counter, 100)
	b, _ := atomicval.NewCachedInt64(counter, 100)
	for range 2 {
		ida, err := a.Next(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		idb, err := b.Next(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(ida, idb)
	}
	v, _ := counter.Get(ctx)
	fmt.Println("counter", v, "a has", a.Remaining(), "left")
	// Output:
	// 0 100
	// 1 101
	// counter 200 a has 98 left
}
