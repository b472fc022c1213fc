package mutex_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// doneWatch is a context that reports the first call of its Done method:
// a Lock call has reached the point where it waits on its context.
type doneWatch struct {
	context.Context
	once   sync.Once
	called chan struct{}
}

func newDoneWatch(ctx context.Context) *doneWatch {
	return &doneWatch{Context: ctx, called: make(chan struct{})}
}

func (c *doneWatch) Done() <-chan struct{} {
	c.once.Do(func() { close(c.called) })
	return c.Context.Done()
}

// waitBlocked waits until a call made with c waits on it.
func waitBlocked(t *testing.T, c *doneWatch, what string) {
	t.Helper()
	select {
	case <-c.called:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not reach its wait", what)
	}
}

type lockResult struct {
	l   *mutex.Lease
	err error
}

func receive(t *testing.T, ch <-chan lockResult, what string) lockResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return", what)
		return lockResult{}
	}
}

// TestSameOwnerConcurrentLocksShareOneNode: two goroutines lock with the
// same explicit owner while the lock is held elsewhere. They are one
// holder: the second waits for the first's acquisition instead of queueing
// behind it (which deadlocked), both get the same Lease, and one node is
// ever created for them.
func TestSameOwnerConcurrentLocksShareOneNode(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const path = "/locks/sameowner"
	holderC := connect(t, zkc.Servers())
	ownerC := connect(t, zkc.Servers())
	hm := newMutex(t, holderC, path)
	om := newMutex(t, ownerC, path)
	_, err := hm.Acquire(ctx)
	require.NoError(t, err)

	job := mutex.WithOwner(ctx, "job")
	before := (*engine.Client)(ownerC).Stats()
	got := make(chan lockResult, 2)
	lock := func(ctx context.Context) {
		l, err := om.Acquire(ctx)
		got <- lockResult{l, err}
	}
	go lock(job)
	waitQueued(t, hm, 2)

	// The owner's Lock is queued behind another holder: TryLock by the
	// same owner does not wait for it, and queues nothing.
	_, err = om.TryAcquire(job)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired)

	second := newDoneWatch(job)
	go lock(second)
	waitBlocked(t, second, "the second Lock")
	ps, err := hm.Participants(ctx)
	require.NoError(t, err)
	assert.Len(t, ps, 2, "the second Lock queued no node of its own")

	require.NoError(t, hm.Release(ctx))
	r1 := receive(t, got, "a same-owner Lock (deadlock?)")
	r2 := receive(t, got, "a same-owner Lock (deadlock?)")
	require.NoError(t, r1.err)
	require.NoError(t, r2.err)
	require.Same(t, r1.l, r2.l, "one owner, one Lease")
	l := r1.l
	assert.Equal(t, 2, l.Count())
	assert.Equal(t, uint64(1), (*engine.Client)(ownerC).Stats().Sub(before).Creates, "exactly one node created for the owner")
	assert.Len(t, children(t, holderC, path), 1)

	require.NoError(t, om.Release(job))
	assert.Equal(t, 1, l.Count())
	assertOpen(t, l.Done(), "one hold left")
	assert.Len(t, children(t, holderC, path), 1)
	require.NoError(t, om.Release(job))
	assertClosed(t, l.Done(), "Done closes on the last Unlock")
	assert.Empty(t, children(t, holderC, path))
	assert.ErrorIs(t, om.Release(job), recipes.ErrNotHeld)
}

// TestSameOwnerRetriesWhenFirstAttemptFails: a same-owner Lock waiting for
// the owner's acquisition in flight honours its own context, and makes its
// own attempt when the one in flight fails.
func TestSameOwnerRetriesWhenFirstAttemptFails(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const path = "/locks/sameowner-retry"
	holderC := connect(t, zkc.Servers())
	ownerC := connect(t, zkc.Servers())
	hm := newMutex(t, holderC, path)
	om := newMutex(t, ownerC, path)
	_, err := hm.Acquire(ctx)
	require.NoError(t, err)

	job := mutex.WithOwner(ctx, "job")
	lock := func(ctx context.Context, got chan<- lockResult) {
		l, err := om.Acquire(ctx)
		got <- lockResult{l, err}
	}
	firstCtx, cancelFirst := context.WithCancel(job)
	defer cancelFirst()
	first := make(chan lockResult, 1)
	go lock(firstCtx, first)
	waitQueued(t, hm, 2)
	ps, err := hm.Participants(ctx)
	require.NoError(t, err)
	firstNode := filepath.Base(ps[1].Node)

	impatientCtx, cancelImpatient := context.WithCancel(job)
	impatient := newDoneWatch(impatientCtx)
	impatientGot := make(chan lockResult, 1)
	go lock(impatient, impatientGot)
	waitBlocked(t, impatient, "the impatient Lock")
	cancelImpatient()
	assert.ErrorIs(t, receive(t, impatientGot, "the cancelled Lock").err, context.Canceled)
	ps, err = hm.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, firstNode, filepath.Base(ps[1].Node), "the first attempt goes on")

	second := newDoneWatch(job)
	secondGot := make(chan lockResult, 1)
	go lock(second, secondGot)
	waitBlocked(t, second, "the second Lock")
	cancelFirst()
	assert.ErrorIs(t, receive(t, first, "the first Lock").err, context.Canceled)
	eventually(t, 10*time.Second, "the second Lock queued a node of its own", func() bool {
		ps, err := hm.Participants(ctx)
		return err == nil && len(ps) == 2 && filepath.Base(ps[1].Node) != firstNode
	})
	require.NoError(t, hm.Release(ctx))
	r := receive(t, secondGot, "the second Lock")
	require.NoError(t, r.err)
	assert.Equal(t, 1, r.l.Count())
	require.NoError(t, om.Release(job))
	assert.Empty(t, children(t, holderC, path))
}

