package semaphore_test

// Interop tests of V1 with real Apache Curator InterProcessSemaphore
// processes (Curator 5.4 from Debian, or 5.7 under scripts/zk39-env.sh),
// against the same ZooKeeper server.

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// TestCuratorInteropV1 runs V1 against Curator's InterProcessSemaphore:
// one semaphore whose maximum both sides respect together, waits either
// way, one order of the queue, and one shared count for the maximum.
func TestCuratorInteropV1(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	dir := t.TempDir()
	t.Run("Maximum", func(t *testing.T) { interopSemaphoreMaximum(t, zkc, dir, semV1) })
	t.Run("Waits", func(t *testing.T) { interopSemaphoreWaits(t, zkc, dir, semV1) })
	t.Run("Order", func(t *testing.T) { interopV1Order(t, zkc, dir) })
	t.Run("SharedCount", func(t *testing.T) { interopV1SharedCount(t, zkc, dir) })
}

// interopV1Order: Go and Curator hold the two leases at once, and with a
// Go waiter queued behind them the three nodes are listed in the same
// order by Go's Participants and by Curator's getParticipantNodes
// (LockInternals' sort, which InterProcessMutex and InterProcessSemaphore
// share); Go's Holds marks the first two. The waiter watches the node two
// places ahead, Go's lease, and acquires when that one is released.
func interopV1Order(t *testing.T, zkc *zktest.Cluster, dir string) {
	const maxLeases = 2
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := "/interop/semaphore-v1-order-" + uuid.NewString()[:8]
	c := ioConnect(t, zkc)
	s := newV1(t, c, path, maxLeases)
	mine, err := s.Acquire(ctx)
	require.NoError(t, err)
	theirs := testutil.Curator(t, ctx, dir, "semholder-v1", zkc.ConnectString(), path, strconv.Itoa(maxLeases), "1")
	require.NoError(t, theirs.WaitLine(ctx, "ACQUIRED"))
	waiting := make(chan error, 1)
	go func() {
		l, err := s.Acquire(ctx)
		if err == nil {
			err = l.Release(ctx)
		}
		waiting <- err
	}()
	ioWaitLeases(ctx, t, semV1, c, path, 3, nil, "")

	lister := testutil.Curator(t, ctx, dir, "participants", zkc.ConnectString(), path)
	want := ioOutput(t, lister)
	ps, err := s.Participants(ctx)
	require.NoError(t, err)
	var got []string
	for _, p := range ps {
		got = append(got, p.Node)
	}
	require.Equal(t, want, got, "Go and Curator order the queue alike")
	require.Equal(t, []bool{true, true, false}, []bool{ps[0].Holds, ps[1].Holds, ps[2].Holds})
	require.Equal(t, mine.Node(), ps[0].Node)
	require.False(t, isDone(mine), "Go's lease, held while Curator's is")
	require.NoError(t, mine.Release(ctx))
	select {
	case err := <-waiting:
		require.NoError(t, err, "the Go waiter, after the lease it watches went")
	case <-ctx.Done():
		t.Fatal("the Go waiter did not acquire when the lease it watches went")
	}
	require.NoError(t, theirs.Send("release"))
	require.NoError(t, theirs.Wait())
	require.Equal(t, 0, v1Nodes(t, c, path))
}

// interopV1SharedCount: Go and Curator follow one shared count as the
// maximum. At 1, Curator holds and Go waits; Go raises it to 2 and holds
// too; a Curator waiter then waits until Go raises it to 3, and is woken
// by its own SharedCount's listener.
func interopV1SharedCount(t *testing.T, zkc *zktest.Cluster, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := uuid.NewString()[:8]
	path, countPath := "/interop/semaphore-v1-count-"+id, "/interop/semaphore-v1-max-"+id
	c := ioConnect(t, zkc)
	count := startCount(t, c, countPath, 1)
	s, err := semaphore.NewV1WithCount(c, path, count)
	require.NoError(t, err)

	first := testutil.Curator(t, ctx, dir, "semholder-v1-count", zkc.ConnectString(), path, countPath, "1")
	require.NoError(t, first.WaitLine(ctx, "ACQUIRED"))
	_, err = s.TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrNotAcquired, "Curator holds the one lease")
	got := make(chan *semaphore.Lease, 1)
	go func() {
		l, err := s.Acquire(ctx)
		if err != nil {
			t.Errorf("Go's Acquire: %v", err)
		}
		got <- l
	}()
	ioWaitLeases(ctx, t, semV1, c, path, 2, nil, "")
	require.NoError(t, count.Set(ctx, 2))
	var mine *semaphore.Lease
	select {
	case mine = <-got:
	case <-ctx.Done():
		t.Fatal("Go did not acquire when the count grew")
	}
	require.NotNil(t, mine)

	second := testutil.Curator(t, ctx, dir, "semholder-v1-count", zkc.ConnectString(), path, countPath, "1")
	ioWaitLeases(ctx, t, semV1, c, path, 3, second, "ACQUIRED")
	require.NoError(t, count.Set(ctx, 3))
	require.NoError(t, second.WaitLine(ctx, "ACQUIRED"), "Curator's waiter, when the count grew")
	for _, p := range []interface{ Send(string) error }{first, second} {
		require.NoError(t, p.Send("release"))
	}
	require.NoError(t, errors.Join(first.Wait(), second.Wait()))
	require.NoError(t, mine.Release(ctx))
	require.Equal(t, 0, v1Nodes(t, c, path))
	for _, l := range first.Lines() {
		if n, ok := strings.CutPrefix(l, "LEASE "); ok {
			require.Regexp(t, `^_c_[0-9a-f-]{36}-lock-\d{10}$`, filepath.Base(strings.TrimSpace(n)))
		}
	}
}
