package mutex_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Example takes the lock, does fenced work under it and releases it.
func Example() {
	ctx := context.Background()
	c, err := recipes.Connect(context.Background(), exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())

	m, err := mutex.New(c, "/locks/orders")
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := m.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	token, _ := lease.Token(ctx) // strictly increases across holders

	// A write that the server applies only while we still hold the lock.
	_, err = lease.Fenced(ctx, recipes.CreateOp("/orders-owner", []byte(fmt.Sprint(token)), 0))
	fmt.Println("fenced write:", err)

	select {
	case <-lease.Done():
		fmt.Println("the lock may be gone: stop working")
	default:
		fmt.Println("holding")
	}
	fmt.Println("release:", lease.Release(ctx))
	// Output:
	// fenced write: <nil>
	// holding
	// release: <nil>
}

// ExampleWithRevocationListener gives the lock up when asked: the listener
// runs on a goroutine of its own, so it releases through the lease.
func ExampleWithRevocationListener() {
	ctx := context.Background()
	c, err := recipes.Connect(context.Background(), exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())

	released := make(chan error, 1)
	m, err := mutex.New(c, "/locks/reports", mutex.WithRevocationListener(func(lease *mutex.Lease) {
		released <- lease.Release(ctx) // not m.Unlock: this goroutine is not the owner
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := m.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}

	// Another process would find the holder's node with Participants.
	fmt.Println("revoke:", mutex.Revoke(ctx, c, lease.Node()))
	select {
	case err := <-released:
		fmt.Println("released:", err)
	case <-time.After(10 * time.Second):
		fmt.Println("the listener was not called")
	}
	fmt.Println("held:", m.IsHeldInProcess())
	// Output:
	// revoke: <nil>
	// released: <nil>
	// held: false
}
