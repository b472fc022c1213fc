package recipes_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/shared"
)

// Every call that takes a ctx returns when the ctx ends, even while its
// request is in flight on a stalled link: the link is black-holed with a
// 20s session (go-zookeeper itself gives up on the connection only after
// about 13s), and each call, given a 1s ctx, returns within 1.2s with an
// error that wraps context.DeadlineExceeded. Once the link heals, none of
// them has left a node behind.
func TestCtxHonouredInFlight(t *testing.T) {
	zkc := zktest.Start(t, zktest.WithTickTime(time.Second)) // sessions up to 20s
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(20*time.Second))
	admin := connect(t, zkc.Servers())
	ctx := context.Background()
	require.Equal(t, 20*time.Second, c.SessionTimeout())

	// What the calls work on, made while the link is up: a held lock (its
	// token not yet read), a latch that leads, a shared count.
	held, err := mutex.New(c, "/inflight/held")
	require.NoError(t, err)
	lease, err := held.Acquire(ctx)
	require.NoError(t, err)
	latch, err := election.NewLatch(c, "/inflight/latch", "me")
	require.NoError(t, err)
	require.NoError(t, latch.Start(ctx))
	_, err = latch.Await(ctx)
	require.NoError(t, err)
	defer latch.Close(ctx)
	sc, err := shared.NewCount(admin, "/inflight/count", 1)
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	require.NoError(t, sc.Close(ctx))
	fresh, err := mutex.New(c, "/inflight/fresh")
	require.NoError(t, err)
	try, err := mutex.New(c, "/inflight/try")
	require.NoError(t, err)
	sem, err := semaphore.New(c, "/inflight/sem", 2)
	require.NoError(t, err)

	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Mutex.Lock", func(ctx context.Context) error { _, err := fresh.Acquire(ctx); return err }},
		{"Mutex.TryLock", func(ctx context.Context) error { _, err := try.TryAcquire(ctx); return err }},
		{"Lease.Token", func(ctx context.Context) error { _, err := lease.Token(ctx); return err }},
		{"Lease.Fenced", func(ctx context.Context) error {
			_, err := lease.Fenced(ctx, recipes.SetOp("/inflight/count", []byte{0, 0, 0, 2}, -1))
			return err
		}},
		{"Mutex.Participants", func(ctx context.Context) error { _, err := held.Participants(ctx); return err }},
		{"Mutex.Holder", func(ctx context.Context) error { _, err := held.Holder(ctx); return err }},
		{"Semaphore.Acquire", func(ctx context.Context) error { _, err := sem.Acquire(ctx); return err }},
		{"SharedCount.Start", func(ctx context.Context) error {
			sc, err := shared.NewCount(c, "/inflight/count", 5)
			if err == nil {
				err = sc.Start(ctx)
				_ = sc.Close(ctx)
			}
			return err
		}},
		{"election.CurrentLeader", func(ctx context.Context) error {
			_, err := election.CurrentLeader(ctx, c, "/inflight/latch")
			return err
		}},
		{"Latch.Leader", func(ctx context.Context) error { _, err := latch.Leader(ctx); return err }},
		{"Client.Get", func(ctx context.Context) error { _, _, err := c.Get(ctx, "/inflight/count"); return err }},
		{"Client.Children", func(ctx context.Context) error { _, _, err := c.Children(ctx, "/inflight"); return err }},
		{"Client.Exists", func(ctx context.Context) error { _, _, err := c.Exists(ctx, "/inflight/count"); return err }},
		{"Client.Sync", func(ctx context.Context) error { return c.Sync(ctx, "/inflight") }},
		{"Client.Create", func(ctx context.Context) error {
			_, err := c.Create(ctx, "/inflight/created", nil, 0)
			return err
		}},
		{"Client.Set", func(ctx context.Context) error {
			_, err := c.Set(ctx, "/inflight/count", []byte{0, 0, 0, 9}, -1)
			return err
		}},
		{"Client.Delete", func(ctx context.Context) error { return c.Delete(ctx, "/inflight/count", -1) }},
		{"Client.AddAuth", func(ctx context.Context) error {
			return c.AddAuth(ctx, "digest", []byte("user:secret"))
		}},
		{"Connect", func(ctx context.Context) error {
			c2, err := testutil.Dial(ctx, []string{proxy.Addr()}, recipes.WithSessionTimeout(20*time.Second))
			if err == nil {
				_ = c2.Close(context.Background())
			}
			return err
		}},
		{"Client.Multi", func(ctx context.Context) error {
			_, err := c.Multi(ctx, recipes.CheckOp("/inflight/count", -1))
			return err
		}},
	}

	proxy.Blackhole()
	var wg sync.WaitGroup
	took := make([]time.Duration, len(calls))
	errs := make([]error, len(calls))
	for i, tc := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			start := time.Now()
			errs[i] = tc.call(cctx)
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	for i, tc := range calls {
		assert.ErrorIs(t, errs[i], context.DeadlineExceeded, tc.name)
		assert.Less(t, took[i], 1200*time.Millisecond, "%s returned after %v", tc.name, took[i])
		t.Logf("%-24s %6v  %v", tc.name, took[i].Round(time.Millisecond), errs[i])
	}

	// The link heals: the same session comes back, and nothing the calls
	// asked for was left behind.
	log := testutil.WatchStates(t, c)
	proxy.Restore()
	log.WaitFor(t, 0, 30*time.Second, recipes.StateReconnected)
	for _, p := range []string{"/inflight/fresh", "/inflight/try", "/inflight/sem/locks", "/inflight/sem/leases"} {
		kids, _, err := admin.Children(ctx, p)
		if err == nil {
			assert.Empty(t, kids, p)
		}
	}
	ok, _, err := admin.Exists(ctx, "/inflight/created")
	require.NoError(t, err)
	assert.False(t, ok, "/inflight/created")
	data, _, err := admin.Get(ctx, "/inflight/count")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 1}, data, "no write landed")
	require.NoError(t, lease.Release(ctx))
}

