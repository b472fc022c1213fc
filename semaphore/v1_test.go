package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/shared"
)

func newV1(t testing.TB, c *recipes.Client, path string, max int, opts ...semaphore.Option) *semaphore.V1 {
	t.Helper()
	s, err := semaphore.NewV1(c, path, max, opts...)
	require.NoError(t, err)
	return s
}

// v1Nodes counts the lease nodes of a V1 (the children of its path).
func v1Nodes(t testing.TB, c *recipes.Client, path string) int {
	t.Helper()
	kids, _, err := c.Children(context.Background(), path)
	if err != nil {
		return 0
	}
	return len(kids)
}

// Many goroutines over several sessions on a 3-lease V1: never more than
// 3 holders, everyone makes progress, and the nodes are Curator's
// InterProcessSemaphore's: _c_<uuid>-lock-<seq> right under the path.
func TestV1NeverMoreThanMax(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const p, max, workers, rounds = "/semv1/gauge", 3, 8, 5
	var g gauge
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := 0; i < workers; i++ {
		s := newV1(t, connect(t, zkc.Servers()), p, max, semaphore.WithData([]byte(fmt.Sprintf("w%d", i))))
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
	t.Logf("at most %d holders at once", g.max.Load())

	c := connect(t, zkc.Servers())
	s := newV1(t, c, p, max, semaphore.WithData([]byte("data")))
	ls, err := s.AcquireN(ctx, 2)
	require.NoError(t, err)
	for _, l := range ls {
		assert.Regexp(t, `^/semv1/gauge/_c_[0-9a-f-]{36}-lock-\d{10}$`, l.Node())
		data, err := l.Data(ctx)
		require.NoError(t, err)
		assert.Equal(t, "data", string(data))
	}
	a, _ := ls[0].Token(ctx)
	b, _ := ls[1].Token(ctx)
	assert.Less(t, a.Czxid, b.Czxid, "tokens increase")
	ps, err := s.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.True(t, ps[0].Holds && ps[1].Holds)
	require.NoError(t, semaphore.ReleaseAll(ctx, ls))
	assert.Equal(t, 0, v1Nodes(t, c, p))
}

// A V1 waiter waits for the node maxLeases places ahead of it; TryAcquire
// and a cancelled Acquire leave no node behind; a holder's release lets
// the waiter in.
func TestV1WaitsAndCleansUp(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const p = "/semv1/wait"
	a, b := connect(t, zkc.Servers()), connect(t, zkc.Servers())
	sa, sb := newV1(t, a, p, 2), newV1(t, b, p, 2)
	held, err := sa.AcquireN(ctx, 2)
	require.NoError(t, err)

	_, err = sb.TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired)
	assert.Equal(t, 2, v1Nodes(t, a, p), "TryAcquire left its node")
	_, err = sb.AcquireN(ctx, 3)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "more than the maximum")

	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = sb.Acquire(tctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	eventually(t, 5*time.Second, "the cancelled node gone", func() bool { return v1Nodes(t, a, p) == 2 })

	got := make(chan error, 1)
	go func() {
		l, err := sb.Acquire(ctx)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	eventually(t, 5*time.Second, "waiter queued", func() bool { return v1Nodes(t, a, p) == 3 })
	select {
	case err := <-got:
		t.Fatalf("acquired over the maximum: %v", err)
	default:
	}
	require.NoError(t, held[0].Release(ctx)) // the node the waiter watches
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not proceed")
	}
	require.NoError(t, held[1].Release(ctx))
	assert.Equal(t, 0, v1Nodes(t, a, p))
}

// A V1 with one lease and a mutex.Mutex at the same path are one queue,
// as Curator's InterProcessSemaphore and InterProcessMutex are: both are
// LockInternals with the lock name "lock-".
func TestV1SharesTheMutexQueue(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const p = "/semv1/mutex"
	c := connect(t, zkc.Servers())
	m, err := mutex.New(c, p)
	require.NoError(t, err)
	ml, err := m.Acquire(ctx)
	require.NoError(t, err)
	s := newV1(t, connect(t, zkc.Servers()), p, 1)
	_, err = s.TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired, "the mutex holds the one lease")
	require.NoError(t, ml.Release(ctx))
	l, err := s.TryAcquire(ctx)
	require.NoError(t, err)
	_, err = m.TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired, "the lease holds the mutex")
	require.NoError(t, l.Release(ctx))
}

// A V1 that follows a shared count: a waiter is let in when the count
// grows, nothing is granted at a count of 0, and leases held are kept
// when it shrinks.
func TestV1SharedCount(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const p = "/semv1/count"
	c := connect(t, zkc.Servers())
	count := startCount(t, c, "/semv1/max", 1)
	s, err := semaphore.NewV1WithCount(c, p, count)
	require.NoError(t, err)
	one, err := s.Acquire(ctx)
	require.NoError(t, err)
	_, err = s.TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired)

	got := make(chan *semaphore.Lease, 1)
	go func() {
		l, err := s.Acquire(ctx)
		assert.NoError(t, err)
		got <- l
	}()
	eventually(t, 5*time.Second, "waiter queued", func() bool { return v1Nodes(t, c, p) == 2 })
	other := startCount(t, connect(t, zkc.Servers()), "/semv1/max", 9)
	require.NoError(t, other.Set(ctx, 2))
	var two *semaphore.Lease
	select {
	case two = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("a larger count did not let the waiter in")
	}
	require.NotNil(t, two)

	require.NoError(t, other.Set(ctx, 0))
	eventually(t, 5*time.Second, "max 0", func() bool { return s.MaxLeases() == 0 })
	assert.False(t, isDone(one) || isDone(two), "leases held are kept")
	require.NoError(t, semaphore.ReleaseAll(ctx, []*semaphore.Lease{one, two}))
	_, err = s.TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired, "a count of 0 grants nothing")
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(tctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	eventually(t, 5*time.Second, "no node left", func() bool { return v1Nodes(t, c, p) == 0 })
}

