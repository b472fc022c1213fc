package recipes_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// The Client's node operations fail with errors package recipes names: a
// caller matches them without importing go-zookeeper.
func TestNodeErrorsNamedByRecipes(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := testutil.Connect(t, zkc.Servers(), recipes.WithNamespace(testutil.Namespace(t)))
	_, _, err := c.Get(ctx, "/missing")
	assert.ErrorIs(t, err, recipes.ErrNoNode)
	_, err = c.CreateWithParents(ctx, "/a/b", nil, 0)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/a/b", nil, 0)
	assert.ErrorIs(t, err, recipes.ErrNodeExists)
	_, err = c.Set(ctx, "/a/b", []byte("x"), 7)
	assert.ErrorIs(t, err, recipes.ErrBadVersion)
	assert.ErrorIs(t, c.Delete(ctx, "/a", -1), recipes.ErrNotEmpty)
	_, err = c.Multi(ctx, recipes.DeleteOp("/missing", -1))
	assert.ErrorIs(t, err, recipes.ErrNoNode)
}

// Parents made on the way hold empty data, not null, as Curator's
// creatingParentContainersIfNeeded makes them (read with go-zookeeper's
// own client, which tells the two apart: null is nil).
func TestParentsHoldEmptyData(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := testutil.Namespace(t)
	c := testutil.Connect(t, zkc.Servers(), recipes.WithNamespace(ns))
	_, err := c.CreateWithParents(ctx, "/a/b/c", []byte("x"), 0)
	require.NoError(t, err)
	raw, _, err := zk.Connect(zkc.Servers(), 10*time.Second, testutil.ZKTLS(zkc.Servers()), zk.WithLogInfo(false))
	require.NoError(t, err)
	defer raw.Close()
	for _, p := range []string{"/" + ns, "/" + ns + "/a", "/" + ns + "/a/b"} {
		data, _, err := raw.Get(p)
		require.NoError(t, err, p)
		assert.NotNil(t, data, "%s holds empty data, not null", p)
		assert.Empty(t, data, p)
	}
}
