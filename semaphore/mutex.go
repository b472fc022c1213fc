package semaphore

import (
	"context"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Mutex is Curator's InterProcessSemaphoreMutex: a lock that is a
// semaphore with one lease. Unlike mutex.Mutex it is not reentrant and
// has no owner: a second Acquire while the lock is held, by the same
// goroutine or another, waits like anyone else (until ctx ends), and
// Release releases it from any goroutine.
type Mutex struct {
	s *Semaphore

	mu    sync.Mutex
	lease *Lease // held through this Mutex
}

// NewMutex returns a semaphore mutex at path. It does not touch ZooKeeper.
func NewMutex(c *recipes.Client, path string, opts ...Option) (*Mutex, error) {
	s, err := New(c, path, 1, opts...)
	if err != nil {
		return nil, err
	}
	return &Mutex{s: s}, nil
}

// Acquire blocks until the lock is held, ctx ends or the session is lost.
func (m *Mutex) Acquire(ctx context.Context) (*Lease, error) { return m.lock(ctx, true) }

// TryAcquire makes one attempt; ErrNotAcquired when the lock is held.
func (m *Mutex) TryAcquire(ctx context.Context) (*Lease, error) { return m.lock(ctx, false) }

// AcquireHold is Acquire returning the Lease as a recipes.Hold: it makes
// Mutex a mutex.Locker, for MultiLock.
func (m *Mutex) AcquireHold(ctx context.Context) (recipes.Hold, error) {
	l, err := m.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (m *Mutex) lock(ctx context.Context, wait bool) (*Lease, error) {
	if m == nil || m.s == nil {
		return nil, fmt.Errorf("%w: Mutex not made by NewMutex", recipes.ErrInvalidArgument)
	}
	ls, err := m.s.acquire(ctx, 1, wait)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.lease = ls[0]
	m.mu.Unlock()
	return ls[0], nil
}

// Release releases the lock held through this Mutex, from any goroutine
// (the lease's Release does the same). Without a hold it returns
// ErrNotHeld.
func (m *Mutex) Release(ctx context.Context) error {
	if m == nil || m.s == nil {
		return fmt.Errorf("%w: Mutex not made by NewMutex", recipes.ErrInvalidArgument)
	}
	m.mu.Lock()
	l := m.lease
	m.lease = nil
	m.mu.Unlock()
	if l == nil {
		return zkerr.Namedf("semaphore mutex "+m.s.path, "%w", recipes.ErrNotHeld)
	}
	return l.Release(ctx)
}

// IsHeld reports whether the lock is held through this Mutex, and not
// lost. It has mutex.Mutex.IsHeld's shape, but this lock has no owner, so
// ctx names none and is not read: it answers as IsHeldInProcess does.
func (m *Mutex) IsHeld(ctx context.Context) bool { return m.IsHeldInProcess() }

// IsHeldInProcess reports whether the lock is held through this Mutex,
// and not lost (Curator's isAcquiredInThisProcess).
func (m *Mutex) IsHeldInProcess() bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease != nil && !m.lease.isClosed() && !m.lease.IsLost()
}
