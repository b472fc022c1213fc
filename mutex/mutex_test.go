package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/metric"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var (
	exampleServers = testutil.ExampleServers
	connect        = testutil.Connect
	eventually     = testutil.Eventually
)

func newMutex(t testing.TB, c *recipes.Client, path string, opts ...mutex.Option) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, path, opts...)
	require.NoError(t, err)
	return m
}

func children(t testing.TB, c *recipes.Client, path string) []string {
	t.Helper()
	kids, _, err := c.UnsafeConn().Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	require.NoError(t, err)
	return kids
}

// waitQueued waits until the lock path has n contenders.
func waitQueued(t testing.TB, m *mutex.Mutex, n int) {
	t.Helper()
	eventually(t, 10*time.Second, fmt.Sprintf("%d contenders", n), func() bool {
		ps, err := m.Participants(context.Background())
		return err == nil && len(ps) == n
	})
}

func TestReentrancyOwnersAndTryLock(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	m := newMutex(t, c, "/locks/reentrant")

	l1, err := m.Acquire(ctx)
	require.NoError(t, err)
	l2, err := m.Acquire(ctx)
	require.NoError(t, err)
	l3, err := m.TryAcquire(ctx)
	require.NoError(t, err)
	assert.Same(t, l1, l2)
	assert.Same(t, l1, l3)
	assert.Equal(t, 3, l1.Count())
	assert.Len(t, children(t, c, "/locks/reentrant"), 1, "one node for three holds")

	// Another goroutine is another owner: it cannot unlock, and TryLock fails.
	errs := make(chan error, 2)
	go func() {
		errs <- m.Release(ctx)
		_, err := m.TryAcquire(ctx)
		errs <- err
	}()
	assert.ErrorIs(t, <-errs, recipes.ErrNotOwner)
	assert.ErrorIs(t, <-errs, recipes.ErrNotAcquired)
	assert.Len(t, children(t, c, "/locks/reentrant"), 1, "failed TryLock leaves no node")
	assert.Equal(t, 3, l1.Count(), "non-owner unlock released nothing")

	for i := 0; i < 3; i++ {
		require.NoError(t, m.Release(ctx))
	}
	select {
	case <-l1.Done():
	default:
		t.Fatal("Done must close on release")
	}
	assert.Empty(t, children(t, c, "/locks/reentrant"))
	assert.ErrorIs(t, m.Release(ctx), recipes.ErrNotHeld)
}

func TestExplicitOwnerHandsLockBetweenGoroutines(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	m := newMutex(t, c, "/locks/owner")
	job := mutex.WithOwner(context.Background(), "job-42")

	_, err := m.Acquire(job)
	require.NoError(t, err)
	assert.True(t, m.IsHeld(job))
	assert.False(t, m.IsHeld(context.Background()), "the goroutine is not the owner")
	assert.ErrorIs(t, m.Release(context.Background()), recipes.ErrNotOwner)
	assert.ErrorIs(t, m.Release(mutex.WithOwner(context.Background(), "job-7")), recipes.ErrNotOwner)

	done := make(chan error)
	go func() {
		_, err := m.Acquire(job) // same owner in another goroutine: reentrant
		if err == nil {
			err = m.Release(job)
		}
		if err == nil {
			err = m.Release(job)
		}
		done <- err
	}()
	require.NoError(t, <-done)
	assert.False(t, m.IsHeldInProcess())
	assert.Empty(t, children(t, c, "/locks/owner"))

	_, err = m.Acquire(mutex.WithOwner(context.Background(), []int{1}))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "owners must be comparable")
}

func TestContextTimeoutAndCancelLeaveNoNode(t *testing.T) {
	zkc := zktest.Start(t)
	holder := connect(t, zkc.Servers())
	waiter := connect(t, zkc.Servers())
	hm := newMutex(t, holder, "/locks/ctx")
	wm := newMutex(t, waiter, "/locks/ctx")
	_, err := hm.Acquire(context.Background())
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = wm.Acquire(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	// A ctx may end while the waiter's create is in flight (a loaded
	// machine): the call returns at once and the node goes when the late
	// reply comes, so the node's removal is awaited.
	eventually(t, 5*time.Second, "timed-out waiter removed its node", func() bool {
		return len(children(t, holder, "/locks/ctx")) == 1
	})

	ctx2, cancel2 := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := wm.Acquire(ctx2)
		errc <- err
	}()
	waitQueued(t, hm, 2)
	cancel2()
	assert.ErrorIs(t, <-errc, context.Canceled)
	eventually(t, 5*time.Second, "cancelled waiter removed its node", func() bool {
		return len(children(t, holder, "/locks/ctx")) == 1
	})

	require.NoError(t, hm.Release(context.Background()))
	l, err := wm.Acquire(context.Background())
	require.NoError(t, err)
	require.NoError(t, wm.Release(context.Background()))
	<-l.Done()
}

