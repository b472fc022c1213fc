package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/gid"
	"github.com/zkrecipes/zkrecipes/internal/lifecycle"
	"github.com/zkrecipes/zkrecipes/internal/lockspec"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// LeadFunc runs while its participant leads. ctx is cancelled when the
// leadership may be lost (the term's Done: SUSPENDED or LOST under the
// client's error policy), at Interrupt and at Close; leadership is
// released when LeadFunc returns, so it must return promptly once ctx is
// done. An error it returns is logged.
type LeadFunc func(ctx context.Context, t *Term) error

// WithAutoRequeue makes a Selector queue again each time LeadFunc returns
// (or an attempt to lead fails), as Curator's autoRequeue does. An attempt
// the server refuses for want of rights (recipes.ErrNoAuth: the ACL of the
// path does not grant this client's credentials) is not retried: the
// selector stops queueing, logs the refusal at error level, and queues
// again at Requeue.
func WithAutoRequeue() Option {
	return func(o *options) error {
		if err := only(o, "WithAutoRequeue", "Selector"); err != nil {
			return err
		}
		o.autoRequeue = true
		return nil
	}
}

// Selector is Curator's LeaderSelector: a participant that queues for a
// mutex at its path, runs a LeadFunc while it holds it, and releases it
// when the function returns. Without WithAutoRequeue it leads once per Start
// or Requeue.
type Selector struct {
	c    *recipes.Client
	path string
	full string
	id   string
	fn   LeadFunc
	opts options
	m    *mutex.Mutex

	life      lifecycle.State // and its goroutine, run
	mu        sync.Mutex
	queued    bool // an attempt to lead is under way or asked for
	leading   *Term
	interrupt context.CancelFunc // of the running LeadFunc
	leadGID   uint64             // the goroutine running LeadFunc (0: none)
	wake      chan struct{}      // Requeue
	ctx       context.Context    // run's (run and leadOnce read it): cancelled by Close
}

// NewSelector returns a selector at path for participant id (its node's
// data) that runs fn while it leads. It does not touch ZooKeeper until
// Start.
func NewSelector(c *recipes.Client, path, id string, fn LeadFunc, opts ...Option) (*Selector, error) {
	if c == nil {
		return nil, recipes.ErrNilClient
	}
	if fn == nil {
		return nil, fmt.Errorf("%w: nil LeadFunc", recipes.ErrInvalidArgument)
	}
	if id == "" {
		return nil, zkerr.Namedf("leader selector "+path, "%w: empty participant id (the id is what Participants and Leader report)", recipes.ErrInvalidArgument)
	}
	o := options{recipe: "Selector"}
	if err := recipeargs.Options(&o, opts); err != nil {
		return nil, err
	}
	// The selector's lock is a mutex's, measured as the selector's.
	lock, err := lockspec.NewMutex(c, path, lockspec.Spec{
		LockName: mutex.LockName,
		Driver:   &contend.Driver{Names: []string{mutex.LockName}, Recipe: "selector"},
	}, []any{mutex.WithData([]byte(id))})
	if err != nil {
		return nil, err
	}
	m := lock.(*mutex.Mutex)
	full, _ := c.FullPath(path)
	return &Selector{c: c, path: path, full: full, id: id, fn: fn, opts: o, m: m,
		wake: make(chan struct{}, 1)}, nil
}

// ID returns the participant id.
func (s *Selector) ID() string { return s.id }

// Start queues for leadership and returns; the selector works in the
// background until Close. It makes no request itself: ctx is for the
// same lifecycle as every long-lived recipe (Start(ctx), Close(ctx)).
func (s *Selector) Start(ctx context.Context) error {
	if s == nil || s.c == nil {
		return notMadeSelector()
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return zkerr.Namedf("leader selector "+s.path, "%w", err)
	}
	if err := (*engine.Client)(s.c).Check(); err != nil {
		return zkerr.Named("leader selector "+s.path, err)
	}
	s.mu.Lock() // a Requeue sees it either not started or queued
	err := s.life.Start("leader selector " + s.path)
	if err == nil {
		s.queued = true
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.life.Go(context.Background(), "leader selector "+s.path, s.run)
}

// Requeue queues for leadership once more, if the selector is neither
// queued nor leading (Curator's requeue). It reports whether it queued.
func (s *Selector) Requeue() (bool, error) {
	if s == nil || s.c == nil {
		return false, notMadeSelector()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := (*engine.Client)(s.c).Check(); err != nil {
		return false, zkerr.Namedf("leader selector "+s.path, "%w", err) // a closed client
	}
	if err := s.life.Running("leader selector "+s.path, ""); err != nil {
		return false, err
	}
	if s.queued {
		return false, nil
	}
	s.queued = true
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true, nil
}

// Interrupt cancels the running LeadFunc's ctx, if any (Curator's
// interruptLeadership).
func (s *Selector) Interrupt() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.interrupt != nil {
		s.interrupt()
	}
}

// HasLeadership reports whether LeadFunc is running with an open term.
func (s *Selector) HasLeadership() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	t := s.leading
	s.mu.Unlock()
	return t != nil && !notify.IsClosed(t.Done())
}

