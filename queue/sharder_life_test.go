package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// countedShard is a producer-only Queue that counts its Starts and
// Closes, and tells started once it has started.
type countedShard struct {
	*queue.Queue
	started, closed *atomic.Int32
	tell            chan<- struct{}
}

func (s countedShard) Start(ctx context.Context) error {
	err := s.Queue.Start(ctx)
	if err == nil {
		s.started.Add(1)
		signal(s.tell)
	}
	return err
}

// signal sends on ch without waiting, when ch is not nil.
func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (s countedShard) Close(ctx context.Context) error {
	s.closed.Add(1)
	return s.Queue.Close(ctx)
}

// A failed Start leaves no shard's queue open and may be tried again; a
// Close that comes during Start (before it, as the first shard's queue
// is made, or once it has started) leaves no shard's queue open either,
// whichever of the two finishes first, and no goroutine (TestMain
// checks).
func TestSharderStartAndClose(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	var (
		started, closed atomic.Int32
		allocated       chan struct{} // told as a shard's queue is made
		shardStarted    chan struct{} // told once it has started
	)
	alloc := func(c *recipes.Client, p string) (countedShard, error) {
		signal(allocated)
		q, err := queue.New(c, p)
		return countedShard{q, &started, &closed, shardStarted}, err
	}
	ctx := context.Background()
	s, err := queue.NewSharder(c, "/sharder/life", "/sharder/life-leader", alloc)
	require.NoError(t, err)
	ended, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, s.Start(ended), context.Canceled)
	assert.Equal(t, started.Load(), closed.Load(), "a failed Start closes what it started")
	require.NoError(t, s.Start(ctx), "Start again after a failed one")
	assert.Equal(t, 1, s.ShardCount())
	require.NoError(t, s.Close(ctx))
	assert.Equal(t, started.Load(), closed.Load())

	for i := range 9 {
		allocated, shardStarted = make(chan struct{}, 1), make(chan struct{}, 1)
		s, err := queue.NewSharder(c, fmt.Sprintf("/sharder/life%d", i), "/sharder/life-leader", alloc)
		require.NoError(t, err)
		errc := make(chan error, 1)
		go func() { errc <- s.Start(ctx) }()
		switch i % 3 {
		case 1:
			<-allocated
		case 2:
			<-shardStarted
		}
		require.NoError(t, s.Close(ctx))
		if err := <-errc; err != nil && !errors.Is(err, recipes.ErrClosed) {
			t.Fatalf("round %d: Start with a Close meanwhile = %v", i, err)
		}
		assert.Equal(t, started.Load(), closed.Load(), "round %d: a shard's queue left open", i)
	}
}