// TestHerdFreeFIFO queues 50 waiters, each in its own session, and releases
// the lock 50 times: each release wakes exactly one waiter (only its
// session sends requests), the lock goes in queue order, and the server
// holds exactly one watch per waiter throughout.
func TestHerdFreeFIFO(t *testing.T) {
	const n = 50
	zkc := zktest.Start(t)
	ctx := context.Background()
	const path = "/locks/herd"
	holderC := connect(t, zkc.Servers())
	holder := newMutex(t, holderC, path)
	_, err := holder.Acquire(ctx)
	require.NoError(t, err)

	type waiter struct {
		c       *recipes.Client
		m       *mutex.Mutex
		release chan struct{}
	}
	ws := make([]*waiter, n)
	acquired := make(chan int, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range ws {
		c := connect(t, zkc.Servers())
		ws[i] = &waiter{c: c, m: newMutex(t, c, path), release: make(chan struct{})}
		wg.Add(1)
		go func(i int, w *waiter) {
			defer wg.Done()
			if _, err := w.m.Acquire(ctx); err != nil {
				errs <- err
				return
			}
			acquired <- i
			<-w.release
			errs <- w.m.Release(ctx)
		}(i, ws[i])
		waitQueued(t, holder, i+2) // queue them one by one: queue order = i
	}
	eventually(t, 10*time.Second, "one watch per waiter", func() bool {
		w, err := zkc.WatchCount(0)
		return err == nil && w == n
	})

	release := func() error { return holder.Release(ctx) }
	var maxOther uint64
	for next := 0; next < n; next++ {
		before := make([]metric.RequestCounts, n)
		for i, w := range ws {
			before[i] = (*engine.Client)(w.c).Stats()
		}
		require.NoError(t, release())
		select {
		case got := <-acquired:
			require.Equal(t, next, got, "FIFO")
		case err := <-errs:
			t.Fatalf("waiter failed: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatalf("nobody acquired after release %d", next)
		}
		remaining := n - next - 1
		eventually(t, 5*time.Second, "watch count", func() bool {
			w, err := zkc.WatchCount(0)
			return err == nil && w == remaining
		})
		// Only the successor may have sent anything (its wake-up needs no
		// request at all when the deletion event proves it is first).
		for i, w := range ws {
			d := (*engine.Client)(w.c).Stats().Sub(before[i])
			if i != next {
				maxOther = max(maxOther, d.GetData+d.Children+d.Exists+d.Creates)
			}
		}
		w := ws[next]
		release = func() error { close(w.release); return <-errs }
	}
	require.NoError(t, release())
	wg.Wait()
	assert.Zero(t, maxOther, "a release woke a session other than the successor")
	assert.Empty(t, children(t, holderC, path))
}

// TestFlatHandOff drains 200 waiters queued on one path and checks that
// the hand-offs did not list the children again: at most one children list
// per waiter in all, none during the drain. The waiters share one session,
// or are spread over eight sessions of this process (which learn of each
// other's releases). Waiters in other processes list once per hand-off,
// like Curator; see the mutex package doc.
func TestFlatHandOff(t *testing.T) {
	for _, sessions := range []int{1, 8} {
		t.Run(fmt.Sprintf("sessions=%d", sessions), func(t *testing.T) { testFlatHandOff(t, sessions) })
	}
}

func testFlatHandOff(t *testing.T, sessions int) {
	const n = 200
	const path = "/locks/flat"
	zkc := zktest.Start(t)
	ctx := context.Background()
	var cs []*recipes.Client
	var ms []*mutex.Mutex
	for i := 0; i < sessions; i++ {
		c := connect(t, zkc.Servers())
		cs = append(cs, c)
		ms = append(ms, newMutex(t, c, path))
	}
	stats := func() (s metric.RequestCounts) {
		for _, c := range cs {
			d := (*engine.Client)(c).Stats()
			s.Children += d.Children
			s.GetData += d.GetData
			s.Creates += d.Creates
			s.Deletes += d.Deletes
		}
		return s
	}
	first := mutex.WithOwner(ctx, "first")
	_, err := ms[0].Acquire(first)
	require.NoError(t, err)

	queued := stats()
	order := make(chan int, n)
	var wg sync.WaitGroup
	var inside atomic.Int32
	var overlap atomic.Bool
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int, m *mutex.Mutex) {
			defer wg.Done()
			if _, err := m.Acquire(ctx); err != nil {
				t.Error(err)
				return
			}
			if inside.Add(1) != 1 {
				overlap.Store(true)
			}
			order <- i
			inside.Add(-1)
			if err := m.Release(ctx); err != nil {
				t.Error(err)
			}
		}(i, ms[i%sessions])
	}
	// Watch the queue from another session, so that only the waiters'
	// requests are counted, and start the drain once every waiter watches.
	waitQueued(t, newMutex(t, connect(t, zkc.Servers()), path), n+1)
	eventually(t, 10*time.Second, "every waiter watching", func() bool {
		w, err := zkc.WatchCount(0)
		return err == nil && w == n
	})
	before := stats()
	start := time.Now()
	require.NoError(t, ms[0].Release(first))
	wg.Wait()
	elapsed := time.Since(start)
	d := stats().Sub(before)
	all := stats().Sub(queued)
	close(order)
	got := 0
	for range order {
		got++
	}
	assert.Equal(t, n, got)
	assert.False(t, overlap.Load(), "two holders at once")
	t.Logf("drain of %d waiters over %d sessions in %v (%.0f hand-offs/s): %d children lists, %d data reads (%.2f per hand-off), %d deletes",
		n, sessions, elapsed, float64(n)/elapsed.Seconds(), d.Children, d.GetData, float64(d.GetData)/float64(n), d.Deletes)
	t.Logf("queueing and drain together: %d children lists, %d data reads, %d creates", all.Children, all.GetData, all.Creates)
	assert.LessOrEqual(t, all.Children, uint64(n), "at most one children list per waiter")
	assert.LessOrEqual(t, d.GetData, uint64(n), "at most one data read per hand-off")
	assert.Zero(t, d.Children, "the drain itself lists nothing")
	assert.Empty(t, children(t, cs[0], path))
}

