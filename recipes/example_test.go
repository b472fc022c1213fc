package recipes_test

import (
	"context"
	"fmt"
	"time"

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
