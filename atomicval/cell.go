package atomicval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/codec"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/rmw"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Result is the outcome of an update: Curator's AtomicValue. Succeeded is
// true exactly when the update's error is nil.
type Result[T any] struct {
	// Succeeded reports whether the update was made.
	Succeeded bool
	// PreValue is the value the last try read (0, or nil for a Value,
	// when the node did not exist); when the update was promoted to the
	// lock, it was read holding the lock.
	PreValue T
	// PostValue is the value written; the zero value when nothing was.
	PostValue T
	// Stats tells how the update went.
	Stats Stats
}

// Stats is what an update cost: Curator's AtomicStats.
type Stats struct {
	// OptimisticTries counts the compare-and-set tries made without the
	// lock.
	OptimisticTries int
	// PromotedTries counts the tries made holding the promoted lock.
	PromotedTries int
	// OptimisticTime is the time the optimistic tries took.
	OptimisticTime time.Duration
	// PromotedTime is the time the promoted phase took, waiting for the
	// lock included.
	PromotedTime time.Duration
}

// Option configures an Int64, Int32 or Value.
type Option func(*options) error

type options struct {
	retry    func() backoff.BackOff
	promoted *PromotedToLock
	log      *slog.Logger
}

// WithLogger sets the logger of what happens away from the caller (a
// promoted lock that would not release), at warn; the Client's by
// default.
func WithLogger(l *slog.Logger) Option {
	return recipeargs.Logger(l, func(o *options, l *slog.Logger) { o.log = l })
}

// WithRetryPolicy sets the policy of the optimistic tries: the pause
// after a try another writer won, and when to give up (backoff.Stop). By
// default it is ContentionPolicy: short pauses, since a conflict means
// another writer just succeeded, not that the server is in trouble. A
// policy that returns nil makes one try. Each update takes a fresh
// BackOff from newBackOff and Resets it before its first pause, as
// cenkalti's Retry does. Requests that fail for a connection reason are
// retried under the client's policy whatever this says.
func WithRetryPolicy(newBackOff func() backoff.BackOff) Option {
	return func(o *options) error {
		if newBackOff == nil {
			return fmt.Errorf("%w: nil retry policy", recipes.ErrInvalidArgument)
		}
		o.retry = newBackOff
		return nil
	}
}

// PromotedToLock is Curator's PromotedToLock: where and how an update
// the optimistic tries could not make is tried again holding a lock.
type PromotedToLock struct {
	// Path is the lock's path: a mutex.Mutex there, which is Curator's
	// InterProcessMutex, so Go and Java updaters promoted to the same
	// path take turns. It must not be the value's own path or below it.
	Path string
	// Timeout bounds the wait for the lock (Curator's maxLockTime); an
	// update that did not get the lock in time fails with an error
	// wrapping recipes.ErrConflict and recipes.ErrNotAcquired. Zero waits
	// as long as the update's ctx allows.
	Timeout time.Duration
	// Retry is the policy of the tries made holding the lock; nil makes
	// one try, as Curator's default (RetryNTimes(0, 0)): under the lock
	// only an updater that was not promoted can come first, and then the
	// update fails with ErrConflict.
	Retry func() backoff.BackOff
}

// retry is p's policy of the tries under the lock: one try by default.
func (p *PromotedToLock) retry() func() backoff.BackOff {
	if p.Retry == nil {
		return recipes.RetryNTimes(0, 0)
	}
	return p.Retry
}

// WithPromotedToLock makes an update that the optimistic tries could not
// make try again holding the lock p describes.
func WithPromotedToLock(p PromotedToLock) Option {
	return func(o *options) error {
		if p.Timeout < 0 {
			return fmt.Errorf("%w: negative promoted lock timeout %v", recipes.ErrInvalidArgument, p.Timeout)
		}
		o.promoted = &p
		return nil
	}
}

// cell is the machinery of Int64, Int32 and Value: the one
// read-modify-write cell (package rmw) under Curator's semantics.
type cell[T any] struct {
	rmw.Cell[T]
	o    options
	lock *mutex.Mutex // the promoted lock, or nil
}

// ContentionPolicy is the default policy of the optimistic tries: random
// pauses from about 0.5 ms growing to about 4 ms, giving up (ErrConflict)
// after 30 s of lost tries. The client's retry policy, made for a server
// that does not answer (10 ms growing to 1 s by default), would leave
// updaters that lost idle long after the node is free: with 16 sessions on
// one counter it made the slowest increment take seconds (docs/
// counters-and-barriers.md).
func ContentionPolicy() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = time.Millisecond / 2
	b.MaxInterval = 4 * time.Millisecond
	b.MaxElapsedTime = 30 * time.Second
	b.Reset()
	return b
}

func (s *cell[T]) init(c *recipes.Client, path, kind string, cd codec.Codec[T], opts []Option) error {
	rc, err := rmw.New(c, path, kind, "an atomic value's path", cd)
	if err != nil {
		return err
	}
	*s = cell[T]{Cell: rc}
	s.o.retry, s.o.log = ContentionPolicy, c.Logger()
	if err := recipeargs.Options(&s.o, opts); err != nil {
		return err
	}
	if p := s.o.promoted; p != nil {
		lfull, err := recipeargs.Path(c, p.Path, "a promoted lock path")
		if err != nil {
			return err
		}
		if lfull == rc.Full || len(lfull) > len(rc.Full) && lfull[:len(rc.Full)+1] == rc.Full+"/" {
			return fmt.Errorf("%w: the promoted lock path %s is the value's path or below it", recipes.ErrInvalidArgument, p.Path)
		}
		if s.lock, err = mutex.New(c, p.Path); err != nil {
			return err
		}
	}
	return nil
}

