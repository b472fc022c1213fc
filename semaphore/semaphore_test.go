package semaphore_test

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

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/metric"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/shared"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var (
	connect    = testutil.Connect
	eventually = testutil.Eventually
)

// startCount returns a started shared count, closed at the end of the
// test.
func startCount(t testing.TB, c *recipes.Client, path string, seed int) *shared.Count {
	t.Helper()
	count, err := shared.NewCount(c, path, seed)
	require.NoError(t, err)
	require.NoError(t, count.Start(context.Background()))
	t.Cleanup(func() { _ = count.Close(context.Background()) })
	return count
}

func newSem(t testing.TB, c *recipes.Client, path string, max int, opts ...semaphore.Option) *semaphore.Semaphore {
	t.Helper()
	s, err := semaphore.New(c, path, max, opts...)
	require.NoError(t, err)
	return s
}

func leaseCount(t testing.TB, c *recipes.Client, path string) int {
	t.Helper()
	kids, _, err := c.Children(context.Background(), path+"/leases")
	if err != nil {
		return 0
	}
	return len(kids)
}

// gauge counts concurrent holders and remembers the most seen.
type gauge struct{ cur, max atomic.Int64 }

func (g *gauge) in() {
	n := g.cur.Add(1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func (g *gauge) out() { g.cur.Add(-1) }

// Many goroutines over several sessions on a 4-lease semaphore: never more
// than 4 holders, and everyone makes progress. The wire layout is
// Curator's.
func TestNeverMoreThanMax(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const path, max, workers, rounds = "/sem/gauge", 4, 12, 5
	var g gauge
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := 0; i < workers; i++ {
		c := connect(t, zkc.Servers())
		s := newSem(t, c, path, max, semaphore.WithData([]byte(fmt.Sprintf("w%d", i))))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				l, err := s.Acquire(ctx)
				if err != nil {
					errs <- err
					return
				}
				g.in()
				time.Sleep(2 * time.Millisecond) // hold: the holders overlap
				g.out()
				if err := l.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, g.max.Load(), int64(max))
	assert.Equal(t, int64(0), g.cur.Load())
	t.Logf("at most %d holders at once", g.max.Load())

	c := connect(t, zkc.Servers())
	s := newSem(t, c, path, max, semaphore.WithData([]byte("data")))
	ls, err := s.AcquireN(ctx, 2)
	require.NoError(t, err)
	for _, l := range ls {
		assert.Regexp(t, `^/sem/gauge/leases/_c_[0-9a-f-]{36}-lease-\d{10}$`, l.Node())
		d, err := l.Data(ctx)
		require.NoError(t, err)
		assert.Equal(t, "data", string(d))
	}
	ps, err := s.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, ls[0].Node(), ps[0].Node)
	assert.Equal(t, "data", ps[1].ID)
	kids, _, err := c.Children(ctx, path+"/locks")
	require.NoError(t, err)
	assert.Empty(t, kids, "the internal mutex is free once the leases are held")
	require.NoError(t, semaphore.ReleaseAll(ctx, ls))
}

// AcquireN is all or nothing: at the deadline every lease it took goes
// back, and no lease node is left.
func TestAcquireAllOrNothing(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const path = "/sem/aon"
	a := connect(t, zkc.Servers())
	b := connect(t, zkc.Servers())
	sa, sb := newSem(t, a, path, 4), newSem(t, b, path, 4)
	held, err := sa.AcquireN(ctx, 2)
	require.NoError(t, err)

	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = sb.AcquireN(tctx, 3) // two are free, the third never comes
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	eventually(t, 5*time.Second, "no orphan leases", func() bool { return leaseCount(t, a, path) == 2 })
	_, err = sb.TryAcquireN(ctx, 3)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired)
	assert.Equal(t, 2, leaseCount(t, a, path))

	got, err := sb.AcquireN(ctx, 2)
	require.NoError(t, err, "the two free leases")
	require.NoError(t, semaphore.ReleaseAll(ctx, append(held, got...)))
	assert.Equal(t, 0, leaseCount(t, a, path))
	assert.ErrorIs(t, held[0].Release(ctx), recipes.ErrNotHeld, "a lease returns once")
}

