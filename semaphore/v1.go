package semaphore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/shared"
)

// V1 is Curator's InterProcessSemaphore, the first semaphore, deprecated
// in Curator for InterProcessSemaphoreV2 (Semaphore here) but still run by
// Java services: use it to share such a semaphore with them, and
// Semaphore for anything new.
//
// It is Curator's lock queue with more than one holder: every lease is a
// node _c_<uuid>-lock-<seq> (ephemeral sequential) directly under the
// semaphore path, the name and sort of InterProcessMutex's nodes (a V1
// with one lease queues as a mutex.Mutex at the same path does, without
// its reentrancy). A lease is held when fewer than the maximum nodes sort
// ahead of it; otherwise it watches the node that many places ahead
// (getData with a watch), so one release wakes one waiter.
//
// Prefer Semaphore (V2), whose nodes are elsewhere (locks/ and leases/
// under the path: the two never share a semaphore), because in V1:
//
//   - Leases released out of order stay unused: with a maximum of 2 and
//     nodes A, B, C, the waiter C watches A; when B is released C could
//     hold, but is not woken until A goes. V2's waiter counts the leases
//     and is woken by any release.
//   - Leases and waiters are one queue: when a waiter gets a lease
//     depends on which holder is the maximum places ahead of it, not on
//     how many leases are free.
//   - A shared count's change reaches only the waiters of processes that
//     follow the count (as in Curator), each looking again at its queue.
//
// Leases are the same Lease as Semaphore's: Done, Token (the node's
// czxid), Fenced and Release, with the same guarantees and limits (see
// the package doc).
type V1 struct {
	c      *recipes.Client
	path   string
	full   string          // server path
	driver *contend.Driver // the lock queue with Leases holders (New), or for sorting (NewWithCount)
	limit  engine.Limit
	fixed  bool
	opts   options
}

// NewV1 returns Curator's InterProcessSemaphore (v1) at path with at most
// maxLeases leases held at once. Every process on the path must use the
// same maximum. It does not touch ZooKeeper.
func NewV1(c *recipes.Client, path string, maxLeases int, opts ...Option) (*V1, error) {
	if maxLeases <= 0 {
		return nil, fmt.Errorf("%w: maxLeases %d", recipes.ErrInvalidArgument, maxLeases)
	}
	s, err := newV1(c, path, engine.FixedLimit(maxLeases), opts)
	if err != nil {
		return nil, err
	}
	s.fixed, s.driver.Leases = true, maxLeases
	return s, nil
}

// NewV1WithCount returns Curator's InterProcessSemaphore (v1) at path
// whose maximum is count's value (Curator's SharedCountReader
// constructor). A waiter looks at its queue again when the count
// changes; leases held are kept when it shrinks; a maximum of 0 or less
// grants no lease. Start the count before acquiring.
func NewV1WithCount(c *recipes.Client, path string, count *shared.Count, opts ...Option) (*V1, error) {
	if count.Path() == "" {
		return nil, fmt.Errorf("%w: shared.Count not made by shared.NewCount", recipes.ErrInvalidArgument)
	}
	l := &countLimit{count: count, changed: make(chan struct{})}
	s, err := newV1(c, path, l.limit, opts)
	if err != nil {
		return nil, err
	}
	count.Listen(l.wake)
	return s, nil
}

func newV1(c *recipes.Client, path string, limit engine.Limit, opts []Option) (*V1, error) {
	full, err := recipeargs.Path(c, path, "a semaphore path")
	if err != nil {
		return nil, err
	}
	var o options
	if err := recipeargs.Options(&o, opts); err != nil {
		return nil, err
	}
	if o.data == nil {
		o.data = []byte(recipeargs.LocalIP())
	}
	d := &contend.Driver{Names: []string{mutex.LockName}, Recipe: "semaphore_v1", Path: (*engine.Client)(c).Namespace().Strip(full)}
	return &V1{c: c, path: path, full: full, driver: d, limit: limit, opts: o}, nil
}

// Path returns the semaphore path as given to NewV1.
func (s *V1) Path() string { return s.path }

// MaxLeases returns the current maximum.
func (s *V1) MaxLeases() int {
	if s == nil || s.limit == nil {
		return 0
	}
	n, _ := s.limit()
	return n
}