// TestSessionLoss black-holes a holder's connection past the session
// timeout, under both error policies.
func TestSessionLoss(t *testing.T) {
	for _, policy := range []recipes.ErrorPolicy{recipes.PolicyStandard, recipes.PolicySession} {
		t.Run(policy.String(), func(t *testing.T) {
			zkc := zktest.Start(t)
			proxy := zktest.NewProxy(t, zkc.Servers()[0])
			ctx := context.Background()
			path := "/locks/loss"
			a := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second), recipes.WithErrorPolicy(policy))
			b := connect(t, zkc.Servers())
			am, bm := newMutex(t, a, path), newMutex(t, b, path)
			states, stop := a.Subscribe()
			defer stop()

			lease, err := am.Acquire(ctx)
			require.NoError(t, err)
			_, err = b.Create(ctx, "/fence-target", []byte("0"), 0)
			require.NoError(t, err)

			type result struct {
				lease *mutex.Lease
				at    time.Time
				aNode bool
			}
			bOwner := mutex.WithOwner(ctx, "b")
			bGot := make(chan result, 1)
			go func() {
				l, err := bm.Acquire(bOwner)
				if err != nil {
					t.Error(err)
					close(bGot)
					return
				}
				ok, _, _ := b.UnsafeConn().Exists(lease.Node())
				bGot <- result{l, time.Now(), ok}
			}()
			waitQueued(t, bm, 2)

			start := time.Now()
			proxy.Blackhole()
			waitState(t, states, recipes.StateSuspended)
			if policy == recipes.PolicyStandard {
				assertClosed(t, lease.Done(), "Standard: Done closes on SUSPENDED")
			} else {
				assertOpen(t, lease.Done(), "Session: Done stays open while SUSPENDED")
			}
			waitState(t, states, recipes.StateLost)
			assertClosed(t, lease.Done(), "Done closes on LOST")

			r, ok := <-bGot
			require.True(t, ok)
			assert.False(t, r.aNode, "B acquired only after the server deleted A's node")
			t.Logf("B acquired %v after the black-hole began", r.at.Sub(start))

			proxy.Restore()
			require.NoError(t, a.WaitConnected(ctx))
			_, err = lease.Fenced(ctx, recipes.SetOp("/fence-target", []byte("stale"), -1))
			assert.ErrorIs(t, err, recipes.ErrFenced, "the stale holder's write is refused")
			data, _, err := b.Get(ctx, "/fence-target")
			require.NoError(t, err)
			assert.Equal(t, "0", string(data))
			_, err = r.lease.Fenced(ctx, recipes.SetOp("/fence-target", []byte("fresh"), -1))
			assert.NoError(t, err, "the current holder's write goes through")

			unlock := func() error { return am.Release(ctx) }
			if policy == recipes.PolicySession { // through the handle, from another goroutine
				unlock = func() error {
					errc := make(chan error)
					go func() { errc <- lease.Release(ctx) }()
					return <-errc
				}
			}
			assert.ErrorIs(t, unlock(), recipes.ErrLockLost)
			assert.False(t, am.IsHeldInProcess(), "local state cleaned up")
			assert.ErrorIs(t, lease.Release(ctx), recipes.ErrNotHeld, "released already")
			require.NoError(t, bm.Release(bOwner))
			l, err := am.Acquire(ctx) // usable again
			require.NoError(t, err)
			assert.NotNil(t, l)
			require.NoError(t, am.Release(ctx))
		})
	}
}

