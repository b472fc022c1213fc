package engine_test

import (
	"context"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// MultiRead reads data, stats and children of several nodes in one
// request, with a missing node's error in its place, as one getData and
// getChildren each would.
func TestMultiRead(t *testing.T) {
	ctx := context.Background()
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	e := (*engine.Client)(c)
	for _, p := range []string{"/m", "/m/a", "/m/b"} {
		_, err := c.Create(ctx, p, []byte("v"+p), 0)
		require.NoError(t, err)
	}
	_, err := c.Set(ctx, "/m/a", []byte("changed"), -1)
	require.NoError(t, err)
	before := e.Stats()
	res, err, ok := e.MultiRead(ctx, []engine.ReadOp{
		{Path: "/m"}, {Path: "/m/a"}, {Path: "/m/missing"}, {Path: "/m", Children: true}, {Path: "/m/b", Children: true}, {Path: "/gone", Children: true},
	})
	require.True(t, ok, "sent through the Wire")
	require.NoError(t, err)
	require.Len(t, res, 6)
	for i, p := range []string{"/m", "/m/a"} {
		data, st, err := e.Get(ctx, p)
		require.NoError(t, err)
		require.NoError(t, res[i].Err)
		require.Equal(t, data, res[i].Data, p)
		require.Equal(t, *st, res[i].Stat, p)
	}
	require.ErrorIs(t, res[2].Err, zk.ErrNoNode)
	require.NoError(t, res[3].Err)
	slices.Sort(res[3].Children)
	require.Equal(t, []string{"a", "b"}, res[3].Children)
	require.NoError(t, res[4].Err)
	require.Empty(t, res[4].Children)
	require.ErrorIs(t, res[5].Err, zk.ErrNoNode)
	require.Equal(t, uint64(1), e.Stats().Sub(before).MultiReads, "one request")
}