// The maximum from a SharedCount, changed from 4 to 2 and to 6 at run
// time, is obeyed: a smaller one grants nothing until the leases are under
// it (those held are kept), a larger one wakes the waiter at once.
func TestSharedCountMaximumChanges(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	count := startCount(t, c, "/sem/count", 4)
	s, err := semaphore.NewWithCount(c, "/sem/dyn", count)
	require.NoError(t, err)

	four, err := s.AcquireN(ctx, 4)
	require.NoError(t, err)
	_, err = s.TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired)

	require.NoError(t, count.Set(ctx, 2))
	eventually(t, 5*time.Second, "max 2", func() bool { return s.MaxLeases() == 2 })
	require.NoError(t, four[0].Release(ctx))
	require.NoError(t, four[1].Release(ctx))
	_, err = s.TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired, "2 held of 2")
	require.NoError(t, four[2].Release(ctx))
	one, err := s.TryAcquire(ctx)
	require.NoError(t, err, "1 held of 2")

	// Grow to 6 while a waiter waits for 3 more.
	got := make(chan error, 1)
	var more []*semaphore.Lease
	go func() {
		var err error
		more, err = s.AcquireN(ctx, 2)
		got <- err
	}()
	eventually(t, 5*time.Second, "waiter queued", func() bool { return leaseCount(t, c, "/sem/dyn") == 3 })
	select {
	case err := <-got:
		t.Fatalf("acquired over the maximum: %v", err)
	default:
	}
	other := connect(t, zkc.Servers()) // the change comes from another client
	ocount := startCount(t, other, "/sem/count", 99)
	assert.Equal(t, 2, ocount.Get(), "the seed does not overwrite")
	require.NoError(t, ocount.Set(ctx, 6))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a larger maximum did not wake the waiter")
	}
	assert.Equal(t, 4, leaseCount(t, c, "/sem/dyn"))
	require.NoError(t, semaphore.ReleaseAll(ctx, append(more, one, four[3])))
}

// A holder black-holed past its session timeout: Done closes, the server
// frees its lease, a waiter proceeds.
func TestHolderSessionLost(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	ctx := context.Background()
	const path = "/sem/lost"
	a := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second), recipes.WithErrorPolicy(recipes.PolicySession))
	b := connect(t, zkc.Servers())
	sa, sb := newSem(t, a, path, 1), newSem(t, b, path, 1)
	lease, err := sa.Acquire(ctx)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		l, err := sb.Acquire(ctx)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	eventually(t, 5*time.Second, "waiter queued", func() bool { return leaseCount(t, b, path) == 2 })
	proxy.Blackhole()
	select {
	case <-lease.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done of the lost lease did not close")
	}
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not proceed")
	}
	proxy.Restore()
	assert.ErrorIs(t, lease.Release(ctx), recipes.ErrLockLost)
}

// Herd: with many waiters queued, a lease release is answered by the
// waiter that holds the internal lock (it takes the lease) and the next in
// the lock's queue (it moves up and creates its lease node); nobody else
// sends a request.
func TestReleaseWakesOnlyTheNextWaiters(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const path, n = "/sem/herd", 20
	hc := connect(t, zkc.Servers())
	hs := newSem(t, hc, path, 1)
	held, err := hs.Acquire(ctx)
	require.NoError(t, err)

	clients := make([]*recipes.Client, n)
	got := make(chan int, n)
	release := make([]chan struct{}, n)
	for i := range clients {
		clients[i] = connect(t, zkc.Servers())
		s := newSem(t, clients[i], path, 1)
		release[i] = make(chan struct{})
		go func(i int) {
			l, err := s.Acquire(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			got <- i
			<-release[i]
			_ = l.Release(ctx)
		}(i)
		eventually(t, 5*time.Second, "queued and watching", func() bool {
			return (*engine.Client)(clients[i]).Stats().Watches >= 1
		})
	}
	for round := 0; round < 3; round++ {
		before := make([]metric.RequestCounts, n)
		for i, c := range clients {
			before[i] = (*engine.Client)(c).Stats()
		}
		if round == 0 {
			require.NoError(t, held.Release(ctx))
		} else {
			close(release[round-1])
		}
		var winner int
		select {
		case winner = <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("nobody acquired")
		}
		assert.Equal(t, round, winner, "FIFO")
		next := clients[round+1]
		eventually(t, 5*time.Second, "the next waiter moved up and watches the leases", func() bool {
			return (*engine.Client)(next).Stats().Sub(before[round+1]).Watches >= 1 // the lease list it waits on
		})
		busy := []int{}
		for i, c := range clients {
			d := (*engine.Client)(c).Stats().Sub(before[i])
			if d.Children+d.GetData+d.Creates+d.Exists > 0 {
				busy = append(busy, i)
			}
		}
		assert.Equal(t, []int{round, round + 1}, busy, "round %d: only the winner and the next in line sent requests", round)
	}
	close(release[2])
	for i := 3; i < n; i++ {
		<-got
		close(release[i])
	}
}

// SemaphoreMutex: not reentrant, released from any goroutine.
func TestSemaphoreMutex(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	m, err := semaphore.NewMutex(c, "/sem/mutex")
	require.NoError(t, err)
	var _ mutex.Locker = m
	// The same query shape as mutex.Mutex.
	type heldQueries interface {
		IsHeld(context.Context) bool
		IsHeldInProcess() bool
	}
	var _ heldQueries = m
	var _ heldQueries = (*mutex.Mutex)(nil)
	assert.False(t, m.IsHeld(ctx))
	assert.False(t, m.IsHeldInProcess())
	_, err = m.Acquire(ctx)
	require.NoError(t, err)
	assert.True(t, m.IsHeld(ctx))
	assert.True(t, m.IsHeldInProcess())
	other := make(chan bool, 1)
	go func() { other <- m.IsHeld(ctx) }()
	assert.True(t, <-other, "no owner: held through this Mutex, for every goroutine")

	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = m.Acquire(tctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "not reentrant: the same goroutine waits")
	_, err = m.TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired)

	done := make(chan error, 1)
	go func() { done <- m.Release(ctx) }()
	require.NoError(t, <-done, "released from another goroutine")
	assert.False(t, m.IsHeld(ctx))
	assert.False(t, m.IsHeldInProcess())
	assert.ErrorIs(t, m.Release(ctx), recipes.ErrNotHeld)
	_, err = m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, m.Release(ctx))
	eventually(t, 5*time.Second, "no lease left", func() bool { return leaseCount(t, c, "/sem/mutex") == 0 })
}

