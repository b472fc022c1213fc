package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// The requests the Wire makes itself (those that set no watch) answer as
// go-zookeeper's own calls do, values and errors alike, for a cancellable
// ctx and for context.Background().
func TestWireRequestsMatchGoZookeeper(t *testing.T) {
	zkc := zktest.Start(t)
	e := (*engine.Client)(connect(t, zkc.Servers()))
	conn, _, err := zk.Connect(zkc.Servers(), 10*time.Second, testutil.ZKTLS(zkc.Servers()), zk.WithLogInfo(false))
	require.NoError(t, err)
	defer conn.Close()
	acl := zk.WorldACL(zk.PermAll)
	_, err = conn.Create("/wm", []byte("parent"), 0, acl)
	require.NoError(t, err)
	_, err = conn.Create("/wm/nil", nil, 0, acl)
	require.NoError(t, err)
	_, err = conn.Create("/wm/empty", []byte{}, 0, acl)
	require.NoError(t, err)

	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ctx := range []context.Context{cancellable, context.Background()} {
		before := engine.WireRequests(e)
		made := 0

		for _, p := range []string{"/wm", "/wm/nil", "/wm/empty", "/wm/missing"} {
			d, st, err := e.Get(ctx, p)
			wd, wst, werr := conn.Get(p)
			assert.Equal(t, wd, d, "get %s", p)
			assert.Equal(t, wst, st, "get %s", p)
			assert.Equal(t, werr, err, "get %s", p)

			ok, st, err := e.Exists(ctx, p)
			wok, wst, werr := conn.Exists(p)
			assert.Equal(t, wok, ok, "exists %s", p)
			assert.Equal(t, wst, st, "exists %s", p)
			assert.Equal(t, werr, err, "exists %s", p)

			kids, st, err := e.Children(ctx, p)
			wkids, wst, werr := conn.Children(p)
			assert.Equal(t, wkids, kids, "children %s", p)
			assert.Equal(t, wst, st, "children %s", p)
			assert.Equal(t, werr, err, "children %s", p)
			made += 3
		}

		created, err := e.Create(ctx, "/wm/a", []byte("a"), 0)
		require.NoError(t, err)
		assert.Equal(t, "/wm/a", created)
		_, err = e.Create(ctx, "/wm/a", nil, 0)
		assert.Equal(t, zk.ErrNodeExists, err)
		_, err = e.Create(ctx, "/wm/missing/a", nil, 0)
		assert.Equal(t, zk.ErrNoNode, err)
		seq, err := e.Create(ctx, "/wm/s-", nil, zk.FlagEphemeral|zk.FlagSequence)
		require.NoError(t, err)
		assert.Regexp(t, `^/wm/s-\d{10}$`, seq)
		_, err = e.Create(ctx, seq+"/child", nil, 0)
		assert.Equal(t, zk.ErrNoChildrenForEphemerals, err)
		made += 5

		_, err = e.Set(ctx, "/wm/a", []byte("b"), 7)
		assert.Equal(t, zk.ErrBadVersion, err)
		st, err := e.Set(ctx, "/wm/a", []byte("bb"), 0)
		require.NoError(t, err)
		_, wst, err := conn.Exists("/wm/a")
		require.NoError(t, err)
		assert.Equal(t, wst, st)
		assert.Equal(t, int32(2), st.DataLength)
		_, err = e.Set(ctx, "/wm/missing", nil, -1)
		assert.Equal(t, zk.ErrNoNode, err)
		require.NoError(t, e.Sync(ctx, "/wm"))
		made += 4

		_, err = e.Create(ctx, "/wm/a/kid", nil, 0)
		require.NoError(t, err)
		assert.Equal(t, zk.ErrNotEmpty, e.Delete(ctx, "/wm/a", -1))
		assert.Equal(t, zk.ErrBadVersion, e.Delete(ctx, "/wm/a/kid", 3))
		require.NoError(t, e.Delete(ctx, "/wm/a/kid", 0))
		require.NoError(t, e.Delete(ctx, "/wm/a", -1))
		require.NoError(t, e.Delete(ctx, seq, -1))
		assert.Equal(t, zk.ErrNoNode, e.Delete(ctx, seq, -1))
		made += 7

		assert.Equal(t, uint64(made), engine.WireRequests(e)-before, "requests the Wire made")
	}
}

// A request the Wire made fails with zk.ErrConnectionClosed (retryable)
// when its connection ends, as go-zookeeper's do; the client reconnects
// and the Wire makes requests on the new connection.
func TestWireRequestFailsWithItsConnection(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	e := (*engine.Client)(connect(t, []string{proxy.Addr()}))
	ctx := context.Background()
	_, err := e.Create(ctx, "/wf", nil, 0)
	require.NoError(t, err)

	proxy.Blackhole()
	before := engine.WireRequests(e)
	done := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, _, err := e.Get(cctx, "/wf")
		done <- err
	}()
	eventually(t, 10*time.Second, "the get is in flight", func() bool { return engine.WireRequests(e) > before })
	proxy.Restore() // closes the black-holed connection
	select {
	case err := <-done:
		assert.True(t, errors.Is(err, zk.ErrConnectionClosed), "%v", err)
		assert.True(t, zkerr.IsRetryable(err))
	case <-time.After(10 * time.Second):
		t.Fatal("the get did not end with its connection")
	}
	eventually(t, 20*time.Second, "a get on the new connection, through the Wire", func() bool {
		n := engine.WireRequests(e)
		_, _, err := e.Get(ctx, "/wf")
		return err == nil && engine.WireRequests(e) > n
	})
}
