package nodes_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// A persistent node (and so a group member, a TTL node, a service
// instance) whose create the server refuses for want of rights says so
// (WaitReady returns an error wrapping recipes.ErrNoAuth at once) and does
// not try again on a timer, as Curator's PersistentNode stops at NOAUTH:
// the refusal holds until someone changes the ACL or the credentials. It
// tries again when poked (SetData) or when the connection comes back.
func TestPersistentNodeDoesNotRetryNoAuth(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	owner := connect(t, zkc.Servers(), recipes.WithAuth("digest", []byte("svc:secret")),
		recipes.WithACLProvider(recipes.ACLProviderFunc(func(string) []zk.ACL { return zk.AuthACL(zk.PermAll) })))
	_, err := owner.CreateWithParents(ctx, "/guarded/group", nil, 0)
	require.NoError(t, err)
	var logs testutil.LogBuffer
	other := connect(t, zkc.Servers(), recipes.WithRetryPolicy(recipes.RetryForever(2*time.Millisecond)),
		recipes.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	n, err := nodes.NewPersistentNode(other, "/guarded/group/m", nodes.Ephemeral, []byte("x"))
	require.NoError(t, err)
	require.NoError(t, n.Start(ctx))
	defer n.Close(ctx)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	err = n.WaitReady(wctx)
	require.ErrorIs(t, err, recipes.ErrNoAuth)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.Contains(t, err.Error(), "/guarded/group/m")
	// With a 2ms retry policy, a loop that retried would log ~100 refusals
	// in this window.
	assert.Never(t, func() bool { return logs.Count("not authenticated") > 1 }, 200*time.Millisecond, 5*time.Millisecond,
		"the refused create was tried again")
	ok, _, err := owner.Exists(ctx, "/guarded/group/m")
	require.NoError(t, err)
	assert.False(t, ok)

	// Once the ACL grants it, SetData pokes the node into being.
	_, err = owner.UnsafeConn().SetACL("/guarded/group", zk.WorldACL(zk.PermAll), -1)
	require.NoError(t, err)
	require.NoError(t, n.SetData(wctx, []byte("y")))
	require.NoError(t, n.WaitReady(wctx))
	data, _, err := owner.Get(ctx, "/guarded/group/m")
	require.NoError(t, err)
	assert.Equal(t, "y", string(data))
}
