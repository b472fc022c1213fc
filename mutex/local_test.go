package mutex_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// 64 goroutines sharing one Client and one Mutex with local hand-off:
// mutual exclusion, strictly increasing fence tokens, and far fewer
// ZooKeeper requests than acquisitions.
func TestLocalHandoffExclusionAndTokens(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	m := newMutex(t, c, "/local/excl", mutex.WithLocalHandoff(1000))
	ctx := context.Background()
	const goroutines, iters = 64, 20
	var (
		inside atomic.Int32
		worst  atomic.Int32
		mu     sync.Mutex
		tokens []recipes.FenceToken
		wg     sync.WaitGroup
	)
	before := (*engine.Client)(c).Stats()
	start := time.Now()
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < iters; i++ {
				l, err := m.Acquire(ctx)
				if !assert.NoError(t, err) {
					return
				}
				if n := inside.Add(1); n > worst.Load() {
					worst.Store(n)
				}
				tok, err := l.Token(ctx)
				assert.NoError(t, err)
				mu.Lock()
				tokens = append(tokens, tok)
				mu.Unlock()
				inside.Add(-1)
				assert.NoError(t, l.Release(ctx))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	d := (*engine.Client)(c).Stats().Sub(before)
	assert.Equal(t, int32(1), worst.Load(), "one holder at a time")
	require.Len(t, tokens, goroutines*iters)
	for i := 1; i < len(tokens); i++ {
		assert.Equal(t, 1, tokens[i].Compare(tokens[i-1]), "token %d: %v after %v", i, tokens[i], tokens[i-1])
	}
	acq := float64(goroutines * iters)
	t.Logf("%d acquisitions in %v (%.0f/s): %.3f creates, %.3f children, %.3f exists (FenceToken) per acquisition",
		goroutines*iters, elapsed.Round(time.Millisecond), acq/elapsed.Seconds(),
		float64(d.Creates)/acq, float64(d.Children)/acq, float64(d.Exists)/acq)
	assert.Less(t, float64(d.Creates), acq/10, "most hand-offs stay in memory")
	assert.Empty(t, children(t, c, "/local/excl"))
}

// A waiter in another process (here: another Client, without the option)
// gets the lock after at most bound local hand-offs, however many local
// goroutines keep asking.
func TestLocalHandoffBoundServesRemoteWaiters(t *testing.T) {
	zkc := zktest.Start(t)
	const path, bound = "/local/bound", 5
	c := connect(t, zkc.Servers())
	m := newMutex(t, c, path, mutex.WithLocalHandoff(bound))
	rc := connect(t, zkc.Servers())
	remote := newMutex(t, rc, path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var (
		localAcq atomic.Int64
		wg       sync.WaitGroup
	)
	for g := 0; g < 8; g++ { // local goroutines that never stop asking
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				l, err := m.Acquire(ctx)
				if err != nil {
					return
				}
				localAcq.Add(1)
				time.Sleep(2 * time.Millisecond) // hold: the work under the lock
				_ = l.Release(context.Background())
			}
		}()
	}
	eventually(t, 10*time.Second, "local traffic", func() bool { return localAcq.Load() > 50 })
	for round := 0; round < 5; round++ {
		got := make(chan int64, 1)
		// Counted from before the remote's Lock: while its create is on the
		// way, the process may still start one more node ahead of it, so
		// the remote waits for at most two runs of the bound (plus the
		// holders of the moment), never for the local traffic as a whole.
		queuedAt := localAcq.Load()
		go func() {
			l, err := remote.Acquire(ctx)
			if !assert.NoError(t, err) {
				got <- -1
				return
			}
			at := localAcq.Load()
			// Released before the round ends: after the last round the
			// test closes the Client, and a Release still on its way
			// would fail with "hold lost with the session".
			assert.NoError(t, l.Release(context.Background()))
			got <- at
		}()
		select {
		case at := <-got:
			require.GreaterOrEqual(t, at, int64(0))
			assert.LessOrEqual(t, at-queuedAt, int64(2*(bound+1)), "round %d: local acquisitions while the remote waited", round)
			t.Logf("round %d: remote served after %d local acquisitions (bound %d)", round, at-queuedAt, bound)
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the remote waiter was starved", round)
		}
	}
	cancel()
	wg.Wait()
}

