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
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
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

// cell is the machinery of Int64, Int32 and Value.
type cell[T any] struct {
	c     *recipes.Client
	e     *engine.Client
	kind  string // "atomic long"
	path  string // as given
	full  string // with the namespace
	codec codec.Codec[T]
	o     options
	lock  *mutex.Mutex // the promoted lock, or nil
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
	full, err := recipeargs.Path(c, path, "an atomic value's path")
	if err != nil {
		return err
	}
	*s = cell[T]{c: c, e: engine.Of(c), kind: kind, path: path, full: full, codec: cd}
	s.o.retry, s.o.log = ContentionPolicy, c.Logger()
	if err := recipeargs.Options(&s.o, opts); err != nil {
		return err
	}
	if p := s.o.promoted; p != nil {
		lfull, err := recipeargs.Path(c, p.Path, "a promoted lock path")
		if err != nil {
			return err
		}
		if lfull == full || len(lfull) > len(full) && lfull[:len(full)+1] == full+"/" {
			return fmt.Errorf("%w: the promoted lock path %s is the value's path or below it", recipes.ErrInvalidArgument, p.Path)
		}
		if s.lock, err = mutex.New(c, p.Path); err != nil {
			return err
		}
	}
	return nil
}

func (s *cell[T]) name() string { return s.kind + " " + s.path }

func notMade(typ, ctor string) error {
	return fmt.Errorf("%w: %s not made by %s", recipes.ErrInvalidArgument, typ, ctor)
}

// check refuses a nil ctx and a closed client.
func (s *cell[T]) check(ctx context.Context) error {
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	if err := s.e.Check(); err != nil {
		return engine.Named(s.name(), err)
	}
	return nil
}

// decode reads data, naming the recipe in a corruption error.
func (s *cell[T]) decode(data []byte) (T, error) {
	v, err := s.codec.Decode(data)
	if err != nil {
		return v, engine.Named(s.name(), err)
	}
	return v, nil
}

// get reads the value; a missing node is the zero value.
func (s *cell[T]) get(ctx context.Context) (T, error) {
	var zero T
	if err := s.check(ctx); err != nil {
		return zero, err
	}
	var data []byte
	err := s.e.Retry(ctx, func() error {
		// A follower serves reads from its own copy, which may lag
		// behind writes already acknowledged to others: sync first, so
		// that the read sees every write acknowledged before the call.
		if err := s.e.Sync(ctx, s.full); err != nil {
			return err
		}
		var err error
		data, _, err = s.e.Get(ctx, s.full)
		if errors.Is(err, zk.ErrNoNode) {
			data, err = nil, nil
		}
		return err
	})
	if err != nil {
		return zero, engine.Namedf(s.name(), "get: %w", err)
	}
	return s.decode(data)
}

// errMismatch ends a compare-and-set whose expected value was not there.
var errMismatch = errors.New("mismatch")

// compareAndSet writes v if the value is expected, in one try, never
// creating the node.
func (s *cell[T]) compareAndSet(ctx context.Context, expected, v T) (Result[T], error) {
	var res Result[T]
	if err := s.check(ctx); err != nil {
		return res, err
	}
	start := time.Now()
	data, err := s.encode(v)
	if err != nil {
		return res, err
	}
	// Sync first, as get does: a lagging follower's read would refuse a
	// compare-and-set from a value already there.
	if err := s.e.Retry(ctx, func() error { return s.e.Sync(ctx, s.full) }); err != nil {
		res.Stats.OptimisticTime = time.Since(start)
		return res, engine.Namedf(s.name(), "compare-and-set: sync: %w", err)
	}
	_, err = s.e.CompareAndSet(ctx, s.full, engine.CAS{Tries: 1, Exact: true}, func(prev []byte, _ bool) ([]byte, error) {
		res.Stats.OptimisticTries++
		cur, err := s.codec.Decode(prev)
		if err != nil {
			return nil, err
		}
		res.PreValue = cur
		if !s.codec.Equal(cur, expected) {
			return nil, errMismatch
		}
		return data, nil
	})
	res.Stats.OptimisticTime = time.Since(start)
	switch {
	case err == nil:
		res.Succeeded, res.PostValue = true, v
		return res, nil
	case errors.Is(err, errMismatch):
		return res, engine.Namedf(s.name(), "compare-and-set: the value is %s, not the expected %s: %w",
			s.codec.Show(res.PreValue), s.codec.Show(expected), recipes.ErrConflict)
	case errors.Is(err, zk.ErrNoNode) && ctx.Err() == nil:
		res.Stats.OptimisticTries = max(res.Stats.OptimisticTries, 1)
		return res, engine.Namedf(s.name(), "compare-and-set: no node (compare-and-set never creates it; Initialize does): %w (%w)", recipes.ErrConflict, zk.ErrNoNode)
	case errors.Is(err, recipes.ErrConflict):
		return res, engine.Namedf(s.name(), "compare-and-set: the value changed after it was read (as %s): %w",
			s.codec.Show(res.PreValue), recipes.ErrConflict)
	}
	return res, engine.Namedf(s.name(), "compare-and-set: %w", err)
}

