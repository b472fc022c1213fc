package queue_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// plainShards allocates producer-only Queues (Curator's DistributedQueue).
func plainShards(c *recipes.Client, p string) (*queue.Queue, error) { return queue.New(c, p) }

func newSharder(t *testing.T, c *recipes.Client, p, leader string, opts ...queue.Option) *queue.Sharder[*queue.Queue] {
	t.Helper()
	s, err := queue.NewSharder(c, p, leader, plainShards, opts...)
	require.NoError(t, err)
	require.NoError(t, s.Start(context.Background()))
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// fill puts n items into q.
func fill(t *testing.T, q *queue.Queue, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		require.NoError(t, q.Put(context.Background(), []byte(fmt.Sprintf("item-%d", i))))
	}
}

// The leader adds a shard at each check while one is at the threshold,
// up to the maximum (Curator's rule), and then only logs; Queue no longer
// gives the full shard, and gives it again once it is drained; a second
// sharder, not the leader, finds the shards the leader made, makes none
// itself, and leads when the first closes. The shards are Curator's
// queue-<uuid> under the path.
func TestSharderAddsShardsPastTheThreshold(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const p, leader, threshold = "/sharder/q", "/sharder/leader", 3
	opts := []queue.Option{queue.WithShardThreshold(threshold), queue.WithShardCheckInterval(50 * time.Millisecond), queue.WithMaxShards(3)}
	var logs testutil.LogBuffer
	a := newSharder(t, connect(t, zkc.Servers(), recipes.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))), p, leader, opts...)
	require.Equal(t, 1, a.ShardCount(), "Start makes the first shard")
	first := a.ShardPaths()[0]
	assert.Regexp(t, `^/sharder/q/queue-[0-9a-f-]{36}$`, first)
	eventually(t, 5*time.Second, "a leads", a.HasLeadership)
	b := newSharder(t, connect(t, zkc.Servers()), p, leader, opts...)
	assert.Equal(t, []string{first}, b.ShardPaths(), "b starts on a's shard")
	assert.False(t, b.HasLeadership())

	q, err := a.Queue()
	require.NoError(t, err)
	require.Equal(t, first, q.Path())
	fill(t, q, threshold)
	eventually(t, 10*time.Second, "the leader adds shards up to the maximum", func() bool { return a.ShardCount() == 3 })
	eventually(t, 10*time.Second, "b finds them", func() bool { return b.ShardCount() == 3 })
	assert.Equal(t, a.ShardPaths(), b.ShardPaths())
	eventually(t, 10*time.Second, "a check at the maximum", func() bool { return logs.Count("the most shards made") > 0 })
	obs := connect(t, zkc.Servers())
	kids, _, err := obs.Children(ctx, p)
	require.NoError(t, err)
	assert.Len(t, kids, 3, "no shard past the maximum")
	for i := 0; i < 100; i++ { // the full shard left the preferred ones when the second was added
		q, err := a.Queue()
		require.NoError(t, err)
		require.NotEqual(t, first, q.Path(), "Queue gave the full shard")
	}

	var got collector
	drain, err := queue.New(obs, first, queue.WithConsumer(&got))
	require.NoError(t, err)
	require.NoError(t, drain.Start(ctx))
	defer closeQ(t, drain.Close)
	got.wait(t, threshold)
	eventually(t, 10*time.Second, "the drained shard preferred again", func() bool {
		for i := 0; i < 100; i++ { // one of three preferred shards at random
			if q, err := a.Queue(); err == nil && q.Path() == first {
				return true
			}
		}
		return false
	})

	require.NoError(t, a.Close(ctx))
	eventually(t, 10*time.Second, "b leads after a closed", b.HasLeadership)
	assert.Equal(t, 3, b.ShardCount())
	for _, k := range kids {
		assert.True(t, strings.HasPrefix(k, queue.ShardPrefix))
	}
}

