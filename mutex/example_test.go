package mutex_test

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Example takes the lock, does fenced work under it and releases it.
func Example() {
	ctx := context.Background()
	c, err := recipes.Connect(exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	m, err := mutex.New(c, "/locks/orders")
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	token, _ := lease.Token(ctx) // strictly increases across holders

	// A write that the server applies only while we still hold the lock.
	_, err = lease.Fenced(ctx, &zk.CreateRequest{Path: "/orders-owner", Data: []byte(fmt.Sprint(token)), Acl: zk.WorldACL(zk.PermAll)})
	fmt.Println("fenced write:", err)

	select {
	case <-lease.Done():
		fmt.Println("the lock may be gone: stop working")
	default:
		fmt.Println("holding")
	}
	fmt.Println("unlock:", m.Unlock(ctx))
	// Output:
	// fenced write: <nil>
	// holding
	// unlock: <nil>
}
