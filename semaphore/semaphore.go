// Package semaphore is Curator's InterProcessSemaphoreV2 on ZooKeeper: a
// counting semaphore whose leases are ephemeral nodes, fair and herd-free,
// with a maximum that is fixed or read from a shared.Count that may
// change at run time; plus SemaphoreMutex, a non-reentrant lock made of a
// one-lease semaphore; and V1, Curator's deprecated InterProcessSemaphore,
// to share one with the Java services that still use it (see V1 for its
// layout and why Semaphore is better).
//
// The nodes are Curator's: an internal mutex at <path>/locks
// (_c_<uuid>-lock-<seq>) and the leases at <path>/leases
// (_c_<uuid>-lease-<seq>), ephemeral sequential under container parents,
// so Go and Java processes can share a semaphore. An acquirer takes the
// internal mutex, creates its lease node and lists the leases with a
// watch: within the maximum, it holds the lease and releases the mutex;
// over it, it alone waits for the watch (a lease going) or for the maximum
// to change, while the other acquirers wait in the mutex's queue, each
// watching only the one ahead. Leases are then independent of the mutex
// and of each other.
//
// A lease is only as good as the session behind it: Lease.Done closes
// when it may be gone (SUSPENDED or LOST under the client's Standard
// error policy, LOST only under the Session policy), Lease.Token is a
// fencing token (the lease node's czxid) and Lease.Fenced makes ZooKeeper
// writes conditional on the lease node still existing.
//
// # What it does not guarantee
//
// That at most the maximum hold at once in the eyes of the processes: a
// holder paused past its session timeout resumes after its lease was freed
// and taken, so guard what the leases ration with Lease.Fenced or the
// token (see the recipes package doc). When the maximum shrinks, leases
// already held are kept: the count falls below the new maximum only as
// they are released. Like Curator's, the maximum is the acquirers' to
// agree on: a client that asks for another fixed maximum on the same path
// applies its own. A crashed holder's lease is freed one session timeout
// later.
//
// # ACLs
//
// The locks and leases containers, their lock and lease nodes, and the
// missing parents get the Client's ACLs (recipes.WithACLProvider); a
// client they leave out cannot take a lease, whatever maximum it believes
// in: Acquire and TryAcquire fail at once with an error wrapping
// recipes.ErrNoAuth. See docs/security.md.
package semaphore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/lockspec"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/shared"
)

// Node names, as Curator's InterProcessSemaphoreV2 names them.
const (
	LockParent  = "locks"  // the internal mutex, under the semaphore path
	LeaseParent = "leases" // the leases, under the semaphore path
	LeaseName   = "lease-" // in lease node names: _c_<uuid>-lease-<seq>
)

// Option configures a Semaphore.
type Option func(*options) error

type options struct {
	data []byte
}

// WithData sets the data of every lease node (Curator's nodeData). The
// default, as in Curator, is this host's IP address as text.
func WithData(data []byte) Option {
	return func(o *options) error {
		o.data = append([]byte(nil), data...)
		return nil
	}
}

// Semaphore is a counting semaphore at one path.
type Semaphore struct {
	c      *recipes.Client
	path   string
	leases string // server path of the leases parent
	lock   *mutex.Mutex
	driver *contend.Driver // leaseDriver's rules, measured as this semaphore
	limit  engine.Limit
	fixed  bool // the maximum never changes (New, not NewWithCount)
	opts   options
}

var leaseDriver = &contend.Driver{Names: []string{LeaseName}}

// New returns a semaphore at path with at most maxLeases leases held at
// once. It does not touch ZooKeeper.
func New(c *recipes.Client, path string, maxLeases int, opts ...Option) (*Semaphore, error) {
	if maxLeases <= 0 {
		return nil, fmt.Errorf("%w: maxLeases %d", recipes.ErrInvalidArgument, maxLeases)
	}
	s, err := newSemaphore(c, path, engine.FixedLimit(maxLeases), opts)
	if err != nil {
		return nil, err
	}
	s.fixed = true
	return s, nil
}