// TestLeaseUnlockFromAnotherGoroutine: a goroutine-owned lock is released
// through its Lease from another goroutine, one hold at a time, and the
// next waiter gets it.
func TestLeaseUnlockFromAnotherGoroutine(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const path = "/locks/lease-unlock"
	a := connect(t, zkc.Servers())
	b := connect(t, zkc.Servers())
	am := newMutex(t, a, path)
	bm := newMutex(t, b, path)

	leases := make(chan lockResult)
	go func() { // goroutine A, the owner: locks twice and leaves
		l, err := am.Acquire(ctx)
		if err == nil {
			l, err = am.Acquire(ctx)
		}
		leases <- lockResult{l, err}
	}()
	r := receive(t, leases, "goroutine A's Lock")
	require.NoError(t, r.err)
	l := r.l
	assert.Equal(t, 2, l.Count())
	assert.ErrorIs(t, am.Release(ctx), recipes.ErrNotOwner, "this goroutine is not the owner")

	bOwner := mutex.WithOwner(ctx, "b")
	bGot := make(chan lockResult, 1)
	go func() {
		l, err := bm.Acquire(bOwner)
		bGot <- lockResult{l, err}
	}()
	waitQueued(t, am, 2)

	require.NoError(t, l.Release(ctx))
	assert.Equal(t, 1, l.Count())
	assertOpen(t, l.Done(), "one hold left")
	assert.Len(t, children(t, a, path), 2)
	require.NoError(t, l.Release(ctx))
	rb := receive(t, bGot, "the waiter")
	require.NoError(t, rb.err)
	assertClosed(t, l.Done(), "released")
	assert.False(t, am.IsHeldInProcess())
	assert.ErrorIs(t, l.Release(ctx), recipes.ErrNotHeld, "fully released")
	require.NoError(t, rb.l.Release(ctx))

	// The owner locks again; the old Lease's Unlock leaves the new hold be.
	go func() {
		l, err := am.Acquire(ctx)
		leases <- lockResult{l, err}
	}()
	r = receive(t, leases, "the new Lock")
	require.NoError(t, r.err)
	assert.NotSame(t, l, r.l)
	assert.ErrorIs(t, l.Release(ctx), recipes.ErrNotHeld)
	assert.Equal(t, 1, r.l.Count())
	require.NoError(t, r.l.Release(ctx))
	assert.Empty(t, children(t, a, path))

	var nilLease *mutex.Lease
	assert.ErrorIs(t, nilLease.Release(ctx), recipes.ErrInvalidArgument)
	assert.ErrorIs(t, (&mutex.Lease{}).Release(ctx), recipes.ErrInvalidArgument)
}

// TestNoGoroutineIDNeverMergesOwners: when the goroutine id cannot be
// read, calls without an explicit owner fail instead of sharing one owner.
func TestNoGoroutineIDNeverMergesOwners(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const path = "/locks/no-goid"
	c := connect(t, zkc.Servers())
	m := newMutex(t, c, path)
	restore := mutex.SetGoroutineIDFunc(func() (uint64, error) {
		return 0, fmt.Errorf("%w: unreadable in this test", zkerr.ErrNoGoroutineID)
	})
	defer restore()

	_, err := m.Acquire(ctx)
	assert.ErrorIs(t, err, zkerr.ErrNoGoroutineID)
	assert.ErrorContains(t, err, "WithOwner")
	_, err = m.TryAcquire(ctx)
	assert.ErrorIs(t, err, zkerr.ErrNoGoroutineID)
	assert.ErrorIs(t, m.Release(ctx), zkerr.ErrNoGoroutineID)
	assert.False(t, m.IsHeld(ctx))
	assert.Empty(t, children(t, c, path), "nothing queued")

	own := mutex.WithOwner(ctx, "x")
	l, err := m.Acquire(own)
	require.NoError(t, err)
	assert.True(t, m.IsHeld(own))
	errc := make(chan error, 1)
	go func() { // another goroutine without an owner is refused, not merged
		_, err := m.TryAcquire(ctx)
		errc <- err
	}()
	assert.ErrorIs(t, <-errc, zkerr.ErrNoGoroutineID)
	assert.Equal(t, 1, l.Count())
	require.NoError(t, l.Release(ctx))
	assert.Empty(t, children(t, c, path))
}