// Bad input returns sentinel errors; nothing panics.
func TestBadInput(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	for _, max := range []int{0, -1} {
		_, err := semaphore.New(c, "/sem/bad", max)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "max %d", max)
	}
	_, err := semaphore.New(nil, "/sem/bad", 1)
	assert.ErrorIs(t, err, recipes.ErrNilClient)
	_, err = semaphore.New(c, "relative", 1)
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)
	_, err = semaphore.New(c, "/", 1)
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)
	_, err = semaphore.NewWithCount(c, "/sem/bad", nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = semaphore.New(c, "/sem/bad", 1, nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)

	s := newSem(t, c, "/sem/bad", 2)
	for _, n := range []int{0, -1, 3} {
		_, err := s.AcquireN(ctx, n)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "n %d", n)
	}
	_, err = s.Acquire(nil) //nolint:staticcheck // the nil context is the point
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	var zero semaphore.Semaphore
	_, err = zero.Acquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	var zl semaphore.Lease
	assert.ErrorIs(t, zl.Release(ctx), recipes.ErrInvalidArgument)
	var zm semaphore.Mutex
	assert.ErrorIs(t, zm.Release(ctx), recipes.ErrInvalidArgument)
	_, err = semaphore.NewWithCount(c, "/sem/bad", new(shared.Count))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)

	closed := connect(t, zkc.Servers())
	cs := newSem(t, closed, "/sem/bad", 2)
	require.NoError(t, closed.Close(context.Background()))
	_, err = cs.Acquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrClosed)
	_, err = semaphore.New(closed, "/x", 1)
	assert.True(t, errors.Is(err, recipes.ErrClosed))
	assert.True(t, strings.HasSuffix(semaphore.LeaseName, "-"))
}

// A shared count whose node is deleted keeps its last value and picks up
// the node when it is created again; a semaphore on a count of 0 waits
// for it to grow rather than refuse.
func TestSharedCountNodeDeletedAndZeroMaximum(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	admin := connect(t, zkc.Servers())
	count := startCount(t, c, "/sem/zero", 0)
	s, err := semaphore.NewWithCount(c, "/sem/zeroed", count)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		l, err := s.Acquire(ctx)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	eventually(t, 5*time.Second, "waiting", func() bool { return leaseCount(t, c, "/sem/zeroed") == 1 })

	require.NoError(t, admin.Delete(ctx, "/sem/zero", -1))
	changes, stop := count.Subscribe()
	defer stop()
	assert.Equal(t, 0, count.Get(), "the last value is kept")
	assert.Equal(t, 0, (<-changes).Value, "the current value first")
	_, err = admin.Create(ctx, "/sem/zero", []byte{0, 0, 0, 1}, 0)
	require.NoError(t, err)
	select {
	case v := <-changes:
		assert.Equal(t, 1, v.Value)
	case <-time.After(10 * time.Second):
		t.Fatal("the recreated node was not seen")
	}
	select {
	case err := <-got:
		require.NoError(t, err, "a maximum of 1 lets the waiter in")
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get the lease")
	}
}

// A lease node carries this host's address by default, as Curator's do
// (its framework's default data), and WithData's bytes when given.
func TestLeaseDataDefaultsToTheHostAddress(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	s, err := semaphore.New(c, "/semdata", 2)
	require.NoError(t, err)
	lease, err := s.Acquire(ctx)
	require.NoError(t, err)
	data, err := lease.Data(ctx)
	require.NoError(t, err)
	assert.Equal(t, recipeargs.LocalIP(), string(data))
	require.NoError(t, lease.Release(ctx))

	s, err = semaphore.New(c, "/semdata", 2, semaphore.WithData([]byte("mine")))
	require.NoError(t, err)
	lease, err = s.Acquire(ctx)
	require.NoError(t, err)
	data, err = lease.Data(ctx)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(data))
	require.NoError(t, lease.Release(ctx))
}
