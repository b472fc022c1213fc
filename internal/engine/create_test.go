package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// The protected create, the containers it makes and the guaranteed
// delete, each alone (recipes reach them through Enter and Own).

func TestProtectedCreateRecoversLostReply(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(4*time.Second))
	ctx := context.Background()
	require.NoError(t, (*engine.Client)(c).EnsureContainers(ctx, "/protected"))

	before := (*engine.Client)(c).Stats()
	proxy.CutAfterClientSends([]byte(zkpath.ProtectedPrefix))
	path, sid, err := engine.CreateProtected((*engine.Client)(c), ctx, "/protected", "lock-", []byte("x"))
	require.NoError(t, err)
	d := (*engine.Client)(c).Stats().Sub(before)
	assert.Equal(t, c.UnsafeConn().SessionID(), sid)
	assert.GreaterOrEqual(t, d.Creates, uint64(1))
	assert.GreaterOrEqual(t, d.Children, uint64(1), "the lost reply forced a search")
	t.Logf("requests for the recovered create: %+v", d)

	kids, _, err := c.Children(ctx, "/protected")
	require.NoError(t, err)
	require.Len(t, kids, 1, "exactly one node")
	assert.Equal(t, "/protected/"+kids[0], path)
	assert.True(t, strings.HasPrefix(kids[0], zkpath.ProtectedPrefix))
	assert.Regexp(t, `^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-\d{10}$`, kids[0])
}

func TestContainerParentsAreReapedAndRecreated(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()

	path, sid, err := engine.CreateProtected((*engine.Client)(c), ctx, "/reap/a/b", "lock-", nil)
	require.NoError(t, err)
	for _, p := range []string{"/reap", "/reap/a", "/reap/a/b"} {
		_, st, err := c.UnsafeConn().Get(p)
		require.NoError(t, err)
		assert.Zero(t, st.EphemeralOwner, p)
	}
	require.NoError(t, (*engine.Client)(c).GuaranteedDelete(ctx, path, sid))
	// The server reaps empty containers bottom-up, one level per check.
	eventually(t, 15*time.Second, "containers reaped", func() bool {
		ok, _, err := c.Exists(ctx, "/reap")
		return err == nil && !ok
	})

	// A parent deleted between two calls is recreated.
	require.NoError(t, (*engine.Client)(c).EnsureContainers(ctx, "/reap2/x"))
	require.NoError(t, c.Delete(ctx, "/reap2/x", -1))
	_, _, err = engine.CreateProtected((*engine.Client)(c), ctx, "/reap2/x", "lock-", nil)
	require.NoError(t, err)

	// Race the real reaper: create and delete children in a loop for a few
	// check intervals; every create must succeed.
	deadline := time.Now().Add(3 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		p, sid, err := engine.CreateProtected((*engine.Client)(c), ctx, "/reap3/y", "lock-", nil)
		require.NoError(t, err, "create %d", n)
		require.NoError(t, (*engine.Client)(c).GuaranteedDelete(ctx, p, sid))
		n++
	}
	t.Logf("%d creates raced the container reaper", n)
}

func TestGuaranteedDeleteSurvivesConnectionBlip(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(4*time.Second))
	direct := connect(t, zkc.Servers())
	ctx := context.Background()

	path, sid, err := engine.CreateProtected((*engine.Client)(c), ctx, "/gd", "lock-", nil)
	require.NoError(t, err)
	proxy.Blackhole()
	require.NoError(t, (*engine.Client)(c).GuaranteedDelete(ctx, path, sid)) // fails for a connection reason, goes to background
	assert.Equal(t, int64(1), (*engine.Client)(c).Stats().PendingDeletes)
	ok, _, err := direct.Exists(ctx, path)
	require.NoError(t, err)
	assert.True(t, ok, "not deleted while black-holed")
	proxy.Restore()
	eventually(t, 10*time.Second, "background delete", func() bool {
		ok, _, err := direct.Exists(ctx, path)
		return err == nil && !ok && (*engine.Client)(c).Stats().PendingDeletes == 0
	})
	assert.Equal(t, sid, c.SessionID(), "the session survived: the delete, not expiry, removed the node")
}
