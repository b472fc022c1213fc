package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/metric"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var (
	connect    = testutil.Connect
	eventually = testutil.Eventually
)

func newRW(t testing.TB, c *recipes.Client, path string) *rwlock.RWLock {
	t.Helper()
	rw, err := rwlock.New(c, path)
	require.NoError(t, err)
	return rw
}

// waitNodes waits until the lock has n nodes.
func waitNodes(t testing.TB, rw *rwlock.RWLock, n int) []recipes.Participant {
	t.Helper()
	var ps []recipes.Participant
	eventually(t, 10*time.Second, fmt.Sprintf("%d nodes", n), func() bool {
		var err error
		ps, err = rw.Participants(context.Background())
		return err == nil && len(ps) == n
	})
	return ps
}

// lockAsync runs lk.Lock for owner in a goroutine and reports on the
// returned channel.
func lockAsync(ctx context.Context, lk *mutex.Mutex, owner string) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := lk.Acquire(mutex.WithOwner(ctx, owner))
		ch <- err
	}()
	return ch
}

func notYet(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s: returned early (%v)", what, err)
	default:
	}
}

func within(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		require.NoError(t, err, what)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10s", what)
	}
}

// 20 readers hold at once; a writer waits for all of them and holds back
// the readers queued after it; writers exclude each other.
func TestReadersShareWritersExclude(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const path = "/rw/share"
	c := connect(t, zkc.Servers())
	rw := newRW(t, c, path)

	const readers = 20
	for i := 0; i < readers; i++ {
		_, err := rw.ReadLock().TryAcquire(mutex.WithOwner(ctx, fmt.Sprintf("r%d", i)))
		require.NoError(t, err, "reader %d holds beside the others", i)
	}
	w1 := lockAsync(ctx, rw.WriteLock(), "w1")
	waitNodes(t, rw, readers+1)
	late := lockAsync(ctx, rw.ReadLock(), "late")
	waitNodes(t, rw, readers+2) // queued in this order: late, then w2
	w2 := lockAsync(ctx, rw.WriteLock(), "w2")
	waitNodes(t, rw, readers+3)
	_, err := rw.ReadLock().TryAcquire(mutex.WithOwner(ctx, "try"))
	assert.ErrorIs(t, err, recipes.ErrNotAcquired, "a writer is queued: readers after it wait")

	for i := 0; i < readers; i++ {
		notYet(t, w1, "writer while readers hold")
		require.NoError(t, rw.ReadLock().Release(mutex.WithOwner(ctx, fmt.Sprintf("r%d", i))))
	}
	within(t, w1, "writer after the last reader")
	notYet(t, late, "reader queued behind a writer")
	notYet(t, w2, "second writer")
	require.NoError(t, rw.WriteLock().Release(mutex.WithOwner(ctx, "w1")))
	within(t, late, "reader after the first writer")
	notYet(t, w2, "second writer while a reader holds")
	require.NoError(t, rw.ReadLock().Release(mutex.WithOwner(ctx, "late")))
	within(t, w2, "second writer")
	require.NoError(t, rw.WriteLock().Release(mutex.WithOwner(ctx, "w2")))
	waitNodes(t, rw, 0)
}

