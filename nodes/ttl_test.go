package nodes_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// The child is touched while the node runs (every ttl/2), made again when
// deleted, and keeps the parent; after Close nothing is deleted by us, and
// the server reaps the child and then the parent.
func TestPersistentTtlNodeTouchedThenReaped(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	a := connect(t, zkc.Servers())
	b := connect(t, zkc.Servers())
	const ttl = time.Second
	n, err := nodes.NewPersistentTTLNode(a, "/ttln/a", ttl, []byte("payload"))
	require.NoError(t, err)
	require.NoError(t, n.Start(ctx))
	defer n.Close(ctx)
	require.NoError(t, n.WaitReady(ctx))
	eventually(t, 5*time.Second, "touched at once", func() bool { return !n.LastTouch().IsZero() })
	s, err := nodes.ReadTTLNode(ctx, b, "/ttln/a")
	require.NoError(t, err)
	assert.True(t, s.Exists)
	assert.True(t, s.Touched)
	assert.Equal(t, "payload", string(s.Data))

	// Touched again and again: the child's mtime moves, and it outlives
	// several TTLs.
	first := s.LastTouch
	eventually(t, 5*time.Second, "touched again", func() bool {
		s, err := nodes.ReadTTLNode(ctx, b, "/ttln/a")
		return err == nil && s.LastTouch.After(first)
	})
	require.NoError(t, b.Delete(ctx, "/ttln/a/touch", -1))
	eventually(t, 5*time.Second, "the child made again", func() bool {
		s, err := nodes.ReadTTLNode(ctx, b, "/ttln/a")
		return err == nil && s.Touched
	})
	require.NoError(t, n.SetData(ctx, []byte("v2")))
	d, _, err := b.Get(ctx, "/ttln/a")
	require.NoError(t, err)
	assert.Equal(t, "v2", string(d))

	require.NoError(t, n.Close(ctx))
	s, err = nodes.ReadTTLNode(ctx, b, "/ttln/a")
	require.NoError(t, err)
	assert.True(t, s.Exists && s.Touched, "Close deletes nothing")
	eventually(t, 15*time.Second, "the server reaps the child, then the parent", func() bool {
		s, err := nodes.ReadTTLNode(ctx, b, "/ttln/a")
		return err == nil && !s.Exists
	})
}

// A parent made as a CONTAINER (Curator 5.4 to 5.8) is adopted: our data
// is written, the child touched, and it is read as a TTL node.
func TestPersistentTtlNodeAdoptsContainerParent(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	a := connect(t, zkc.Servers())
	b := connect(t, zkc.Servers())
	dir := "/" + testutil.Namespace(t)
	_, err := b.CreateWithParents(ctx, dir, nil, 0)
	require.NoError(t, err)
	path := dir + "/old"
	_, err = engineCreateContainer(ctx, b, path, []byte("curator"))
	require.NoError(t, err)
	n, err := nodes.NewPersistentTTLNode(a, path, time.Minute, []byte("ours"))
	require.NoError(t, err)
	require.NoError(t, n.Start(ctx))
	defer n.Close(ctx)
	require.NoError(t, n.WaitReady(ctx))
	eventually(t, 5*time.Second, "adopted and touched", func() bool {
		s, err := nodes.ReadTTLNode(ctx, b, path)
		return err == nil && s.Touched && string(s.Data) == "ours"
	})
}

func TestPersistentTtlNodeArguments(t *testing.T) {
	zkc := testutil.SharedServer(t)
	a := connect(t, zkc.Servers())
	_, err := nodes.NewPersistentTTLNode(a, "/x", 0, nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = nodes.NewPersistentTTLNode(a, "/x", time.Second, nil, nodes.WithTouchNode("a/b"))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = nodes.NewPersistentTTLNode(a, "/x", time.Second, nil, nodes.WithTouchFactor(1))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	// One Option type: each constructor refuses the others' options.
	_, err = nodes.NewPersistentTTLNode(a, "/x", time.Second, nil, nodes.WithTTL(time.Second))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = nodes.NewPersistentTTLNode(a, "/x", time.Second, nil, nodes.WithProtection())
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = nodes.NewPersistentNode(a, "/x", nodes.Persistent, nil, nodes.WithTouchFactor(3))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = nodes.NewPersistentNode(a, "/x", nodes.Persistent, nil, nodes.WithTouchNode("t"))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
}

// engineCreateContainer makes a container node with data, as Curator 5.4
// to 5.8 make a PersistentTTLNode's parent.
func engineCreateContainer(_ context.Context, c *recipes.Client, path string, data []byte) (string, error) {
	return c.UnsafeConn().CreateContainer(path, data, zk.FlagContainer, zk.WorldACL(zk.PermAll))
}