func (s *Selector) run(ctx context.Context) {
	s.ctx = ctx
	owner := mutex.WithOwner(s.ctx, s) // the selector is the lock's owner
	for {
		s.mu.Lock()
		queued := s.queued
		s.mu.Unlock()
		if !queued {
			select {
			case <-s.wake:
				continue
			case <-s.ctx.Done():
				return
			}
		}
		led, err := s.leadOnce(owner)
		if s.ctx.Err() != nil {
			return
		}
		unsupported := !led && errors.Is(err, zkerr.ErrUnimplemented)
		refused := !led && zkerr.IsRefused(err) || unsupported
		switch {
		case unsupported: // the server is too old (containers): trying again cannot help
			s.c.Logger().Error("zkrecipes: leader selector: the server cannot run it; it stops queueing until Requeue",
				"path", s.path, "id", s.id, "err", err)
		case refused:
			s.c.Logger().Error("zkrecipes: leader selector: not authorised to queue; it stops queueing until Requeue (check WithAuth and the ACL of the path)",
				"path", s.path, "id", s.id, "err", err)
		case err != nil:
			s.c.Logger().Warn("zkrecipes: leader selector: attempt to lead failed", "path", s.path, "id", s.id, "err", err)
		}
		if !led { // (a term's end settles queued itself, before its release)
			s.mu.Lock()
			s.queued = s.opts.autoRequeue && !refused
			s.mu.Unlock()
		}
		if err != nil && s.opts.autoRequeue && !refused {
			// Do not spin while the connection is down.
			if werr := s.c.WaitConnected(s.ctx); werr != nil {
				return
			}
			t := time.NewTimer(retryDelay)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return
			}
		}
	}
}

const retryDelay = 20 * time.Millisecond

// leadOnce waits for the mutex, runs fn, releases; led says whether it
// led.
func (s *Selector) leadOnce(owner context.Context) (led bool, _ error) {
	lease, err := s.m.Acquire(owner)
	if err != nil {
		return false, err
	}
	released := make(chan struct{})
	defer close(released)
	term := newTerm(lease, s.id, nil)
	term.end = func(ctx context.Context) error { return s.releaseTerm(ctx, term, released) }
	tctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	s.leading, s.interrupt = term, cancel
	s.mu.Unlock()
	stop := context.AfterFunc(s.ctx, cancel)
	go func() {
		select {
		case <-term.Done():
			cancel()
		case <-tctx.Done():
		}
	}()
	ferr := s.runFn(tctx, term)
	cancel()
	stop()
	s.mu.Lock()
	s.leading, s.interrupt = nil, nil
	// Settled before the release, so that a Requeue made once the release
	// is visible is not undone (a race the Requeue test met).
	s.queued = s.opts.autoRequeue
	s.mu.Unlock()
	uerr := lease.Release(context.WithoutCancel(owner))
	if errors.Is(uerr, recipes.ErrLockLost) {
		uerr = nil // the term ended with the session; nothing is left to release
	}
	return true, errors.Join(ferr, uerr)
}

// releaseTerm is Term.Release for the selector's terms: it interrupts
// the LeadFunc of t, while t is the open term, and waits for the release
// of the lock (unless called by the LeadFunc itself, which would wait for
// itself).
func (s *Selector) releaseTerm(ctx context.Context, t *Term, released <-chan struct{}) error {
	s.mu.Lock()
	cur, interrupt, leader := s.leading, s.interrupt, s.leadGID
	s.mu.Unlock()
	if cur != t {
		return zkerr.Namedf("leader selector "+s.path, "%w: the term is over", recipes.ErrNotHeld)
	}
	interrupt()
	if leader != 0 && leader == gid.GoroutineID() {
		return nil
	}
	select {
	case <-released:
		return nil
	case <-ctx.Done():
		return zkerr.Namedf("leader selector "+s.path, "release: %w", ctx.Err())
	}
}

// runFn runs the LeadFunc. A panic in it is not recovered: it is the
// caller's bug, and crashes the process as in any goroutine, with its
// stack.
func (s *Selector) runFn(ctx context.Context, t *Term) (err error) {
	s.mu.Lock()
	s.leadGID = gid.GoroutineID()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.leadGID = 0
		s.mu.Unlock()
	}()
	if err := s.fn(ctx, t); err != nil {
		return zkerr.Namedf("leader selector "+s.path, "LeadFunc: %w", err)
	}
	return nil
}

// Participants returns the selector's participants in queue order; the
// first leads.
func (s *Selector) Participants(ctx context.Context) ([]recipes.Participant, error) {
	if s == nil || s.c == nil {
		return nil, notMadeSelector()
	}
	return Participants(ctx, s.c, s.path)
}

// Leader returns the current leader's id and node (Curator's getLeader);
// recipes.ErrNoLeader when there is none.
func (s *Selector) Leader(ctx context.Context) (recipes.Participant, error) {
	ps, err := s.Participants(ctx)
	if err != nil {
		return recipes.Participant{}, err
	}
	if len(ps) == 0 {
		return recipes.Participant{}, zkerr.Namedf("leader selector "+s.path, "%w", recipes.ErrNoLeader)
	}
	return ps[0], nil
}

// Close stops the selector: a running LeadFunc's ctx is cancelled, the
// selector waits (within ctx) for it to return and for its node to go. It
// is safe to call more than once. Called from the LeadFunc itself (as
// Curator allows), it does not wait for that function: it cancels its ctx
// and returns, and the node goes once the function has returned.
func (s *Selector) Close(ctx context.Context) error {
	if s == nil || s.c == nil {
		return notMadeSelector()
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if first, _ := s.life.Close(); !first {
		return nil
	}
	s.mu.Lock()
	inside := s.leadGID != 0 && s.leadGID == gid.GoroutineID()
	s.mu.Unlock()
	if inside {
		s.life.Cancel()
		return nil // waiting would wait for the caller itself
	}
	return s.life.Stop(ctx, "leader selector "+s.path)
}

func notMadeSelector() error { return zkerr.NotMade("Selector", "NewSelector") }