// With readers arriving continuously, a queued writer still acquires: it
// waits only for the readers that were ahead of it.
func TestWriterNotStarved(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const path = "/rw/starve"
	const bound = 5 * time.Second // readers hold ~20ms each; the writer waits for a handful
	var wg sync.WaitGroup
	var reads atomic.Int64
	var writerIn atomic.Bool
	var overlap atomic.Int64
	for i := 0; i < 4; i++ {
		c := connect(t, zkc.Servers())
		rw := newRW(t, c, path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				l, err := rw.ReadLock().Acquire(ctx)
				if err != nil {
					return
				}
				if writerIn.Load() {
					overlap.Add(1)
				}
				reads.Add(1)
				timer := time.NewTimer(20 * time.Millisecond) // hold: the readers overlap
				select {
				case <-timer.C:
				case <-ctx.Done():
				}
				_ = l.Release(context.Background())
			}
		}()
	}
	eventually(t, 10*time.Second, "readers running", func() bool { return reads.Load() > 20 })
	wc := connect(t, zkc.Servers())
	wrw := newRW(t, wc, path)
	start := time.Now()
	wctx, wcancel := context.WithTimeout(ctx, bound)
	defer wcancel()
	l, err := wrw.WriteLock().Acquire(wctx)
	require.NoError(t, err, "the writer acquires within %v while readers keep coming", bound)
	writerIn.Store(true)
	waited := time.Since(start)
	before := reads.Load()
	time.Sleep(50 * time.Millisecond) // hold the write lock briefly: no reader may get in
	assert.Equal(t, before, reads.Load(), "no reader while the writer holds")
	writerIn.Store(false)
	require.NoError(t, l.Release(ctx))
	t.Logf("writer waited %v with readers arriving continuously (%d reads so far)", waited, before)
	cancel()
	wg.Wait()
	assert.Zero(t, overlap.Load())
}

// The write lock's owner takes the read lock (a downgrade) and releases
// the write lock: it reads on, and a writer queued behind the write lock
// waits until the downgraded reader releases. A reader asking for the
// write lock gets ErrUpgrade at once.
func TestDowngradeKeepsQueuedWriterOutAndUpgradeFails(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const path = "/rw/down"
	c := connect(t, zkc.Servers())
	other := connect(t, zkc.Servers())
	rw := newRW(t, c, path)
	orw := newRW(t, other, path)

	owner := mutex.WithOwner(ctx, "owner")
	wl, err := rw.WriteLock().Acquire(owner)
	require.NoError(t, err)
	queued := lockAsync(ctx, orw.WriteLock(), "queued")
	waitNodes(t, rw, 2)

	rl, err := rw.ReadLock().TryAcquire(owner)
	require.NoError(t, err, "the write lock's owner gets the read lock at once")
	ps := waitNodes(t, rw, 3)
	_, wname := zkpath.SplitPath(wl.Node())
	_, rname := zkpath.SplitPath(rl.Node())
	seq := contend.SortKey(wname, rwlock.WriteLockName)
	assert.Equal(t, rwlock.ReadLockName+seq, rname[len(zkpath.ProtectedPrefix)+37:], "the read node takes the write node's sequence")
	assert.True(t, ps[2].Writer, "the queued writer is last")

	require.NoError(t, wl.Release(ctx))
	assert.Equal(t, 1, rl.Count())
	select {
	case <-rl.Done():
		t.Fatal("the downgraded read lock must survive the write lock's release")
	default:
	}
	// Bounded observation: the queued writer must not get in while we read.
	select {
	case err := <-queued:
		t.Fatalf("queued writer acquired while the downgraded reader holds (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	_, err = rw.WriteLock().TryAcquire(owner)
	assert.ErrorIs(t, err, recipes.ErrUpgrade, "upgrade")
	_, err = rw.WriteLock().Acquire(owner)
	assert.ErrorIs(t, err, recipes.ErrUpgrade, "upgrade never waits")
	require.NoError(t, rl.Release(ctx))
	within(t, queued, "queued writer after the reader released")
	require.NoError(t, orw.WriteLock().Release(mutex.WithOwner(ctx, "queued")))
}

// Session loss of a reader and of a writer: Done closes, the others
// proceed once the server expires the session, and the stale holder's
// fenced writes are refused.
func TestSessionLossOfReaderAndWriter(t *testing.T) {
	for _, kind := range []string{"reader", "writer"} {
		t.Run(kind, func(t *testing.T) {
			zkc := zktest.Start(t)
			proxy := zktest.NewProxy(t, zkc.Servers()[0])
			ctx := context.Background()
			path := "/rw/loss-" + kind
			a := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second))
			b := connect(t, zkc.Servers())
			arw, brw := newRW(t, a, path), newRW(t, b, path)
			_, err := b.Create(ctx, "/fence-"+kind, []byte("0"), 0)
			require.NoError(t, err)

			lk := arw.ReadLock()
			if kind == "writer" {
				lk = arw.WriteLock()
			}
			lease, err := lk.Acquire(ctx)
			require.NoError(t, err)
			waiter := lockAsync(ctx, brw.WriteLock(), "b")
			waitNodes(t, brw, 2)

			states, stop := a.Subscribe()
			defer stop()
			proxy.Blackhole()
			select {
			case <-lease.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("Done did not close")
			}
			within(t, waiter, "the other side proceeds once the session expires")
			for s := range states {
				if s == recipes.StateLost {
					break
				}
			}
			proxy.Restore()
			require.NoError(t, a.WaitConnected(ctx))
			_, err = lease.Fenced(ctx, recipes.SetOp("/fence-"+kind, []byte("stale"), -1))
			assert.ErrorIs(t, err, recipes.ErrFenced)
			assert.ErrorIs(t, lease.Release(ctx), recipes.ErrLockLost)
			require.NoError(t, brw.WriteLock().Release(mutex.WithOwner(ctx, "b")))
		})
	}
}