// NewWithCount returns a semaphore at path whose maximum is count's value,
// read as it changes: when it shrinks, no lease is granted until the
// leases are under the new maximum (the leases held are kept); when it
// grows, a waiter is woken at once. Acquiring more leases than the
// current maximum waits for it to grow (New refuses that as bad input).
// Start the count before acquiring: until then its value is its seed.
// The semaphore follows the count until the count is closed.
func NewWithCount(c *recipes.Client, path string, count *shared.Count, opts ...Option) (*Semaphore, error) {
	if count.Path() == "" {
		return nil, fmt.Errorf("%w: shared.Count not made by shared.NewCount", recipes.ErrInvalidArgument)
	}
	l := &countLimit{count: count, changed: make(chan struct{})}
	s, err := newSemaphore(c, path, l.limit, opts)
	if err != nil {
		return nil, err
	}
	count.Listen(l.wake) // removed when the count closes
	return s, nil
}

// countLimit is a SharedCount as an engine.Limit.
type countLimit struct {
	count   *shared.Count
	mu      sync.Mutex
	changed chan struct{} // closed when the count has a new version, then replaced
}

func (l *countLimit) limit() (int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count.Get(), l.changed
}

// wake is the count's listener: it runs after the count's cache took the
// new value, so a waiter that read the old value with the old channel is
// woken.
func (l *countLimit) wake(shared.VersionedValue[int]) {
	l.mu.Lock()
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

func newSemaphore(c *recipes.Client, path string, limit engine.Limit, opts []Option) (*Semaphore, error) {
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
	// The internal lock is not measured: its wait counts in the lease's.
	lock, err := lockspec.NewMutex(c, zkpath.JoinPath(path, LockParent), lockspec.Spec{
		LockName: mutex.LockName,
		Driver:   &contend.Driver{Names: []string{mutex.LockName}},
	}, nil)
	if err != nil {
		return nil, err
	}
	driver := &contend.Driver{Names: leaseDriver.Names, Recipe: "semaphore", Path: (*engine.Client)(c).Namespace().Strip(full)}
	return &Semaphore{c: c, path: path, leases: zkpath.JoinPath(full, LeaseParent), lock: lock.(*mutex.Mutex),
		driver: driver, limit: limit, opts: o}, nil
}

// Path returns the semaphore path as given to New.
func (s *Semaphore) Path() string { return s.path }

// MaxLeases returns the current maximum.
func (s *Semaphore) MaxLeases() int {
	if s == nil || s.limit == nil {
		return 0
	}
	n, _ := s.limit()
	return n
}

func (s *Semaphore) check(ctx context.Context, n int) error {
	if s == nil || s.c == nil {
		return fmt.Errorf("%w: Semaphore not made by New", recipes.ErrInvalidArgument)
	}
	return checkAcquire(ctx, s.c, "semaphore "+s.path, n, s.fixed, s.MaxLeases())
}

// checkAcquire checks an acquisition of n leases of a semaphore (what
// names it) whose maximum is max, fixed or not.
func checkAcquire(ctx context.Context, c *recipes.Client, what string, n int, fixed bool, max int) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	if n <= 0 {
		return zkerr.Namedf(what, "%w: %d leases", recipes.ErrInvalidArgument, n)
	}
	if fixed && n > max {
		// With a shared count the maximum may grow: AcquireN waits for it.
		return zkerr.Namedf(what, "%w: %d leases of at most %d", recipes.ErrInvalidArgument, n, max)
	}
	return zkerr.Named(what, (*engine.Client)(c).Check())
}