// A holder whose process lost the lock cannot write through Fenced, nor can
// a local holder after it passed the lock on; a local waiter whose ctx ends
// leaves nothing behind; TryLock while the process holds fails at once.
func TestLocalHandoffFencingAndCancel(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	ctx := context.Background()
	const path = "/local/fence"
	a := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second))
	b := connect(t, zkc.Servers())
	am := newMutex(t, a, path, mutex.WithLocalHandoff(10))
	bm := newMutex(t, b, path)
	_, err := b.Create(ctx, "/local-target", []byte("0"), 0)
	require.NoError(t, err)

	first, err := am.Acquire(mutex.WithOwner(ctx, "first"))
	require.NoError(t, err)
	_, err = am.TryAcquire(mutex.WithOwner(ctx, "try"))
	assert.ErrorIs(t, err, recipes.ErrNotAcquired, "held in this process")

	// A local waiter gives up: nothing is left of it.
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = am.Acquire(mutex.WithOwner(tctx, "impatient"))
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	got := make(chan *mutex.Lease, 1)
	go func() {
		l, err := am.Acquire(mutex.WithOwner(ctx, "second"))
		assert.NoError(t, err)
		got <- l
	}()
	ftok, err := first.Token(ctx)
	require.NoError(t, err)
	require.NoError(t, first.Release(ctx))
	second := <-got
	stok, err := second.Token(ctx)
	require.NoError(t, err)
	assert.Equal(t, ftok.Czxid, stok.Czxid, "the same node")
	assert.Equal(t, 1, stok.Compare(ftok))
	_, err = first.Fenced(ctx, recipes.SetOp("/local-target", []byte("stale"), -1))
	assert.ErrorIs(t, err, recipes.ErrFenced, "a released lease is fenced even though its node lives on")
	_, err = second.Fenced(ctx, recipes.SetOp("/local-target", []byte("1"), -1))
	require.NoError(t, err)
	assert.Len(t, children(t, b, path), 1, "one node for the process")

	// The process loses its session: the other process takes the lock and
	// the local holder's writes are refused.
	bGot := make(chan error, 1)
	go func() {
		_, err := bm.Acquire(mutex.WithOwner(ctx, "b"))
		bGot <- err
	}()
	waitQueued(t, bm, 2)
	proxy.Blackhole()
	require.NoError(t, <-bGot)
	proxy.Restore()
	require.NoError(t, a.WaitConnected(ctx))
	_, err = second.Fenced(ctx, recipes.SetOp("/local-target", []byte("lost"), -1))
	assert.ErrorIs(t, err, recipes.ErrFenced)
	assert.ErrorIs(t, second.Release(ctx), recipes.ErrLockLost)
	require.NoError(t, bm.Release(mutex.WithOwner(ctx, "b")))
	l, err := am.Acquire(mutex.WithOwner(ctx, "again"))
	require.NoError(t, err, "usable again")
	require.NoError(t, l.Release(ctx))
	eventually(t, 5*time.Second, "no node left", func() bool { return len(children(t, b, path)) == 0 })
}

// Holding many locks costs memory only: no goroutine per held lock, and a
// few KiB of heap at most.
func TestHeldLocksCostNoGoroutines(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	const n = 2000
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	ms := make([]*mutex.Mutex, n)
	ls := make([]*mutex.Lease, n)
	for i := range ms {
		ms[i] = newMutex(t, c, fmt.Sprintf("/held/key-%d", i))
		l, err := ms[i].Acquire(ctx)
		require.NoError(t, err)
		ls[i] = l
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	perLock := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	extra := runtime.NumGoroutine() - goroutines
	t.Logf("%d held locks: %.0f bytes of heap and %d goroutines in all (%.2f per lock)", n, perLock, extra, float64(extra)/n)
	assert.LessOrEqual(t, perLock, 4096.0, "heap per held lock")
	assert.LessOrEqual(t, extra, 2, "no goroutine per held lock")
	for i, l := range ls {
		require.NoError(t, l.Release(ctx), "lock %d", i)
	}
	runtime.KeepAlive(ms)
}
