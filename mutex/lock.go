package mutex

import (
	"context"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Acquire blocks until the owner holds the lock, ctx ends, or the session
// is lost, and returns the owner's Lease. A timed acquire is a ctx with a
// deadline. When ctx ends Acquire
// returns at once, even with a request in flight, the error wraps
// ctx.Err(), and the caller's node is removed: at once, or, when its
// create was still in flight, as soon as the late reply comes. If the owner
// already holds the lock, Acquire counts one more hold on the same Lease
// and returns at once. If the owner's acquisition is in flight in another
// goroutine (an explicit owner), Acquire waits for it, within ctx, and then
// counts one more hold on the Lease it won; if that attempt fails, Acquire
// makes its own.
func (m *Mutex) Acquire(ctx context.Context) (*Lease, error) { return m.lock(ctx, true) }

// TryAcquire makes one attempt and never waits for another holder: it returns
// the lease, or an error wrapping ErrNotAcquired when someone else holds
// the lock (leaving no node behind), or ErrNotConnected when the client
// has no connection to a server. If the owner already holds the lock,
// TryAcquire counts one more hold. If the owner's acquisition is in flight
// in another goroutine: a TryAcquire in flight makes one attempt too, so
// TryAcquire waits for its outcome (within ctx) and counts one more hold
// if it won, or makes its own attempt if it did not; an Acquire in flight
// may be queued behind another holder, so TryAcquire returns
// ErrNotAcquired at once.
func (m *Mutex) TryAcquire(ctx context.Context) (*Lease, error) { return m.lock(ctx, false) }

// AcquireHold is Acquire returning the Lease as a recipes.Hold: it makes
// Mutex a Locker, for MultiLock.
func (m *Mutex) AcquireHold(ctx context.Context) (recipes.Hold, error) {
	l, err := m.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}

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
				return nil, nil, m.errorf("%w: release it first", recipes.ErrLockLost)
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
			return nil, nil, m.errorf("%w: the owner's Acquire is still waiting", recipes.ErrNotAcquired)
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
		m.armRevocation(l.hold.Path(), func() *Lease { return l })
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
		return nil, m.errorf("%w", recipes.ErrNotAcquired)
	}
	return &Lease{hold: engine.NewHold(m.e, ct.Path(), sig).Named(m.what()), m: m, ct: ct, sig: sig, owner: owner, count: 1}, nil
}

// Release releases one hold of the owner named by ctx (or the calling
// goroutine), as Curator's release(); the last one deletes the lock node
// (retrying in the background through connection problems). Release by an
// owner that does not hold the lock returns ErrNotOwner (someone else
// holds it here) or ErrNotHeld and releases nothing. If the session was
// lost while the lock was held, Release drops the whole hold, cleans up
// and returns an error wrapping ErrLockLost: the lock may have been
// someone else's for a while. Lease.Release does the same from any
// goroutine.
func (m *Mutex) Release(ctx context.Context) error {
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
			return m.errorf("%w: the lock is held by another owner than this goroutine (release from another goroutine with the Lease's own Release, or name an explicit owner with mutex.WithOwner)", recipes.ErrNotOwner)
		}
		return m.errorf("%w", recipes.ErrNotHeld)
	}
	return m.release(ctx, l)
}

// release releases one hold of l, for Mutex.Release and Lease.Release alike.
// m.mu is held on entry; release unlocks it.
func (m *Mutex) release(ctx context.Context, l *Lease) error {
	if l.count == 0 {
		m.mu.Unlock()
		return m.errorf("%w: the lease was released", recipes.ErrNotHeld)
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
	m.disarmRevocation(l.hold.Path())
	err := l.ct.Leave(ctx)
	if lost {
		return m.errorf("%w", recipes.ErrLockLost)
	}
	if err != nil {
		return m.errorf("%w", err)
	}
	return nil
}

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