// Herd: a writer's release wakes only the readers it held back (they all
// watch it) and, when a writer is next, only that writer; readers queued
// behind the next writer watch that writer and stay asleep.
func TestWriterReleaseWakesOnlyWhomItBlocked(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const path = "/rw/herd"
	hc := connect(t, zkc.Servers())
	hrw := newRW(t, hc, path)
	_, err := hrw.WriteLock().Acquire(mutex.WithOwner(ctx, "w0"))
	require.NoError(t, err)

	type party struct {
		c    *recipes.Client
		rw   *rwlock.RWLock
		done <-chan error
	}
	join := func(write bool, name string) *party {
		c := connect(t, zkc.Servers())
		p := &party{c: c, rw: newRW(t, c, path)}
		lk := p.rw.ReadLock()
		if write {
			lk = p.rw.WriteLock()
		}
		n, _ := hrw.Participants(ctx)
		p.done = lockAsync(ctx, lk, name)
		waitNodes(t, hrw, len(n)+1)
		return p
	}
	r1, r2 := join(false, "r1"), join(false, "r2")
	w1 := join(true, "w1")
	r3, r4 := join(false, "r3"), join(false, "r4")
	eventually(t, 10*time.Second, "every waiter watches", func() bool {
		n, err := zkc.WatchCount(0)
		return err == nil && n == 5
	})
	all := []*party{r1, r2, w1, r3, r4}
	snap := func() []metric.RequestCounts {
		out := make([]metric.RequestCounts, len(all))
		for i, p := range all {
			out[i] = (*engine.Client)(p.c).Stats()
		}
		return out
	}
	sent := func(before []metric.RequestCounts, i int) uint64 {
		d := (*engine.Client)(all[i].c).Stats().Sub(before[i])
		return d.Children + d.GetData + d.Exists + d.Creates
	}

	before := snap()
	require.NoError(t, hrw.WriteLock().Release(mutex.WithOwner(ctx, "w0")))
	within(t, r1.done, "r1")
	within(t, r2.done, "r2")
	notYet(t, w1.done, "w1 while r1 and r2 read")
	assert.Zero(t, sent(before, 3)+sent(before, 4), "readers behind w1 slept through w0's release")

	require.NoError(t, r1.rw.ReadLock().Release(mutex.WithOwner(ctx, "r1")))
	require.NoError(t, r2.rw.ReadLock().Release(mutex.WithOwner(ctx, "r2")))
	within(t, w1.done, "w1")
	require.NoError(t, w1.rw.WriteLock().Release(mutex.WithOwner(ctx, "w1")))
	within(t, r3.done, "r3")
	within(t, r4.done, "r4")
	require.NoError(t, r3.rw.ReadLock().Release(mutex.WithOwner(ctx, "r3")))
	require.NoError(t, r4.rw.ReadLock().Release(mutex.WithOwner(ctx, "r4")))
	waitNodes(t, hrw, 0)
}