func waitState(t *testing.T, ch <-chan recipes.State, want recipes.State) {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case s := <-ch:
			if s == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %v within 15s", want)
		}
	}
}

func assertClosed(t *testing.T, ch <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal(msg)
	}
}

func assertOpen(t *testing.T, ch <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatal(msg)
	default:
	}
}

// TestLockReturnsWhenSessionLostWhileQueueing black-holes the connection
// before Lock: the create's reply never comes, the search for the node
// cannot run, and Lock must give up when the session is lost instead of
// retrying forever.
func TestLockReturnsWhenSessionLostWhileQueueing(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	w := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(time.Second))
	wm := newMutex(t, w, "/locks/queueloss")
	proxy.Blackhole()
	errc := make(chan error, 1)
	go func() {
		_, err := wm.Acquire(context.Background())
		errc <- err
	}()
	select {
	case err := <-errc:
		assert.ErrorIs(t, err, recipes.ErrSessionLost)
	case <-time.After(15 * time.Second):
		t.Fatal("Lock still running after its session was lost")
	}
	proxy.Restore()
	other := connect(t, zkc.Servers())
	eventually(t, 10*time.Second, "no node left", func() bool {
		return len(children(t, other, "/locks/queueloss")) == 0
	})
}

func TestWaiterReturnsWhenSessionLost(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	ctx := context.Background()
	holder := connect(t, zkc.Servers())
	hm := newMutex(t, holder, "/locks/waitloss")
	_, err := hm.Acquire(ctx)
	require.NoError(t, err)
	w := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(time.Second))
	wm := newMutex(t, w, "/locks/waitloss")
	errc := make(chan error)
	go func() {
		_, err := wm.Acquire(ctx)
		errc <- err
	}()
	waitQueued(t, hm, 2)
	proxy.Blackhole()
	select {
	case err := <-errc:
		assert.ErrorIs(t, err, recipes.ErrSessionLost)
	case <-time.After(15 * time.Second):
		t.Fatal("waiter still waiting after its session was lost")
	}
	proxy.Restore()
	eventually(t, 10*time.Second, "waiter's node gone", func() bool {
		return len(children(t, holder, "/locks/waitloss")) == 1
	})
}

func TestLeaderKillWhileContending(t *testing.T) {
	zkc := zktest.StartEnsemble(t, 3, zktest.WithTickTime(300*time.Millisecond))
	if !zkc.Controllable() {
		t.Skip("needs servers this test controls")
	}
	const workers, iters = 10, 12
	ctx := context.Background()
	var (
		mu        sync.Mutex
		intervals [][2]time.Time
		done      atomic.Int32
	)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		c := connect(t, zkc.Servers(), recipes.WithSessionTimeout(6*time.Second), recipes.WithErrorPolicy(recipes.PolicySession))
		m := newMutex(t, c, "/locks/failover")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < iters; {
				if _, err := m.Acquire(ctx); err != nil {
					t.Logf("lock: %v (retrying)", err)
					continue
				}
				s := time.Now()
				time.Sleep(2 * time.Millisecond)
				e := time.Now()
				if err := m.Release(ctx); err != nil {
					t.Logf("unlock: %v", err)
				} else {
					mu.Lock()
					intervals = append(intervals, [2]time.Time{s, e})
					mu.Unlock()
				}
				n++
				done.Add(1)
			}
		}()
	}
	eventually(t, 30*time.Second, "work before the kill", func() bool { return done.Load() >= workers*iters/4 })
	leader, err := zkc.Leader()
	require.NoError(t, err)
	require.NoError(t, zkc.Kill(leader))
	killedAt := done.Load()
	wg.Wait()
	assert.Equal(t, int32(workers*iters), done.Load())
	t.Logf("%d acquisitions before the leader kill, %d after", killedAt, int32(workers*iters)-killedAt)
	sort.Slice(intervals, func(i, j int) bool { return intervals[i][0].Before(intervals[j][0]) })
	for i := 1; i < len(intervals); i++ {
		assert.False(t, intervals[i][0].Before(intervals[i-1][1]), "holds %d and %d overlap", i-1, i)
	}
	require.NoError(t, zkc.Restart(leader))
}

