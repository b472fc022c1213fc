package barrier_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var (
	connect    = testutil.Connect
	eventually = testutil.Eventually
)

// A Barrier is up while its node exists: Wait returns at once when it is
// down, blocks while it is up, and returns when another client removes
// it; a Wait's ctx bounds it.
func TestBarrier(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	a := connect(t, zkc.Servers(), recipes.WithNamespace("app"))
	b := connect(t, zkc.Servers(), recipes.WithNamespace("app"))
	ba, err := barrier.New(a, "/barriers/start")
	require.NoError(t, err)
	bb, err := barrier.New(b, "/barriers/start")
	require.NoError(t, err)

	require.NoError(t, ba.Wait(ctx), "a barrier that is not up")
	up, err := ba.IsSet(ctx)
	require.NoError(t, err)
	assert.False(t, up)
	require.NoError(t, ba.Set(ctx), "the namespace and the parents are made")
	require.NoError(t, ba.Set(ctx), "set twice")
	up, err = bb.IsSet(ctx)
	require.NoError(t, err)
	assert.True(t, up)

	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = bb.Wait(tctx)
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "zkrecipes: barrier /barriers/start: wait:")

	done := make(chan error, 1)
	go func() { done <- bb.Wait(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("Wait returned while the barrier is up: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, ba.Remove(ctx))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return once the barrier was removed")
	}
	require.NoError(t, ba.Remove(ctx), "remove twice")
}

// Members enter together once memberQty are present and leave together;
// nothing is left behind.
func TestDoubleBarrierEnterAndLeaveTogether(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const qty = 3
	admin := connect(t, zkc.Servers())
	ds := make([]*barrier.DoubleBarrier, qty)
	for i := range ds {
		var err error
		ds[i], err = barrier.NewDouble(connect(t, zkc.Servers()), "/double/group", qty)
		require.NoError(t, err)
	}
	entered := make(chan int, qty)
	var wg sync.WaitGroup
	for i, d := range ds[:qty-1] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, d.Enter(ctx))
			entered <- i
		}()
	}
	eventually(t, 10*time.Second, "two members waiting", func() bool {
		ms, _, err := ds[0].Members(ctx)
		return err == nil && len(ms) == qty-1
	})
	select {
	case i := <-entered:
		t.Fatalf("member %d entered with %d of %d members", i, qty-1, qty)
	default:
	}
	require.NoError(t, ds[qty-1].Enter(ctx))
	wg.Wait()
	ms, ready, err := ds[0].Members(ctx)
	require.NoError(t, err)
	assert.Len(t, ms, qty)
	assert.True(t, ready)
	assert.Contains(t, ms, ds[1].Node())

	left := make(chan int, qty)
	for i, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, d.Leave(ctx))
			left <- i
		}()
	}
	wg.Wait()
	kids, _, err := admin.Children(ctx, "/double/group")
	if err == nil {
		assert.Empty(t, kids, "no member and no ready node left")
	}
	for _, d := range ds {
		assert.Empty(t, d.Node())
	}
}

// memberQty is a threshold: more members than it enter too, and a
// member that arrives once ready exists enters at once.
func TestDoubleBarrierThreshold(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := connect(t, zkc.Servers())
	a, err := barrier.NewDouble(c, "/double/threshold", 1)
	require.NoError(t, err)
	require.NoError(t, a.Enter(ctx), "one member is enough")
	b, err := barrier.NewDouble(connect(t, zkc.Servers()), "/double/threshold", 1)
	require.NoError(t, err)
	require.NoError(t, b.Enter(ctx))
	var wg sync.WaitGroup
	for _, d := range []*barrier.DoubleBarrier{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, d.Leave(ctx))
		}()
	}
	wg.Wait()
}

// Better than Curator: a timed Enter with too few members returns the
// ctx's error (GH-1290: Curator's returned true), and its node is gone,
// so it does not count for a later arrival (CURATOR-318); a Leave whose
// ctx ends returns (CURATOR-536) and deletes its node so the others
// finish.
func TestDoubleBarrierGivesUpCleanly(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := barrier.NewDouble(connect(t, zkc.Servers()), "/double/giveup", 2)
	require.NoError(t, err)
	b, err := barrier.NewDouble(connect(t, zkc.Servers()), "/double/giveup", 2)
	require.NoError(t, err)

	tctx, tcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = a.Enter(tctx)
	tcancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "zkrecipes: double barrier /double/giveup: enter:")
	ms, ready, err := b.Members(ctx)
	require.NoError(t, err)
	assert.Empty(t, ms, "the member that gave up left no node")
	assert.False(t, ready)

	tctx, tcancel = context.WithTimeout(ctx, 300*time.Millisecond)
	err = b.Enter(tctx)
	tcancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "the first one does not count")

	// Both enter; b never leaves: a's Leave gives up at its ctx.
	done := make(chan error, 1)
	go func() { done <- a.Enter(ctx) }()
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, <-done)
	tctx, tcancel = context.WithTimeout(ctx, 300*time.Millisecond)
	err = a.Leave(tctx)
	tcancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "lowest or not, a waits for b")
	assert.Empty(t, a.Node())
	require.NoError(t, b.Leave(ctx), "b finishes: a's node is gone")
	ms, ready, err = b.Members(ctx)
	require.NoError(t, err)
	assert.Empty(t, ms)
	assert.False(t, ready)
}

