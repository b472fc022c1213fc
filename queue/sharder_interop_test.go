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
)

// TestCuratorInteropSharder: a Go Sharder and Curator's QueueSharder on
// the same paths see the same shards and elect one leader. Curator starts
// on the shard Go made; items Curator puts fill it, and the Go leader adds
// a shard at each check while it stays full, up to its maximum of 3, which
// Curator finds. When the Go sharder closes Curator leads and, its own
// maximum being 4, adds a fourth; a new Go sharder finds all four, the one
// Curator made named queue-<uuid> as ours are.
func TestCuratorInteropSharder(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	const p, leader = "/interop/sharder/q", "/interop/sharder/leader"
	opts := []queue.Option{queue.WithShardThreshold(3), queue.WithShardCheckInterval(50 * time.Millisecond), queue.WithMaxShards(3)}
	c := connect(t, zkc.Servers())
	a, err := queue.NewSharder(c, p, leader, plainShards, opts...)
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	defer func() { _ = a.Close(ctx) }()
	eventually(t, 10*time.Second, "Go leads", a.HasLeadership)
	shards := func(paths []string) string { return "SHARDS " + strings.Join(paths, " ") }

	j := testutil.Curator(t, ctx, dir, "sharder", zkc.ConnectString(), p, leader, "3", "100", "4")
	require.NoError(t, j.WaitLine(ctx, shards(a.ShardPaths())), "Curator starts on Go's shard")
	require.NoError(t, j.WaitLine(ctx, "READY")) // printed after the first SHARDS
	require.NoError(t, j.Send("PUT 3"))
	require.NoError(t, j.WaitLine(ctx, "PUT 3"))
	eventually(t, 10*time.Second, "the Go leader adds shards up to its maximum", func() bool { return a.ShardCount() == 3 })
	require.NoError(t, j.WaitLine(ctx, shards(a.ShardPaths())), "Curator finds the shards Go made")

	// The Go sharder goes; Curator leads and, the first shard being still
	// full, adds a fourth.
	require.NoError(t, a.Close(ctx))
	eventually(t, 20*time.Second, "Curator, leading, adds a shard", func() bool {
		kids, _, err := c.Children(ctx, p)
		return err == nil && len(kids) == 4
	})
	b, err := queue.NewSharder(c, p, leader, plainShards, opts...)
	require.NoError(t, err)
	require.NoError(t, b.Start(ctx))
	defer func() { _ = b.Close(ctx) }()
	four := b.ShardPaths()
	require.Len(t, four, 4, "the new Go sharder finds every shard")
	require.NoError(t, j.WaitLine(ctx, shards(four)), "Curator knows the same four")
	shardName := regexp.MustCompile(`^/interop/sharder/q/queue-[0-9a-f-]{36}$`)
	for _, sp := range four {
		require.Regexp(t, shardName, sp)
	}
	require.False(t, b.HasLeadership(), "Curator leads; the Go sharder joined behind it")
	require.NoError(t, j.Send("close"))
	require.NoError(t, j.WaitLine(ctx, "CLOSED"))
	require.NoError(t, j.Wait())
	eventually(t, 10*time.Second, "Go leads once Curator is gone", b.HasLeadership)
}