func TestTokensIncreaseAcrossHoldersAndRecreatedParent(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const path = "/tokens/lock"
	var ms []*mutex.Mutex
	var cs []*recipes.Client
	for i := 0; i < 4; i++ {
		c := connect(t, zkc.Servers())
		cs = append(cs, c)
		ms = append(ms, newMutex(t, c, path))
	}
	var last int64
	for i := 0; i < 100; i++ {
		if i == 50 { // let the server reap the empty parent, then go on
			eventually(t, 15*time.Second, "parent reaped", func() bool {
				ok, _, err := cs[0].Exists(ctx, path)
				return err == nil && !ok
			})
		}
		m := ms[i%len(ms)]
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		tok, err := l.Token(ctx)
		require.NoError(t, err)
		require.Greater(t, tok.Czxid, last, "acquisition %d", i)
		last = tok.Czxid
		require.NoError(t, m.Release(ctx))
	}
}

// TestRevocation revokes a hold: the listener, on a goroutine of its own,
// releases through the lease, and the waiter gets the lock.
func TestRevocation(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	a := connect(t, zkc.Servers())
	b := connect(t, zkc.Servers())
	type revocation struct {
		lease *mutex.Lease
		err   error
	}
	revoked := make(chan revocation, 1)
	am := newMutex(t, a, "/locks/revoke", mutex.WithRevocationListener(func(l *mutex.Lease) {
		revoked <- revocation{l, l.Release(ctx)} // the holder chooses to give the lock up
	}))
	bm := newMutex(t, b, "/locks/revoke")
	la, err := am.Acquire(ctx)
	require.NoError(t, err)
	bOwner := mutex.WithOwner(ctx, "b")
	bGot := make(chan error, 1)
	go func() {
		_, err := bm.Acquire(bOwner)
		bGot <- err
	}()
	waitQueued(t, bm, 2)
	ps, err := bm.Participants(ctx)
	require.NoError(t, err)
	require.Equal(t, la.Node(), ps[0].Node)
	require.NoError(t, mutex.Revoke(ctx, b, ps[0].Node))
	select {
	case r := <-revoked:
		assert.Same(t, la, r.lease)
		assert.NoError(t, r.err, "the listener released through the lease")
	case <-time.After(10 * time.Second):
		t.Fatal("revocation listener not called")
	}
	select {
	case err := <-bGot:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get the revoked lock")
	}
	assert.False(t, am.IsHeldInProcess())
	assert.Equal(t, 0, la.Count())
	require.NoError(t, bm.Release(bOwner))
}

func TestIntrospection(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	a := connect(t, zkc.Servers())
	am := newMutex(t, a, "/locks/intro", mutex.WithData([]byte("worker-a")))
	_, err := am.Holder(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotHeld)
	la, err := am.Acquire(ctx)
	require.NoError(t, err)
	b := connect(t, zkc.Servers())
	bm := newMutex(t, b, "/locks/intro") // default data: the local IP
	go func() {
		if _, err := bm.Acquire(ctx); err == nil {
			_ = bm.Release(ctx)
		}
	}()
	waitQueued(t, am, 2)
	ps, err := am.Participants(ctx)
	require.NoError(t, err)
	assert.Equal(t, la.Node(), ps[0].Node)
	assert.Regexp(t, `^_c_[0-9a-f-]{36}-lock-\d{10}$`, path.Base(ps[1].Node))
	h, err := bm.Holder(ctx)
	require.NoError(t, err)
	assert.Equal(t, ps[0], h)
	assert.True(t, h.Holds)
	assert.False(t, ps[1].Holds)
	assert.Equal(t, "worker-a", h.ID)
	d, _, err := b.Get(ctx, ps[1].Node)
	require.NoError(t, err)
	assert.NotEmpty(t, string(d), "default data is the local IP address")
	require.NoError(t, am.Release(ctx))
}