// Bad input is refused with the sentinels.
func TestBadInput(t *testing.T) {
	c := connect(t, testutil.SharedServer(t).Servers())
	ctx := context.Background()
	_, err := barrier.New(nil, "/b")
	assert.ErrorIs(t, err, recipes.ErrNilClient)
	_, err = barrier.New(c, "relative")
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)
	_, err = barrier.NewDouble(c, "/d", 0)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	d, err := barrier.NewDouble(c, "/bad/d", 1)
	require.NoError(t, err)
	assert.ErrorIs(t, d.Leave(ctx), recipes.ErrNotHeld, "Leave without Enter")
	require.NoError(t, d.Enter(ctx))
	assert.ErrorIs(t, d.Enter(ctx), recipes.ErrInvalidArgument, "Enter twice")
	require.NoError(t, d.Leave(ctx))
	var zero barrier.Barrier
	assert.ErrorIs(t, zero.Set(ctx), recipes.ErrInvalidArgument)
	var zd barrier.DoubleBarrier
	assert.ErrorIs(t, zd.Enter(ctx), recipes.ErrInvalidArgument)
}

// GH-1290: Curator's timed enter returned true with too few members when
// a wake-up came (its do-once wait took any event for "enough"). Here a
// member of a 3-member barrier waits while the only other member comes
// and goes (children events) and its own connection is cut twice
// (Suspended, then Reconnected: session events): with never more than 2
// members present, Enter never returns nil. Its ctx then ends while it is
// disconnected; once the connection is back its node is gone, and no
// ready node was ever made.
func TestDoubleBarrierTimedEnterRecountsThroughEvents(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const path, qty = "/double/recount", 3
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	ac := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(6*time.Second))
	a, err := barrier.NewDouble(ac, path, qty)
	require.NoError(t, err)
	b, err := barrier.NewDouble(connect(t, zkc.Servers()), path, qty)
	require.NoError(t, err)
	admin := connect(t, zkc.Servers())

	var mu sync.Mutex
	suspended, reconnected := 0, 0
	defer ac.Listen(func(s recipes.State) {
		mu.Lock()
		defer mu.Unlock()
		switch s {
		case recipes.StateSuspended:
			suspended++
		case recipes.StateReconnected:
			reconnected++
		}
	})()
	states := func() (int, int) { mu.Lock(); defer mu.Unlock(); return suspended, reconnected }

	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	entered := make(chan error, 1)
	go func() { entered <- a.Enter(actx) }()
	eventually(t, 10*time.Second, "a's member node", func() bool {
		ms, _, err := admin.Children(ctx, path)
		return err == nil && len(ms) == 1
	})
	notYet := func(when string) {
		t.Helper()
		select {
		case err := <-entered:
			t.Fatalf("%s: Enter returned (%v) with fewer than %d members ever present", when, err, qty)
		default:
		}
	}
	for i := range 3 {
		// b joins (2 of 3) and gives up: two children events for a.
		bctx, bcancel := context.WithTimeout(ctx, 150*time.Millisecond)
		require.ErrorIs(t, b.Enter(bctx), context.DeadlineExceeded)
		bcancel()
		notYet("after b came and went")
		if i < 2 {
			s0, r0 := states()
			proxy.Cut()
			eventually(t, 10*time.Second, "a suspended and reconnected", func() bool {
				s, r := states()
				return s > s0 && r > r0
			})
			notYet("after a's connection was cut and came back")
		}
	}
	s0, _ := states()
	proxy.Cut()
	eventually(t, 10*time.Second, "a suspended", func() bool { s, _ := states(); return s > s0 })
	acancel()
	err = <-entered
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, a.Node())
	eventually(t, 20*time.Second, "nothing of a left once it reconnects", func() bool {
		kids, _, err := admin.Children(ctx, path)
		return err == nil && len(kids) == 0
	})
	ok, _, err := admin.Exists(ctx, path+"/"+barrier.ReadyNode)
	require.NoError(t, err)
	assert.False(t, ok, "no ready node")
}

// A member whose session ended while it was inside learns it from Leave:
// its node went with the session, so the others could leave before it
// was done. Leave returns an error wrapping recipes.ErrSessionLost, even
// when every other member has left meanwhile (it used to return nil
// then: the chaos suite's barrier worker saw it).
func TestDoubleBarrierLeaveAfterSessionLost(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := zktest.NewProxy(t, zkc.Servers()[0])
	lost := connect(t, []string{p.Addr()}, recipes.WithSessionTimeout(2*time.Second))
	admin := connect(t, zkc.Servers())
	a, err := barrier.NewDouble(lost, "/double/lost", 2)
	require.NoError(t, err)
	b, err := barrier.NewDouble(connect(t, zkc.Servers()), "/double/lost", 2)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Enter(ctx) }()
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, <-done)

	p.Blackhole()
	eventually(t, 15*time.Second, "the server expires the lost member's session", func() bool {
		ms, _, err := b.Members(ctx)
		return err == nil && len(ms) == 1
	})
	require.NoError(t, b.Leave(ctx), "the other member leaves alone")
	p.Restore()
	err = a.Leave(ctx)
	require.ErrorIs(t, err, recipes.ErrSessionLost)
	assert.Empty(t, a.Node())
	kids, _, err := admin.Children(ctx, "/double/lost")
	if err == nil {
		assert.Empty(t, kids, "nothing left")
	}
}
