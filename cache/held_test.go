package cache

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
)

// Each event's read goes out as the event comes, whatever the cache's
// goroutines are doing (issue 34): with the cache's lock held (as a long
// read of a large cache holds it, or any pause of the cache's own
// goroutines), a node set twice, the second set once the cache's read of
// the first has been answered, is reported twice, with each version, once
// the lock is let go. The cache before read the nodes of a batch of
// events once, after the batch, from its own goroutine: held up, it read
// nothing, then read both changes as one (NodeChanged with the second
// version only).
func TestEventsReadWhileHeld(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := testutil.Connect(t, zkc.Servers())
	w := testutil.Connect(t, zkc.Servers())
	root := fmt.Sprintf("/held-%d", time.Now().UnixNano())
	for _, p := range []string{root, root + "/x", root + "/y"} {
		_, err := w.Create(ctx, p, []byte("v0"), 0)
		require.NoError(t, err)
	}
	cc, err := New(c, root)
	require.NoError(t, err)
	var (
		mu  sync.Mutex
		got []string // x's values, as NodeChanged reported them
	)
	cc.Listen(func(ev Event) {
		if ev.Type == NodeChanged && ev.Path == root+"/x" {
			mu.Lock()
			got = append(got, string(ev.New.Data))
			mu.Unlock()
		}
	})
	require.NoError(t, cc.Start(ctx))
	t.Cleanup(func() { _ = cc.Close(context.Background()) })
	require.NoError(t, cc.WaitReady(ctx))

	e := (*engine.Client)(c)
	before := e.Stats().GetData
	cc.mu.Lock() // the cache's goroutines are held up
	held := true
	defer func() {
		if held {
			cc.mu.Unlock()
		}
	}()
	for _, p := range []string{root + "/y", root + "/x"} {
		_, err := w.Set(ctx, p, []byte("v1"), -1)
		require.NoError(t, err)
	}
	// Wait (5 s at most: the cache before never read them) until the
	// cache has sent its reads of both changes; an exists on its session
	// after them is answered after them.
	read := func() bool { return e.Stats().GetData >= before+2 }
	for deadline := time.Now().Add(5 * time.Second); !read() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	sent := read()
	_, _, err = e.Exists(ctx, root)
	require.NoError(t, err)
	_, err = w.Set(ctx, root+"/x", []byte("v2"), -1)
	require.NoError(t, err)
	held = false
	cc.mu.Unlock()

	testutil.Eventually(t, 10*time.Second, "the cache reports x's last version", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(got, "v2")
	})
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"v1", "v2"}, got, "x's versions reported (the cache's reads were sent while it was held: %v)", sent)
}