func (s *V1) what() string { return "semaphore v1 " + s.path }

// Acquire blocks until it holds one lease, and returns it (Curator's
// acquire()). When ctx ends, the session is lost or anything else fails,
// no node is left behind and the error says why (wrapping ctx.Err() when
// ctx ended).
func (s *V1) Acquire(ctx context.Context) (*Lease, error) {
	ls, err := s.acquire(ctx, 1, true)
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// AcquireN blocks until it holds n leases, all or nothing, as
// Semaphore.AcquireN (Curator's acquire(qty)).
func (s *V1) AcquireN(ctx context.Context, n int) ([]*Lease, error) {
	return s.acquire(ctx, n, true)
}

// TryAcquire makes one attempt at one lease: an error wrapping
// recipes.ErrNotAcquired when the maximum of nodes sort ahead of its own.
func (s *V1) TryAcquire(ctx context.Context) (*Lease, error) {
	ls, err := s.acquire(ctx, 1, false)
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// TryAcquireN makes one attempt at n leases, all or nothing.
func (s *V1) TryAcquireN(ctx context.Context, n int) ([]*Lease, error) {
	return s.acquire(ctx, n, false)
}

func (s *V1) acquire(ctx context.Context, n int, wait bool) ([]*Lease, error) {
	if s == nil || s.c == nil {
		return nil, fmt.Errorf("%w: V1 not made by NewV1", recipes.ErrInvalidArgument)
	}
	if err := checkAcquire(ctx, s.c, s.what(), n, s.fixed, s.MaxLeases()); err != nil {
		return nil, err
	}
	return takeN(ctx, n, s.what(), func() (*Lease, error) { return s.acquireOne(ctx, wait) })
}

// acquireOne is Curator's LockInternals.attemptLock with maxLeases: a
// node in the queue, then the engine's wait (or, with a shared count, one
// that looks again when the count changes). A node deleted by someone
// else while waiting is made again, as Curator does.
func (s *V1) acquireOne(ctx context.Context, wait bool) (*Lease, error) {
	began := time.Now()
	for {
		ct, err := (*engine.Client)(s.c).Enter(ctx, s.full, mutex.LockName, s.opts.data, s.driver, engine.EnterWaitingSince(began))
		if err != nil {
			return nil, err
		}
		var sig engine.Signals
		if s.fixed {
			var held bool
			held, sig, err = ct.Acquire(ctx, wait) // leaves unless held
			if err == nil && !held {
				err = fmt.Errorf("%w: %d leases taken", recipes.ErrNotAcquired, s.MaxLeases())
			}
		} else {
			sig, err = s.awaitCount(ctx, ct, wait)
			if err != nil {
				_ = ct.Leave(context.WithoutCancel(ctx))
			}
		}
		if err == nil {
			return newLease(s.c, s.what(), ct, sig), nil
		}
		if errors.Is(err, recipes.ErrLockLost) && ctx.Err() == nil {
			continue
		}
		return nil, err
	}
}

// Participants returns the lease nodes, held or waiting, in Curator's
// order, with their data as ID; Holds marks the first MaxLeases of them
// (Curator's getParticipantNodes, with the data read too). Leases kept
// after a shared count shrank may be held beyond the marked ones.
func (s *V1) Participants(ctx context.Context) ([]recipes.Participant, error) {
	if s == nil || s.c == nil {
		return nil, fmt.Errorf("%w: V1 not made by NewV1", recipes.ErrInvalidArgument)
	}
	if err := (*engine.Client)(s.c).Check(); err != nil {
		return nil, zkerr.Named(s.what(), err)
	}
	n := s.MaxLeases()
	d := &contend.Driver{Names: s.driver.Names, Leases: n}
	ms, err := (*engine.Client)(s.c).ReadQueue(ctx, s.full, d, nil)
	if err != nil {
		return nil, zkerr.Namedf(s.what(), "participants: %w", err)
	}
	ps := recipeargs.Participants(ms, nil)
	for i := range ps {
		ps[i].Holds = ps[i].Holds && n > 0 // a shared count of 0 grants nothing
	}
	return ps, nil
}
