package recipes_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// ExampleConnect connects, follows the connection states and closes.
func ExampleConnect() {
	servers := exampleServers() // e.g. []string{"127.0.0.1:2181"}
	c, err := recipes.Connect(context.Background(), servers, recipes.WithSessionTimeout(10*time.Second), recipes.WithNamespace("myapp"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())
	remove := c.Listen(func(s recipes.State) {
		if s == recipes.StateLost {
			fmt.Println("session lost: every hold is gone")
		}
	})
	defer remove()
	full, _ := c.FullPath("/locks/orders")
	fmt.Println(c.State(), full)
	// Output: CONNECTED /myapp/locks/orders
}

// ExampleClient_CreateWithParents shows the one path rule: paths given
// and paths returned are inside the namespace, so what one call returns
// can be passed to the next. The namespace node and the missing parents
// are made as containers.
func ExampleClient_CreateWithParents() {
	ctx := context.Background()
	c, err := recipes.Connect(ctx, exampleServers(), recipes.WithNamespace("example-paths"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)
	p, err := c.CreateWithParents(ctx, "/config/flags/item-", []byte("on"), zk.FlagEphemeral|zk.FlagSequence)
	if err != nil {
		fmt.Println(err)
		return
	}
	data, _, events, err := c.GetW(ctx, p) // the returned path, passed back
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.TrimRight(p, "0123456789"), string(data))
	if _, err := c.Set(ctx, p, []byte("off"), -1); err != nil {
		fmt.Println(err)
		return
	}
	ev := <-events
	fmt.Println(ev.Type, ev.Path == p)
	// Output:
	// /config/flags/item- on
	// EventNodeDataChanged true
}