func notMade(typ, ctor string) error { return zkerr.NotMade(typ, ctor) }

// result is o as a Result.
func result[T any](o rmw.Outcome[T]) Result[T] {
	return Result[T]{Succeeded: o.Succeeded, PreValue: o.Pre, PostValue: o.Post, Stats: Stats{
		OptimisticTries: o.Tries, PromotedTries: o.PromotedTries, OptimisticTime: o.Time, PromotedTime: o.PromotedTime}}
}

// get reads the value, after a barrier; a missing node is the zero value.
func (s *cell[T]) get(ctx context.Context) (T, error) {
	var zero T
	if err := s.Check(ctx); err != nil {
		return zero, err
	}
	data, _, _, err := s.Read(ctx, true)
	if err != nil {
		return zero, zkerr.Namedf(s.Name(), "get: %w", err)
	}
	return s.Decode(data)
}

// errMismatch ends a compare-and-set whose expected value was not there.
var errMismatch = errors.New("mismatch")

// compareAndSet writes v if the value is expected, in one try, never
// creating the node.
func (s *cell[T]) compareAndSet(ctx context.Context, expected, v T) (Result[T], error) {
	if err := s.Check(ctx); err != nil {
		return Result[T]{}, err
	}
	start := time.Now()
	// A barrier first, as get does: a lagging server's read would refuse
	// a compare-and-set from a value already there.
	if err := s.Barrier(ctx); err != nil {
		return Result[T]{Stats: Stats{OptimisticTime: time.Since(start)}}, zkerr.Namedf(s.Name(), "compare-and-set: barrier: %w", err)
	}
	out, err := s.Update(ctx, rmw.Loop{Tries: 1}, func(cur T) (T, error) {
		if !s.Codec.Equal(cur, expected) {
			return cur, errMismatch
		}
		return v, nil
	})
	out.Time = time.Since(start)
	res := result(out)
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, errMismatch):
		return res, zkerr.Namedf(s.Name(), "compare-and-set: the value is %s, not the expected %s: %w",
			s.Codec.Show(res.PreValue), s.Codec.Show(expected), recipes.ErrConflict)
	case errors.Is(err, zk.ErrNoNode) && ctx.Err() == nil:
		res.Stats.OptimisticTries = max(res.Stats.OptimisticTries, 1)
		return res, zkerr.Namedf(s.Name(), "compare-and-set: no node (compare-and-set never creates it; Initialize does): %w (%w)", recipes.ErrConflict, zk.ErrNoNode)
	case errors.Is(err, recipes.ErrConflict):
		return res, zkerr.Namedf(s.Name(), "compare-and-set: the value changed after it was read (as %s): %w",
			s.Codec.Show(res.PreValue), recipes.ErrConflict)
	}
	return res, zkerr.Namedf(s.Name(), "compare-and-set: %w", err)
}

// update sets the value to next(current): optimistic tries, then, when
// configured and they gave up, tries holding the promoted lock.
func (s *cell[T]) update(ctx context.Context, op string, next func(T) T) (Result[T], error) {
	if err := s.Check(ctx); err != nil {
		return Result[T]{}, err
	}
	l := rmw.Loop{Create: true, Retry: s.o.retry}
	if s.lock != nil {
		l.Promote = &rmw.Promotion{Acquire: s.acquire, Retry: s.o.promoted.retry()}
	}
	out, err := s.Update(ctx, l, func(cur T) (T, error) { return next(cur), nil })
	if err != nil {
		return result(out), zkerr.Namedf(s.Name(), "%s: %w", op, err)
	}
	return result(out), nil
}

// owner is the promoted lock's owner for one update (mutex.WithOwner):
// every update is a holder of its own, whichever goroutine makes it.
type owner struct{ _ byte }

// acquire takes the promoted lock for one update, within its timeout.
func (s *cell[T]) acquire(ctx context.Context) (release func(), _ error) {
	p := s.o.promoted
	lctx := ctx
	if p.Timeout > 0 {
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeout(ctx, p.Timeout)
		defer cancel()
	}
	lease, err := s.lock.Acquire(mutex.WithOwner(lctx, &owner{}))
	if err != nil {
		if ctx.Err() == nil && lctx.Err() != nil {
			return nil, fmt.Errorf("the promoted lock %s was not acquired within %v: %w: %w", p.Path, p.Timeout, recipes.ErrConflict, recipes.ErrNotAcquired)
		}
		return nil, fmt.Errorf("promoted lock: %w", err)
	}
	return func() {
		// The writes are conditional on the version: a release that
		// fails (the session was lost meanwhile) changes nothing the
		// update did.
		if rerr := lease.Release(context.WithoutCancel(ctx)); rerr != nil {
			s.o.log.Warn("zkrecipes: "+s.Kind+": releasing the promoted lock", "path", s.Path, "lock", p.Path, "err", rerr)
		}
	}, nil
}

// initialize creates the node with v unless it exists.
func (s *cell[T]) initialize(ctx context.Context, v T) (bool, error) {
	if err := s.Check(ctx); err != nil {
		return false, err
	}
	data, err := s.Encode(v)
	if err != nil {
		return false, err
	}
	err = s.Create(ctx, data)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, zk.ErrNodeExists):
		return false, nil
	}
	return false, zkerr.Namedf(s.Name(), "initialize: %w", err)
}

// forceSet writes v whatever the version, creating the node if need be.
func (s *cell[T]) forceSet(ctx context.Context, v T) error {
	if err := s.Check(ctx); err != nil {
		return err
	}
	data, err := s.Encode(v)
	if err != nil {
		return err
	}
	if _, err := s.ForceSet(ctx, data); err != nil {
		return zkerr.Namedf(s.Name(), "force-set: %w", err)
	}
	return nil
}