// takeN takes n leases, one at a time, all or nothing: when one fails,
// those taken are returned (Curator's acquire(qty)).
func takeN(ctx context.Context, n int, what string, one func() (*Lease, error)) ([]*Lease, error) {
	out := make([]*Lease, 0, n)
	for len(out) < n {
		l, err := one()
		if err != nil {
			if rerr := ReleaseAll(context.WithoutCancel(ctx), out); rerr != nil {
				err = errors.Join(err, rerr)
			}
			return nil, zkerr.Named(what, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// Acquire blocks until it holds one lease, and returns it (Curator's
// acquire()). When ctx ends (a timed acquire is a ctx with a deadline),
// the session is lost or anything else fails, no node is left behind and
// the error says why (wrapping ctx.Err() when ctx ended).
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	ls, err := s.acquire(ctx, 1, true)
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// AcquireN blocks until it holds n leases, and returns them (Curator's
// acquire(qty)). It is all or nothing: when ctx ends, the session is lost
// or anything else fails, every lease taken so far is returned, no node is
// left behind, and the error says why (wrapping ctx.Err() when ctx ended).
func (s *Semaphore) AcquireN(ctx context.Context, n int) ([]*Lease, error) {
	return s.acquire(ctx, n, true)
}

// TryAcquire makes one attempt at one lease: it returns an error wrapping
// recipes.ErrNotAcquired when no lease is free, or when another acquirer holds
// the internal lock (one is waiting, or about to take a lease), as
// Curator's zero-wait tryAcquire does.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Lease, error) {
	ls, err := s.acquire(ctx, 1, false)
	if err != nil {
		return nil, err
	}
	return ls[0], nil
}

// TryAcquireN makes one attempt at n leases, all or nothing, as
// TryAcquire does for one: recipes.ErrNotAcquired when there are not enough free
// leases or the internal lock is held.
func (s *Semaphore) TryAcquireN(ctx context.Context, n int) ([]*Lease, error) {
	return s.acquire(ctx, n, false)
}

func (s *Semaphore) acquire(ctx context.Context, n int, wait bool) ([]*Lease, error) {
	if err := s.check(ctx, n); err != nil {
		return nil, err
	}
	return takeN(ctx, n, "semaphore "+s.path, func() (*Lease, error) { return s.acquireOne(ctx, wait) })
}

// acquireOne takes one lease: the internal lock, a lease node, the count.
func (s *Semaphore) acquireOne(ctx context.Context, wait bool) (*Lease, error) {
	began := time.Now()
	octx := mutex.WithOwner(ctx, new(byte)) // each acquisition its own owner
	var (
		lk  *mutex.Lease
		err error
	)
	if wait {
		lk, err = s.lock.Acquire(octx)
	} else {
		lk, err = s.lock.TryAcquire(octx)
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = lk.Release(context.WithoutCancel(ctx)) }()
	for {
		ct, err := (*engine.Client)(s.c).Enter(ctx, s.leases, LeaseName, s.opts.data, s.driver, engine.EnterWaitingSince(began))
		if err != nil {
			return nil, err
		}
		sig, err := ct.AwaitCount(ctx, s.limit, wait)
		if err == nil {
			return newLease(s.c, "semaphore "+s.path, ct, sig), nil
		}
		_ = ct.Leave(context.WithoutCancel(ctx))
		if errors.Is(err, recipes.ErrLockLost) && ctx.Err() == nil {
			continue // our lease node vanished (deleted by someone): make another, as Curator does
		}
		return nil, err
	}
}

// Participants returns the lease nodes, held or being acquired, in
// sequence order, with their data as ID (Curator's getParticipantNodes,
// with the data read too); Holds marks the first MaxLeases of them.
func (s *Semaphore) Participants(ctx context.Context) ([]recipes.Participant, error) {
	if s == nil || s.c == nil {
		return nil, fmt.Errorf("%w: Semaphore not made by New", recipes.ErrInvalidArgument)
	}
	if err := (*engine.Client)(s.c).Check(); err != nil {
		return nil, zkerr.Named("semaphore "+s.path, err)
	}
	d := &contend.Driver{Names: leaseDriver.Names, Leases: s.MaxLeases()}
	ms, err := (*engine.Client)(s.c).ReadQueue(ctx, s.leases, d, nil)
	if err != nil {
		return nil, zkerr.Namedf("semaphore "+s.path, "participants: %w", err)
	}
	return recipeargs.Participants(ms, nil), nil
}