// A sharder whose shards have consumers consumes what is put through
// any of them; Close stops it all and leaves the shards and no goroutine.
func TestSharderConsumes(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	var got collector
	alloc := func(c *recipes.Client, p string) (*queue.Queue, error) {
		return queue.New(c, p, queue.WithConsumer(&got))
	}
	c := connect(t, zkc.Servers())
	s, err := queue.NewSharder(c, "/sharder/c", "/sharder/c-leader", alloc,
		queue.WithShardThreshold(2), queue.WithShardCheckInterval(50*time.Millisecond))
	require.NoError(t, err)
	require.NoError(t, s.Start(ctx))
	q, err := s.Queue()
	require.NoError(t, err)
	fill(t, q, 4)
	items := got.wait(t, 4)
	slices.Sort(items)
	assert.Equal(t, []string{"item-0", "item-1", "item-2", "item-3"}, items)
	require.NoError(t, s.Close(ctx))
	_, err = s.Queue()
	assert.ErrorIs(t, err, recipes.ErrClosed)
	kids, _, err := c.Children(ctx, "/sharder/c")
	require.NoError(t, err)
	assert.NotEmpty(t, kids, "the shards stay")
}

// Bad input and misuse: errors matching the sentinels, nothing panics.
func TestSharderMisuse(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	for _, tc := range []struct {
		name, p, leader string
		alloc           queue.Allocator[*queue.Queue]
		opts            []queue.Option
		want            error
	}{
		{"relative path", "q", "/l", plainShards, nil, recipes.ErrInvalidPath},
		{"leader is the path", "/q", "/q", plainShards, nil, recipes.ErrInvalidPath},
		{"leader under the path", "/q", "/q/l", plainShards, nil, recipes.ErrInvalidPath},
		{"bad leader path", "/q", "/l/", plainShards, nil, recipes.ErrInvalidPath},
		{"nil allocator", "/q", "/l", nil, nil, recipes.ErrInvalidArgument},
		{"threshold 0", "/q", "/l", plainShards, []queue.Option{queue.WithShardThreshold(0)}, recipes.ErrInvalidArgument},
		{"interval 0", "/q", "/l", plainShards, []queue.Option{queue.WithShardCheckInterval(0)}, recipes.ErrInvalidArgument},
		{"max shards 0", "/q", "/l", plainShards, []queue.Option{queue.WithMaxShards(0)}, recipes.ErrInvalidArgument},
		{"empty id", "/q", "/l", plainShards, []queue.Option{queue.WithSharderID("")}, recipes.ErrInvalidArgument},
		{"nil option", "/q", "/l", plainShards, []queue.Option{nil}, recipes.ErrInvalidArgument},
		{"a queue's option", "/q", "/l", plainShards, []queue.Option{queue.WithMaxItems(3)}, recipes.ErrInvalidArgument},
	} {
		_, err := queue.NewSharder(c, tc.p, tc.leader, tc.alloc, tc.opts...)
		assert.ErrorIs(t, err, tc.want, tc.name)
	}
	_, err := queue.NewSharder(nil, "/q", "/l", plainShards)
	assert.ErrorIs(t, err, recipes.ErrNilClient)

	s, err := queue.NewSharder(c, "/sharder/m", "/sharder/m-leader", plainShards)
	require.NoError(t, err)
	_, err = s.Queue()
	assert.ErrorIs(t, err, recipes.ErrNotStarted)
	var nilCtx context.Context
	assert.ErrorIs(t, s.Start(nilCtx), recipes.ErrInvalidArgument)
	require.NoError(t, s.Start(ctx))
	assert.ErrorIs(t, s.Start(ctx), recipes.ErrAlreadyStarted)
	require.NoError(t, s.Close(ctx))
	require.NoError(t, s.Close(ctx), "Close twice")
	assert.ErrorIs(t, s.Start(ctx), recipes.ErrClosed)

	var zero queue.Sharder[*queue.Queue]
	assert.ErrorIs(t, zero.Start(ctx), recipes.ErrInvalidArgument)
	assert.ErrorIs(t, zero.Close(ctx), recipes.ErrInvalidArgument)
	_, err = zero.Queue()
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	assert.Zero(t, zero.ShardCount())
	assert.False(t, zero.HasLeadership())
	var nilS *queue.Sharder[*queue.Queue]
	assert.ErrorIs(t, nilS.Start(ctx), recipes.ErrInvalidArgument)
	assert.Nil(t, nilS.ShardPaths())
}
