package mutex

import (
	"context"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Lock blocks until the owner holds the lock, ctx ends, or the session is
// lost. A timed acquire is a ctx with a deadline. When ctx ends Lock
// returns at once, even with a request in flight, the error wraps
// ctx.Err(), and the caller's node is removed: at once, or, when its
// create was still in flight, as soon as the late reply comes. If the owner
// already holds the lock, Lock counts one more hold and returns at once.
// If the owner's acquisition is in flight in another goroutine (an
// explicit owner), Lock waits for it, within ctx, and then counts one more
// hold on the Lease it won; if that attempt fails, Lock makes its own.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) { return m.lock(ctx, true) }

// TryLock makes one attempt and never waits for another holder: it returns
// the lease, or an error wrapping ErrNotAcquired when someone else holds
// the lock (leaving no node behind), or ErrNotConnected when the client
// has no connection to a server. If the owner already holds the lock,
// TryLock counts one more hold. If the owner's acquisition is in flight in
// another goroutine: a TryLock in flight makes one attempt too, so TryLock
// waits for its outcome (within ctx) and counts one more hold if it won,
// or makes its own attempt if it did not; a Lock in flight may be queued
// behind another holder, so TryLock returns ErrNotAcquired at once.
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) { return m.lock(ctx, false) }

func (m *Mutex) lock(ctx context.Context, wait bool) (*Lease, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return nil, m.errorf("%w", err)
	}
	a, l, err := m.join(ctx, owner, wait)
	if a == nil {
		return l, err
	}
	l, err = m.acquire(ctx, owner, wait)
	m.mu.Lock()
	delete(m.pending, owner)
	if l != nil {
		m.holds[owner] = l
	}
	close(a.done) // waiters look again: they re-enter l, or try themselves
	m.mu.Unlock()
	return l, err
}

// join settles a lock call against the owner's state in this Mutex: it
// re-enters the owner's hold (returning the Lease), or waits for the
// owner's acquisition in flight and looks again, or registers a new
// attempt and returns it for the caller to make.
func (m *Mutex) join(ctx context.Context, owner any, wait bool) (*attempt, *Lease, error) {
	m.mu.Lock()
	for {
		if l := m.holds[owner]; l != nil {
			defer m.mu.Unlock()
			if l.IsLost() {
				return nil, nil, m.errorf("%w: unlock it first", ErrLockLost)
			}
			l.count++
			return nil, l, nil
		}
		a := m.pending[owner]
		if a == nil {
			break
		}
		m.mu.Unlock()
		if !wait && a.wait {
			return nil, nil, m.errorf("%w: the owner's Lock is still waiting", ErrNotAcquired)
		}
		select {
		case <-a.done:
		case <-ctx.Done():
			return nil, nil, m.errorf("waiting for the owner's acquisition in flight: %w", ctx.Err())
		}
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	a := &attempt{wait: wait, done: make(chan struct{})}
	if m.pending == nil {
		m.pending = map[any]*attempt{}
	}
	m.pending[owner] = a
	return a, nil, nil
}

// acquire queues a node and waits (or, with wait false, checks once) until
// it holds the lock.
func (m *Mutex) acquire(ctx context.Context, owner any, wait bool) (*Lease, error) {
	if m.opts.local > 0 {
		return m.acquireLocal(ctx, owner, wait)
	}
	l, err := m.acquireNode(ctx, owner, wait)
	if l != nil {
		m.armRevocation(l.Node(), func() *Lease { return l })
	}
	return l, err
}

// acquireNode queues a node of the owner's in the ZooKeeper queue.
func (m *Mutex) acquireNode(ctx context.Context, owner any, wait bool) (*Lease, error) {
	if !wait && !m.c.State().IsConnected() {
		// One attempt cannot succeed without a server: say so at once
		// instead of retrying the create until ctx ends.
		return nil, m.errorf("%w (%v)", recipes.ErrNotConnected, m.c.State())
	}
	var eopts []engine.EnterOption
	if m.prepare != nil {
		var err error
		if eopts, err = m.prepare(owner); err != nil {
			return nil, m.errorf("%w", err)
		}
	}
	ct, err := m.e.Enter(ctx, m.full, m.lockName, m.opts.data, m.driver, eopts...)
	if err != nil {
		return nil, m.errorf("%w", err)
	}
	held, sig, err := ct.Acquire(ctx, wait)
	if err != nil {
		return nil, m.errorf("%w", err)
	}
	if !held {
		return nil, m.errorf("%w", ErrNotAcquired)
	}
	return &Lease{hold: engine.NewHold(m.e, ct.Path(), sig), m: m, ct: ct, sig: sig, owner: owner, count: 1}, nil
}

// Unlock releases one hold of the owner; the last one deletes the lock node
// (retrying in the background through connection problems). Unlock by an
// owner that does not hold the lock returns ErrNotOwner (someone else
// holds it here) or ErrNotHeld and releases nothing. If the session was
// lost while the lock was held, Unlock drops the whole hold, cleans up and
// returns an error wrapping ErrLockLost: the lock may have been someone
// else's for a while. Lease.Unlock does the same from any goroutine.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.check(ctx); err != nil {
		return err
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return m.errorf("%w", err)
	}
	m.mu.Lock()
	l := m.holds[owner]
	if l == nil {
		others := len(m.holds)
		m.mu.Unlock()
		if others > 0 {
			return m.errorf("%w: the lock is held by another owner than this goroutine (release from another goroutine with the Lease's own Unlock, or name an explicit owner with mutex.WithOwner)", ErrNotOwner)
		}
		return m.errorf("%w", ErrNotHeld)
	}
	return m.release(ctx, l)
}

// release releases one hold of l, for Mutex.Unlock and Lease.Unlock alike.
// m.mu is held on entry; release unlocks it.
func (m *Mutex) release(ctx context.Context, l *Lease) error {
	if l.count == 0 {
		m.mu.Unlock()
		return m.errorf("%w: the lease was released", ErrNotHeld)
	}
	lost := l.IsLost()
	if l.count--; l.count > 0 && !lost {
		m.mu.Unlock()
		return nil
	}
	l.count = 0
	if m.holds[l.owner] == l {
		delete(m.holds, l.owner)
	}
	if l.proc != nil && m.handOnLocked(l, lost) {
		m.mu.Unlock()
		l.hold.MarkReleased() // the node stays: a goroutine of this process holds it now
		return nil
	}
	m.mu.Unlock()

	l.hold.MarkReleased()
	m.disarmRevocation(l.Node())
	err := l.ct.Leave(ctx)
	if lost {
		return m.errorf("%w", ErrLockLost)
	}
	if err != nil {
		return m.errorf("%w", err)
	}
	return nil
}

// Acquire is Lock without the lease, under Curator's name; with Release it
// makes Mutex a Locker.
func (m *Mutex) Acquire(ctx context.Context) error {
	_, err := m.Lock(ctx)
	return err
}

// Release is Unlock under Curator's name.
func (m *Mutex) Release(ctx context.Context) error { return m.Unlock(ctx) }

// IsHeld reports whether the owner named by ctx (or the calling goroutine)
// holds the lock.
func (m *Mutex) IsHeld(ctx context.Context) bool {
	if m.check(ctx) != nil {
		return false
	}
	owner, err := ownerOf(ctx)
	if err != nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holds[owner] != nil
}

// IsHeldInProcess reports whether any owner in this process holds the lock
// through this Mutex (Curator's isAcquiredInThisProcess).
func (m *Mutex) IsHeldInProcess() bool {
	if m == nil || m.c == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.holds) > 0
}
