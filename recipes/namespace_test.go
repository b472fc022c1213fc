package recipes_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// One path rule: every path a user passes, to a recipe or to a Client
// method (fenced ops included), is inside the namespace; paths returned
// are without it; errors name the full path.
func TestNamespaceAppliesToEveryClientMethod(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers(), recipes.WithNamespace("ns"))
	admin := connect(t, zkc.Servers())
	ctx := context.Background()
	at := func(p string) bool {
		ok, _, err := admin.Exists(ctx, p)
		require.NoError(t, err)
		return ok
	}

	_, err := admin.Create(ctx, "/ns", nil, 0)
	require.NoError(t, err)
	p, err := c.Create(ctx, "/a", []byte("1"), 0)
	require.NoError(t, err)
	assert.Equal(t, "/a", p, "the path returned is without the namespace")
	assert.True(t, at("/ns/a"))
	assert.False(t, at("/a"), "nothing at the root")
	seq, err := c.Create(ctx, "/s-", nil, zk.FlagSequence)
	require.NoError(t, err)
	assert.Regexp(t, `^/s-\d{10}$`, seq)

	data, _, err := c.Get(ctx, "/a")
	require.NoError(t, err)
	assert.Equal(t, "1", string(data))
	ok, _, err := c.Exists(ctx, "/a")
	require.NoError(t, err)
	assert.True(t, ok)
	kids, _, err := c.Children(ctx, "/")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", seq[1:]}, kids, "the namespace's root")
	_, err = c.Set(ctx, "/a", []byte("2"), -1)
	require.NoError(t, err)
	data, _, err = admin.Get(ctx, "/ns/a")
	require.NoError(t, err)
	assert.Equal(t, "2", string(data))
	require.NoError(t, c.Sync(ctx, "/a"))

	res, err := c.Multi(ctx, recipes.CreateOp("/b", nil, 0),
		recipes.CheckOp("/a", -1))
	require.NoError(t, err)
	assert.Equal(t, "/b", res[0].String)
	assert.True(t, at("/ns/b"))
	_, err = c.Multi(ctx, recipes.CheckOp("/a", -1), recipes.DeleteOp("/missing", -1))
	assert.ErrorIs(t, err, zk.ErrNoNode)
	assert.ErrorContains(t, err, "delete /ns/missing", "the failing op and its full path")
	_, err = c.Multi(ctx, recipes.DeleteOp("relative", -1))
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)
	_, err = c.Multi(ctx, recipes.CheckOp("/a", -1), recipes.Op{})
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	assert.ErrorContains(t, err, "multi op 1 is the zero Op")

	require.NoError(t, c.Delete(ctx, "/b", -1))
	assert.False(t, at("/ns/b"))
	_, _, err = c.Get(ctx, "/missing")
	assert.ErrorIs(t, err, zk.ErrNoNode)
	assert.ErrorContains(t, err, "/ns/missing")
	_, err = c.Create(ctx, "relative", nil, 0)
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)

	// Fenced ops are on recipe paths too, and their errors name the path.
	m, err := mutex.New(c, "/lock")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	assert.Contains(t, lease.Node(), "/ns/lock/", "Node is the server path")
	_, err = lease.Fenced(ctx, recipes.SetOp("/a", []byte("3"), -1))
	require.NoError(t, err)
	data, _, err = admin.Get(ctx, "/ns/a")
	require.NoError(t, err)
	assert.Equal(t, "3", string(data))
	_, err = lease.Fenced(ctx, recipes.SetOp("/nowhere", nil, -1))
	assert.ErrorIs(t, err, zk.ErrNoNode)
	assert.NotErrorIs(t, err, recipes.ErrFenced)
	assert.ErrorContains(t, err, "set /ns/nowhere")
	_, err = lease.Fenced(ctx, recipes.SetOp("relative", nil, -1))
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)
	_, err = lease.Fenced(ctx, recipes.Op{})
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	assert.ErrorContains(t, err, "fenced op 0 is the zero Op")
	require.NoError(t, lease.Release(ctx))
	_, err = lease.Fenced(ctx, recipes.SetOp("/a", nil, -1))
	assert.ErrorIs(t, err, recipes.ErrFenced)
}

// A create in a transaction, plain or fenced, gets the ACL the client's
// provider gives for its server path, as Client.Create does.
func TestMultiCreatesUseTheACLProvider(t *testing.T) {
	zkc := zktest.Start(t)
	readOnly := zk.WorldACL(zk.PermRead)
	var asked []string
	var mu sync.Mutex
	c := connect(t, zkc.Servers(), recipes.WithNamespace("ns"), recipes.WithACLProvider(recipes.ACLProviderFunc(func(p string) []zk.ACL {
		mu.Lock()
		asked = append(asked, p)
		mu.Unlock()
		if strings.HasPrefix(p, "/ns/ro") {
			return readOnly
		}
		return zk.WorldACL(zk.PermAll)
	})))
	admin := connect(t, zkc.Servers())
	ctx := context.Background()
	_, err := admin.Create(ctx, "/ns", nil, 0)
	require.NoError(t, err)

	_, err = c.Multi(ctx, recipes.CreateOp("/ro-multi", []byte("m"), 0))
	require.NoError(t, err)
	m, err := mutex.New(c, "/lock")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	_, err = lease.Fenced(ctx, recipes.CreateOp("/ro-fenced", []byte("f"), 0))
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))

	for _, p := range []string{"/ns/ro-multi", "/ns/ro-fenced"} {
		acl, _, err := admin.UnsafeConn().GetACL(p)
		require.NoError(t, err, p)
		assert.Equal(t, readOnly, acl, p)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, asked, "/ns/ro-multi", "the provider is asked for the server path")
	assert.Contains(t, asked, "/ns/ro-fenced")
}