func TestMultiLockAllOrNone(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	a := connect(t, zkc.Servers())
	b := connect(t, zkc.Servers())
	ma := newMutex(t, a, "/multi/a")
	mb := newMutex(t, a, "/multi/b")
	other := newMutex(t, b, "/multi/b")
	_, err := other.Acquire(ctx)
	require.NoError(t, err)

	ml, err := mutex.NewMultiLock(ma, mb)
	require.NoError(t, err)
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = ml.Acquire(tctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, ma.IsHeldInProcess(), "the first lock was given back")
	assert.Empty(t, children(t, a, "/multi/a"))

	require.NoError(t, other.Release(ctx))
	ml2, err := ml.Acquire(ctx)
	require.NoError(t, err)
	assert.True(t, ma.IsHeld(ctx))
	assert.True(t, mb.IsHeld(ctx))
	require.Len(t, ml2.Holds(), 2)
	assert.False(t, ml2.IsLost())
	require.NoError(t, ml2.Release(ctx))
	<-ml2.Done()
	assert.False(t, ma.IsHeldInProcess())
	assert.False(t, mb.IsHeldInProcess())

	_, err = mutex.NewMultiLock()
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = mutex.NewMultiLock(ma, nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
}

func TestBadInput(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	for _, p := range []string{"", "rel", "/trailing/", "/a//b", "/a/./b", "/a/../b", "/nul\x00", "/"} {
		_, err := mutex.New(c, p)
		assert.ErrorIs(t, err, recipes.ErrInvalidPath, "%q", p)
	}
	_, err := mutex.New(nil, "/x")
	assert.ErrorIs(t, err, recipes.ErrNilClient)
	_, err = mutex.New(c, "/x", nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = mutex.New(c, "/x", mutex.WithExtraLockNames(""))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = mutex.New(c, "/x", mutex.WithRevocationListener(nil))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)

	m := newMutex(t, c, "/locks/bad")
	//lint:ignore SA1012 testing nil context handling on purpose
	_, err = m.Acquire(nil) //nolint:staticcheck
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	assert.ErrorIs(t, m.Release(context.Background()), recipes.ErrNotHeld)

	var zero mutex.Mutex
	_, err = zero.Acquire(context.Background())
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	assert.ErrorIs(t, zero.Release(context.Background()), recipes.ErrInvalidArgument)
	_, err = zero.Participants(context.Background())
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	var nilM *mutex.Mutex
	_, err = nilM.Acquire(context.Background())
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	assert.False(t, nilM.IsHeldInProcess())

	closed, err := testutil.Dial(context.Background(), zkc.Servers())
	require.NoError(t, err)
	cm := newMutex(t, closed, "/locks/closed")
	require.NoError(t, closed.Close(context.Background()))
	_, err = cm.Acquire(context.Background())
	assert.ErrorIs(t, err, recipes.ErrClosed)
	_, err = mutex.New(closed, "/locks/closed")
	assert.ErrorIs(t, err, recipes.ErrClosed)
	assert.ErrorIs(t, mutex.Revoke(context.Background(), closed, "/x"), recipes.ErrClosed)
}

// TryLock without a connection says so with a sentinel, at once, instead
// of retrying its create until ctx ends; Unlock while suspended does not
// block either (the delete goes to the background worker).
func TestTryLockAndUnlockWhileSuspended(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(4*time.Second))
	direct := connect(t, zkc.Servers())
	m := newMutex(t, c, "/trysusp")
	other := newMutex(t, c, "/trysusp2")
	ctx := context.Background()
	_, err := m.Acquire(ctx)
	require.NoError(t, err)

	states, cancel := c.Subscribe()
	defer cancel()
	proxy.Blackhole()
	waitState(t, states, recipes.StateSuspended)
	start := time.Now()
	_, err = other.TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotConnected)
	assert.True(t, recipes.IsRetryable(err))
	require.NoError(t, m.Release(ctx))
	assert.Less(t, time.Since(start), 200*time.Millisecond, "neither call waits for the server")
	proxy.Restore()
	eventually(t, 10*time.Second, "released node deleted", func() bool {
		return len(children(t, direct, "/trysusp")) == 0
	})
}
