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
