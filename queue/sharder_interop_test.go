package queue_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// TestCuratorInteropSharder: a Go Sharder and Curator's QueueSharder on
// the same paths see the same shards and elect one leader. Curator starts
// on the shard Go made; items Curator puts fill it and the Go leader adds a
// shard, which Curator finds; when the Go sharder closes Curator leads,
// and adds a shard when Go fills the second; a new Go sharder finds all
// three, the one Curator made named queue-<uuid> as ours are.
func TestCuratorInteropSharder(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	const p, leader, threshold = "/interop/sharder/q", "/interop/sharder/leader", "3"
	opts := []queue.SharderOption{queue.WithShardThreshold(3), queue.WithShardCheckInterval(50 * time.Millisecond), queue.WithMaxShards(3)}
	c := connect(t, zkc.Servers())
	a, err := queue.NewSharder(c, p, leader, plainShards, opts...)
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	defer func() { _ = a.Close(ctx) }()
	eventually(t, 10*time.Second, "Go leads", a.HasLeadership)
	shards := func(paths []string) string { return "SHARDS " + strings.Join(paths, " ") }

	j := testutil.Curator(t, ctx, dir, "sharder", zkc.ConnectString(), p, leader, threshold, "100", "3")
	require.NoError(t, j.WaitLine(ctx, shards(a.ShardPaths())), "Curator starts on Go's shard")
	require.NoError(t, j.WaitLine(ctx, "READY")) // printed after the first SHARDS
	require.NoError(t, j.Send("PUT 3"))
	require.NoError(t, j.WaitLine(ctx, "PUT 3"))
	eventually(t, 10*time.Second, "the Go leader adds a shard", func() bool { return a.ShardCount() == 2 })
	two := a.ShardPaths()
	require.NoError(t, j.WaitLine(ctx, shards(two)), "Curator finds the shard Go made")

	// The Go sharder goes; Curator leads and adds a shard when the second
	// one is full.
	first := two[0]
	require.NoError(t, a.Close(ctx))
	second := two[1]
	if childCount(ctx, t, c, first) < 3 {
		first, second = second, first // the full one is the first
	}
	q, err := queue.New(c, second)
	require.NoError(t, err)
	fill(t, q, 3)
	b, err := queue.NewSharder(c, p, leader, plainShards, opts...)
	require.NoError(t, err)
	eventually(t, 20*time.Second, "Curator, leading, adds a shard", func() bool {
		kids, _, err := c.Children(ctx, p)
		return err == nil && len(kids) == 3
	})
	require.NoError(t, b.Start(ctx))
	defer func() { _ = b.Close(ctx) }()
	three := b.ShardPaths()
	require.Len(t, three, 3, "the new Go sharder finds every shard")
	require.NoError(t, j.WaitLine(ctx, shards(three)), "Curator knows the same three")
	shardName := regexp.MustCompile(`^/interop/sharder/q/queue-[0-9a-f-]{36}$`)
	for _, sp := range three {
		require.Regexp(t, shardName, sp)
	}
	require.False(t, b.HasLeadership(), "Curator leads; the Go sharder joined behind it")
	require.NoError(t, j.Send("close"))
	require.NoError(t, j.WaitLine(ctx, "CLOSED"))
	require.NoError(t, j.Wait())
	eventually(t, 10*time.Second, "Go leads once Curator is gone", b.HasLeadership)
}

// childCount returns the number of children of the node at p.
func childCount(ctx context.Context, t *testing.T, c *recipes.Client, p string) int {
	t.Helper()
	kids, _, err := c.Children(ctx, p)
	require.NoError(t, err)
	return len(kids)
}