func isDone(l *semaphore.Lease) bool {
	select {
	case <-l.Done():
		return true
	default:
		return false
	}
}

// A V1 holder black-holed past its session timeout: Done closes, the
// server frees its lease, a waiter proceeds, Release reports the loss.
func TestV1HolderSessionLost(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	ctx := context.Background()
	const p = "/semv1/lost"
	a := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second), recipes.WithErrorPolicy(recipes.PolicySession))
	b := connect(t, zkc.Servers())
	lease, err := newV1(t, a, p, 1).Acquire(ctx)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		l, err := newV1(t, b, p, 1).Acquire(ctx)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	eventually(t, 5*time.Second, "waiter queued", func() bool { return v1Nodes(t, b, p) == 2 })
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

// Bad input is refused with ErrInvalidArgument, nothing panics.
func TestV1BadInput(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	for _, max := range []int{0, -1} {
		_, err := semaphore.NewV1(c, "/semv1/bad", max)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	}
	_, err := semaphore.NewV1(nil, "/semv1/bad", 1)
	assert.ErrorIs(t, err, recipes.ErrNilClient)
	for _, p := range []string{"", "rel", "/a/", "/a/../b", "/"} {
		_, err := semaphore.NewV1(c, p, 1)
		assert.ErrorIs(t, err, recipes.ErrInvalidPath, p)
	}
	_, err = semaphore.NewV1WithCount(c, "/semv1/bad", nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	var nilV1 *semaphore.V1
	_, err = nilV1.Acquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = nilV1.Participants(ctx)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	s := newV1(t, c, "/semv1/bad", 2)
	_, err = s.AcquireN(ctx, 0)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	var nilCtx context.Context
	_, err = s.Acquire(nilCtx)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
}

// TestV1Misuse feeds V1's constructors and methods their invalid inputs,
// as TestMisuse does Semaphore's: each returns an error matching the
// right sentinel, none panics or hangs.
func TestV1Misuse(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	var nilCtx context.Context
	invalidArg := []error{recipes.ErrInvalidArgument}
	closed, err := testutil.Dial(ctx, zkc.Servers())
	require.NoError(t, err)
	closedV1 := newV1(t, closed, "/misuse/v1closed", 2)
	require.NoError(t, closed.Close(ctx))
	count := startCount(t, c, "/misuse/v1count", 2)

	var cases misuseTable
	add := cases.Add
	add("constructors", nil, misuseEach(nil, []misuseSub{
		{Name: "NewV1(closed client)", Call: func() error { _, err := semaphore.NewV1(closed, "/x", 1); return wantErr(err, recipes.ErrClosed) }},
		{Name: "NewV1WithCount(nil client)", Call: func() error {
			_, err := semaphore.NewV1WithCount(nil, "/x", count)
			return wantErr(err, recipes.ErrNilClient)
		}},
		{Name: "NewV1(nil option)", Call: func() error {
			_, err := semaphore.NewV1(c, "/x", 1, nil)
			return wantErr(err, recipes.ErrInvalidArgument)
		}},
		{Name: "NewV1WithCount(zero count)", Call: func() error {
			_, err := semaphore.NewV1WithCount(c, "/x", new(shared.Count))
			return wantErr(err, recipes.ErrInvalidArgument)
		}},
	}))
	s := newV1(t, c, "/misuse/v1", 2)
	for _, n := range []int{0, -1, 3, math.MinInt} {
		add(fmt.Sprintf("TryAcquireN(%d)", n), invalidArg, func() error { _, err := s.TryAcquireN(ctx, n); return err })
	}
	add("TryAcquire(nil ctx)", invalidArg, func() error { _, err := s.TryAcquire(nilCtx); return err })
	add("Participants(nil ctx)", invalidArg, func() error { _, err := s.Participants(nilCtx); return err })
	var zero semaphore.V1
	add("zero V1 calls", nil, misuseEach(invalidArg, []misuseSub{
		{Name: "Acquire", Call: func() error { _, err := zero.Acquire(ctx); return err }},
		{Name: "TryAcquireN", Call: func() error { _, err := zero.TryAcquireN(ctx, 1); return err }},
		{Name: "Participants", Call: func() error { _, err := zero.Participants(ctx); return err }},
	}))
	add("zero V1 queries", nil, func() error { _, _ = zero.Path(), zero.MaxLeases(); return nil })
	add("closed client: V1 calls", nil, misuseEach([]error{recipes.ErrClosed}, []misuseSub{
		{Name: "TryAcquire", Call: func() error { _, err := closedV1.TryAcquire(ctx); return err }},
		{Name: "Participants", Call: func() error { _, err := closedV1.Participants(ctx); return err }},
	}))
	add("V1 lease released twice", []error{recipes.ErrNotHeld}, func() error {
		l, err := s.Acquire(ctx)
		if err != nil {
			return err
		}
		if err := l.Release(ctx); err != nil {
			return err
		}
		return l.Release(ctx)
	})
	runMisuse(t, cases)
}

// wantErr returns nil when err matches target, else an error saying so.
func wantErr(err, target error) error {
	if errors.Is(err, target) {
		return nil
	}
	return fmt.Errorf("got %v, want %v", err, target)
}