// update sets the value to next(current): optimistic tries, then, when
// configured and they gave up, tries holding the promoted lock.
func (s *cell[T]) update(ctx context.Context, op string, next func(T) T) (Result[T], error) {
	var res Result[T]
	if err := s.check(ctx); err != nil {
		return res, err
	}
	start := time.Now()
	err := s.try(ctx, engine.CAS{Create: true, Retry: s.o.retry, Exact: true}, &res, &res.Stats.OptimisticTries, next)
	res.Stats.OptimisticTime = time.Since(start)
	if err == nil || s.lock == nil || !errors.Is(err, recipes.ErrConflict) || ctx.Err() != nil {
		return res, s.outcome(op, err)
	}
	start = time.Now()
	err = s.promoted(ctx, &res, next)
	res.Stats.PromotedTime = time.Since(start)
	return res, s.outcome(op, err)
}

func (s *cell[T]) outcome(op string, err error) error {
	if err == nil {
		return nil
	}
	return engine.Namedf(s.name(), "%s: %w", op, err)
}

// try is one compare-and-set loop, counting its tries in *tries; it
// fills res.
func (s *cell[T]) try(ctx context.Context, cas engine.CAS, res *Result[T], tries *int, next func(T) T) error {
	var zero T
	_, err := s.e.CompareAndSet(ctx, s.full, cas, func(prev []byte, _ bool) ([]byte, error) {
		*tries++
		cur, err := s.codec.Decode(prev)
		if err != nil {
			return nil, err
		}
		res.PreValue = cur
		v := next(cur)
		res.PostValue = v
		return s.codec.Encode(v)
	})
	if err != nil {
		res.PostValue = zero
		return err
	}
	res.Succeeded = true
	return nil
}

// owner is the promoted lock's owner for one update (mutex.WithOwner):
// every update is a holder of its own, whichever goroutine makes it.
type owner struct{ _ byte }

// promoted makes the update holding the promoted lock.
func (s *cell[T]) promoted(ctx context.Context, res *Result[T], next func(T) T) error {
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
			return fmt.Errorf("the promoted lock %s was not acquired within %v: %w: %w", p.Path, p.Timeout, recipes.ErrConflict, recipes.ErrNotAcquired)
		}
		return fmt.Errorf("promoted lock: %w", err)
	}
	defer func() {
		// The writes are conditional on the version: a release that
		// fails (the session was lost meanwhile) changes nothing the
		// update did.
		if rerr := lease.Release(context.WithoutCancel(ctx)); rerr != nil {
			s.o.log.Warn("zkrecipes: "+s.kind+": releasing the promoted lock", "path", s.path, "lock", p.Path, "err", rerr)
		}
	}()
	return s.try(ctx, engine.CAS{Create: true, Retry: p.retry(), Exact: true}, res, &res.Stats.PromotedTries, next)
}

// initialize creates the node with v unless it exists.
func (s *cell[T]) initialize(ctx context.Context, v T) (bool, error) {
	if err := s.check(ctx); err != nil {
		return false, err
	}
	data, err := s.encode(v)
	if err != nil {
		return false, err
	}
	err = s.e.Retry(ctx, func() error { return s.create(ctx, data) })
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, zk.ErrNodeExists):
		return false, nil
	}
	return false, engine.Namedf(s.name(), "initialize: %w", err)
}

// encode is the node data of v.
func (s *cell[T]) encode(v T) ([]byte, error) {
	data, err := s.codec.Encode(v)
	return data, engine.Named(s.name(), err)
}

// create makes the node with data, its missing parents as containers.
func (s *cell[T]) create(ctx context.Context, data []byte) error {
	_, err := s.e.CreateMakingParents(ctx, s.full, data, 0)
	if errors.Is(err, zk.ErrNoNode) {
		parent, _ := engine.SplitPath(s.full)
		if err := s.e.EnsureContainers(ctx, parent); err != nil {
			return err
		}
		_, err = s.e.Create(ctx, s.full, data, 0)
	}
	return err
}

// forceSet writes v whatever the version, creating the node if need be.
func (s *cell[T]) forceSet(ctx context.Context, v T) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	data, err := s.encode(v)
	if err != nil {
		return err
	}
	err = s.e.Retry(ctx, func() error {
		for {
			_, err := s.e.Set(ctx, s.full, data, -1)
			if !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			err = s.create(ctx, data)
			if !errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			// Made or deleted meanwhile: set again.
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	})
	if err != nil {
		return engine.Namedf(s.name(), "force-set: %w", err)
	}
	return nil
}