// A create whose reply comes after its ctx ended deletes the node it made:
// the caller, told the ctx ended, is left nothing.
func TestAbandonedCreateIsUndone(t *testing.T) {
	zkc := zktest.Start(t)
	if !zkc.Controllable() {
		t.Skip("needs a server this test controls (pause)")
	}
	c := connect(t, zkc.Servers())
	admin := connect(t, zkc.Servers())
	ctx := context.Background()
	_, err := admin.Create(ctx, "/late", nil, 0)
	require.NoError(t, err)
	ok, _, created, err := (*engine.Client)(admin).ExistsW(ctx, "/late/node")
	require.NoError(t, err)
	require.False(t, ok)

	require.NoError(t, zkc.Pause(0)) // the request reaches a server that answers late
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = c.Create(cctx, "/late/node", []byte("x"), 0)
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, zkc.Resume(0))

	select {
	case ev := <-created:
		assert.Equal(t, zk.EventNodeCreated, ev.Type, "the create landed after its ctx ended")
	case <-time.After(10 * time.Second):
		t.Fatal("the create never landed")
	}
	testutil.Eventually(t, 10*time.Second, "the late node deleted", func() bool {
		ok, _, err := admin.Exists(ctx, "/late/node")
		return err == nil && !ok && (*engine.Client)(c).Stats().PendingDeletes == 0
	})
}

// Close asks the server to end the session and waits for the reply until
// its ctx ends; on a stalled link it then cuts the connection, returns an
// error that wraps the ctx's, and still leaves no goroutine behind (the
// package's TestMain checks with goleak). The server expires the session.
func TestCloseHonoursCtx(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c, err := testutil.Dial(context.Background(), []string{proxy.Addr()}, recipes.WithSessionTimeout(4*time.Second))
	require.NoError(t, err)
	admin := connect(t, zkc.Servers())
	ctx := context.Background()
	_, err = c.Create(ctx, "/closing", nil, zk.FlagEphemeral)
	require.NoError(t, err)

	proxy.Blackhole()
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = c.Close(cctx)
	took := time.Since(start)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, took, 700*time.Millisecond, "Close returned after %v", took)
	assert.NoError(t, c.Close(ctx), "a second Close")
	_, _, err = c.Get(ctx, "/closing")
	assert.ErrorIs(t, err, recipes.ErrClosed)

	// The session was not closed on the server: it expires, and its
	// ephemeral node goes with it.
	testutil.Eventually(t, 15*time.Second, "the session expired on the server", func() bool {
		ok, _, err := admin.Exists(ctx, "/closing")
		return err == nil && !ok
	})

	// On a healthy link Close ends the session at once.
	c2 := connect(t, zkc.Servers())
	_, err = c2.Create(ctx, "/closing2", nil, zk.FlagEphemeral)
	require.NoError(t, err)
	require.NoError(t, c2.Close(ctx))
	ok, _, err := admin.Exists(ctx, "/closing2")
	require.NoError(t, err)
	assert.False(t, ok, "the ephemeral node of a closed session")
}