// Bad input and misuse return sentinel errors; nothing panics.
func TestBadInput(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	_, err := rwlock.New(nil, "/x")
	assert.ErrorIs(t, err, recipes.ErrNilClient)
	for _, p := range []string{"", "rel", "/trailing/", "/a/../b", "/nul\x00", "/"} {
		_, err := rwlock.New(c, p)
		assert.ErrorIs(t, err, recipes.ErrInvalidPath, "%q", p)
	}
	_, err = rwlock.New(c, "/x", nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	var zero rwlock.RWLock
	_, err = zero.Participants(ctx)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)

	rw := newRW(t, c, "/rw/bad")
	assert.ErrorIs(t, rw.ReadLock().Release(ctx), recipes.ErrNotHeld)
	assert.ErrorIs(t, rw.WriteLock().Release(ctx), recipes.ErrNotHeld)
	_, err = rw.ReadLock().Acquire(nil) //nolint:staticcheck // the nil context is the point
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	l, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, rw.WriteLock().Release(ctx), recipes.ErrNotHeld, "the write lock is not the read lock")
	done := make(chan error, 1)
	go func() { done <- rw.ReadLock().Release(ctx) }()
	assert.ErrorIs(t, <-done, recipes.ErrNotOwner, "another goroutine")
	require.NoError(t, l.Release(ctx))

	other := connect(t, zkc.Servers())
	orw := newRW(t, other, "/rw/bad")
	require.NoError(t, other.Close(context.Background()))
	_, err = orw.ReadLock().Acquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrClosed)
	_, err = rwlock.New(other, "/x")
	assert.True(t, errors.Is(err, recipes.ErrClosed))
	assert.True(t, strings.HasPrefix(rwlock.ReadLockName, "__"))
}

// A writer queued behind a downgrading writer, with a reader between them,
// all in one process (whose sessions share what they learn of deleted
// nodes): when the reader leaves, the writer must not hold while the
// downgraded read node exists. (The engine pruned the first writer as
// known gone without asking the driver whether its going may have left an
// unlisted node: a mutual-exclusion bug found by the rwlock example.)
func TestDowngradeSeenFromTheSameProcess(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const path = "/rw/sameproc"
	a, b, c := connect(t, zkc.Servers()), connect(t, zkc.Servers()), connect(t, zkc.Servers())
	rwA, rwB, rwC := newRW(t, a, path), newRW(t, b, path), newRW(t, c, path)
	_, err := rwA.WriteLock().Acquire(ctx) // W ...0
	require.NoError(t, err)
	leaseC := make(chan *mutex.Lease, 1)
	go func() {
		l, err := rwC.ReadLock().Acquire(ctx) // R ...1, waits for W ...0
		assert.NoError(t, err)
		leaseC <- l
	}()
	waitNodes(t, rwA, 2)
	watches := (*engine.Client)(b).Stats().Watches
	bDone := lockAsync(ctx, rwB.WriteLock(), "b") // W ...2, watches R ...1
	waitNodes(t, rwA, 3)
	eventually(t, 10*time.Second, "b watches", func() bool { return (*engine.Client)(b).Stats().Watches > watches })

	_, err = rwA.ReadLock().Acquire(ctx) // the downgrade: R at ...0
	require.NoError(t, err)
	require.NoError(t, rwA.WriteLock().Release(ctx))
	lc := <-leaseC
	require.NoError(t, lc.Release(ctx)) // C read beside A, and leaves
	select {
	case err := <-bDone:
		t.Fatalf("writer b holds (%v) while a still holds its downgraded read lock", err)
	case <-time.After(500 * time.Millisecond): // bounded: b must keep waiting
	}
	require.NoError(t, rwA.ReadLock().Release(ctx))
	within(t, bDone, "b after the downgraded reader left")
	require.NoError(t, rwB.WriteLock().Release(mutex.WithOwner(ctx, "b")))
}
