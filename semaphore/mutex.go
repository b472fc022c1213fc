package semaphore

import (
	"context"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Mutex is Curator's InterProcessSemaphoreMutex: a lock that is a
// semaphore with one lease. Unlike mutex.Mutex it is not reentrant and
// has no owner: a second Lock while the lock is held, by the same
// goroutine or another, waits like anyone else (until ctx ends), and
// Unlock releases it from any goroutine.
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

// Lock blocks until the lock is held, ctx ends or the session is lost.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) { return m.lock(ctx, true) }

// TryLock makes one attempt; ErrNotAcquired when the lock is held.
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) { return m.lock(ctx, false) }

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

// Unlock releases the lock held through this Mutex, from any goroutine
// (the lease's Close does the same). Without a hold it returns
// ErrNotHeld.
func (m *Mutex) Unlock(ctx context.Context) error {
	if m == nil || m.s == nil {
		return fmt.Errorf("%w: Mutex not made by NewMutex", recipes.ErrInvalidArgument)
	}
	m.mu.Lock()
	l := m.lease
	m.lease = nil
	m.mu.Unlock()
	if l == nil {
		return engine.Namedf("semaphore mutex "+m.s.path, "%w", ErrNotHeld)
	}
	return l.Close(ctx)
}

// Acquire is Lock without the lease, under Curator's name: with Release it
// makes Mutex a mutex.Locker.
func (m *Mutex) Acquire(ctx context.Context) error {
	_, err := m.Lock(ctx)
	return err
}

// Release is Unlock.
func (m *Mutex) Release(ctx context.Context) error { return m.Unlock(ctx) }

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
