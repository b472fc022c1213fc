package zk34_test

import (
	"context"
	"fmt"
	"path"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// TestZK34CacheOneShot: on ZooKeeper 3.4, which answers addWatch (and
// multiRead) UNIMPLEMENTED and closes the connection, a cache falls back
// to one-shot watches and stays equal to the server through creates,
// writes and deletes, and through a connection cut with writes made while
// it was cut.
func TestZK34CacheOneShot(t *testing.T) {
	zkc := testutil.StartZK34(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := testutil.Connect(t, []string{proxy.Addr()})
	w := testutil.Connect(t, zkc.Servers()) // the writer, not behind the proxy
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := w.Create(ctx, "/c", []byte("root"), 0)
	require.NoError(t, err)
	_, err = w.Create(ctx, "/c/a", []byte("a0"), 0)
	require.NoError(t, err)

	cc, err := cache.New(c, "/c")
	require.NoError(t, err)
	require.NoError(t, cc.Start(ctx))
	defer cc.Close(context.Background())
	require.NoError(t, cc.WaitReady(ctx))
	require.False(t, cc.Persistent(), "3.4 has no persistent watches")
	// It did ask: 3.4 logs the addWatch (opcode 106) it did not know.
	require.True(t, zkc.LogContains(0, "unknown type 106"), "the cache asked the server for a persistent watch first")
	same := func(what string) {
		t.Helper()
		var want map[string]string
		testutil.Eventually(t, 15*time.Second, "the cache equals the server "+what, func() bool {
			want = serverTree(ctx, w, "/c")
			return reflect.DeepEqual(cacheTree(cc), want)
		})
	}
	same("once loaded")

	for i := range 5 {
		p := fmt.Sprintf("/c/a/n%d", i)
		_, err := w.Create(ctx, p, []byte("x"), 0)
		require.NoError(t, err)
		_, err = w.Set(ctx, p, []byte(fmt.Sprintf("x%d", i)), -1)
		require.NoError(t, err)
	}
	_, err = w.Create(ctx, "/c/b", nil, 0)
	require.NoError(t, err)
	same("after creates and writes")
	require.NoError(t, w.Delete(ctx, "/c/a/n0", -1))
	require.NoError(t, w.Delete(ctx, "/c/b", -1))
	_, err = w.Set(ctx, "/c", []byte("root1"), -1)
	require.NoError(t, err)
	same("after deletes")

	// A cut, with writes made while the cache's client reconnects.
	proxy.Cut()
	_, err = w.Create(ctx, "/c/a/cut", []byte("cut"), 0)
	require.NoError(t, err)
	require.NoError(t, w.Delete(ctx, "/c/a/n1", -1))
	_, err = w.Set(ctx, "/c/a/n2", []byte("during the cut"), -1)
	require.NoError(t, err)
	same("after the cut")
	_, err = w.Create(ctx, "/c/d", []byte("after"), 0)
	require.NoError(t, err)
	require.NoError(t, w.Delete(ctx, "/c/a/n3", -1))
	same("after writes that follow the cut")
}

// serverTree reads path's subtree: each node's path, data and version.
func serverTree(ctx context.Context, c *recipes.Client, p string) map[string]string {
	out := map[string]string{}
	var walk func(string) bool
	walk = func(p string) bool {
		data, st, err := c.Get(ctx, p)
		if err != nil {
			return false
		}
		out[p] = fmt.Sprintf("%q v%d", data, st.Version)
		kids, _, err := c.Children(ctx, p)
		if err != nil {
			return false
		}
		for _, k := range kids {
			if !walk(path.Join(p, k)) {
				return false
			}
		}
		return true
	}
	if !walk(p) {
		return nil
	}
	return out
}

// cacheTree is serverTree from the cache.
func cacheTree(cc *cache.Cache) map[string]string {
	out := map[string]string{}
	for _, n := range cc.Snapshot() {
		out[n.Path] = fmt.Sprintf("%q v%d", n.Data, n.Stat.Version)
	}
	return out
}
