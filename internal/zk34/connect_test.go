package zk34_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// TestZK34Connect: Connect, with its ensemble tracking (a read of
// /zookeeper/config, which 3.4 does not have), works on ZooKeeper 3.4: the
// node operations, a multi and a sync succeed, the same session comes back
// after a connection cut (RECONNECTED, never LOST), no request the server
// does not know is sent, and no watch is left on the server.
func TestZK34Connect(t *testing.T) {
	zkc := testutil.StartZK34(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	var logs testutil.LogBuffer
	c := testutil.Connect(t, []string{proxy.Addr()}, recipes.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	var mu sync.Mutex
	var states []recipes.State
	stop := c.Listen(func(s recipes.State) {
		mu.Lock()
		states = append(states, s)
		mu.Unlock()
	})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ops := func(p string) {
		t.Helper()
		_, err := c.Create(ctx, p, []byte("a"), 0)
		require.NoError(t, err)
		_, err = c.Set(ctx, p, []byte("b"), 0)
		require.NoError(t, err)
		data, _, err := c.Get(ctx, p)
		require.NoError(t, err)
		require.Equal(t, "b", string(data))
		_, err = c.Multi(ctx, recipes.CheckOp(p, 1), recipes.CreateOp(p+"-m", nil, 0), recipes.DeleteOp(p+"-m", 0))
		require.NoError(t, err)
		require.NoError(t, c.Sync(ctx, p))
		require.NoError(t, c.Delete(ctx, p, 1))
		ok, _, err := c.Exists(ctx, p)
		require.NoError(t, err)
		require.False(t, ok)
	}
	ops("/x")
	sid := c.SessionID()
	proxy.Cut()
	testutil.Eventually(t, 10*time.Second, "RECONNECTED after the cut", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(states) > 0 && states[len(states)-1] == recipes.StateReconnected
	})
	ops("/y")
	require.Equal(t, sid, c.SessionID(), "the same session")
	mu.Lock()
	for _, s := range states {
		require.NotEqual(t, recipes.StateLost, s)
	}
	mu.Unlock()
	require.False(t, zkc.LogContains(0, "unknown type"), "no request 3.4 does not know")
	n, err := zkc.WatchCount(0)
	require.NoError(t, err)
	require.Zero(t, n, "no watch left (none on /zookeeper/config, which 3.4 lacks)")
	require.Zero(t, logs.Count("level=WARN")+logs.Count("level=ERROR"), "nothing to warn of: %s", logs.String())
}
