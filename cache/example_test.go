package cache_test

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// exampleServers returns the address of a server started for this test
// package, at its first call; TestMain stops it.
var exampleServers = testutil.ExampleServers

// Example mirrors a configuration subtree in memory and hears its
// changes: the current contents first, then Initialized, then each change.
func Example() {
	ctx := context.Background()
	c, err := recipes.Connect(ctx, exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)
	for _, p := range []string{"/config", "/config/db", "/config/db/url"} {
		if _, err := c.Create(ctx, p, []byte("v1"), 0); err != nil {
			fmt.Println(err)
			return
		}
	}

	config, err := cache.New(c, "/config")
	if err != nil {
		fmt.Println(err)
		return
	}
	events := make(chan cache.Event, 16)
	defer config.Listen(func(ev cache.Event) { events <- ev })()
	if err := config.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer config.Close(ctx)
	if err := config.WaitReady(ctx); err != nil {
		fmt.Println(err)
		return
	}
	url, _ := config.Get("/config/db/url") // from memory
	fmt.Printf("url = %s (version %d), %d nodes cached\n", url.Data, url.Stat.Version, config.Size())

	if _, err := c.Set(ctx, "/config/db/url", []byte("v2"), -1); err != nil {
		fmt.Println(err)
		return
	}
	for ev := range events {
		fmt.Println(ev)
		if ev.Type == cache.NodeChanged {
			fmt.Printf("  %s -> %s\n", ev.Old.Data, ev.New.Data)
			break
		}
	}
	// Output:
	// url = v1 (version 0), 3 nodes cached
	// NODE_CREATED /config
	// NODE_CREATED /config/db
	// NODE_CREATED /config/db/url
	// INITIALIZED
	// NODE_CHANGED /config/db/url
	//   v1 -> v2
}
