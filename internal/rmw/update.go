package rmw

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Loop varies Update, the one compare-and-set loop of a cell.
type Loop struct {
	// Create makes the node, from next of the value of no data, when it
	// does not exist; without it an absent node ends the loop with an
	// error wrapping zk.ErrNoNode.
	Create bool
	// Tries bounds the tries; 0 leaves the bound to Retry.
	Tries int
	// Retry is the policy of the pauses after a try another writer won,
	// and of when to give up (recipes.ErrConflict); nil is the client's.
	Retry func() backoff.BackOff
	// Promote, when set, is a second phase for an update the loop gave
	// up on: tries holding a lock.
	Promote *Promotion
}

// Promotion is the phase of an update made holding a lock (Curator's
// PromotedToLock).
type Promotion struct {
	// Acquire takes the lock, returning how to release it; its error
	// ends the update as it is.
	Acquire func(ctx context.Context) (release func(), err error)
	// Retry is the policy of the tries holding the lock.
	Retry func() backoff.BackOff
}

// Outcome is what an Update did (Curator's AtomicValue and AtomicStats).
type Outcome[T any] struct {
	Succeeded bool
	// Pre is the value the last try read; Post the value written (the
	// zero value when nothing was).
	Pre, Post            T
	Tries, PromotedTries int
	Time, PromotedTime   time.Duration
}

// Update sets the value to next(current) with a compare-and-set loop
// varied by l: tries until one wins, l.Tries or l.Retry gives up, next
// fails (its error returned as it is) or ctx ends; then, when the loop
// gave up to other writers and l.Promote is set, tries holding its lock.
// A write whose reply was lost and whose outcome the node cannot tell
// ends the update with an error wrapping recipes.ErrUnknownOutcome: a
// counter never counts twice. Its errors name the path, not the recipe.
func (s *Cell[T]) Update(ctx context.Context, l Loop, next func(T) (T, error)) (Outcome[T], error) {
	var out Outcome[T]
	start := time.Now()
	err := s.try(ctx, engine.CAS{Create: l.Create, Tries: l.Tries, Retry: l.Retry, Exact: true}, &out, &out.Tries, next)
	out.Time = time.Since(start)
	if err == nil || l.Promote == nil || !errors.Is(err, recipes.ErrConflict) || ctx.Err() != nil {
		return out, err
	}
	start = time.Now()
	err = s.promoted(ctx, l, &out, next)
	out.PromotedTime = time.Since(start)
	return out, err
}

// promoted is the update's phase holding l.Promote's lock.
func (s *Cell[T]) promoted(ctx context.Context, l Loop, out *Outcome[T], next func(T) (T, error)) error {
	release, err := l.Promote.Acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	return s.try(ctx, engine.CAS{Create: l.Create, Retry: l.Promote.Retry, Exact: true}, out, &out.PromotedTries, next)
}

// try is one compare-and-set loop, counting its tries in *tries; it
// fills out.
func (s *Cell[T]) try(ctx context.Context, cas engine.CAS, out *Outcome[T], tries *int, next func(T) (T, error)) error {
	var zero T
	_, err := s.E.CompareAndSet(ctx, s.Full, cas, func(prev []byte, _ bool) ([]byte, error) {
		*tries++
		cur, err := s.Codec.Decode(prev)
		if err != nil {
			return nil, err
		}
		out.Pre = cur
		v, err := next(cur)
		if err != nil {
			return nil, err
		}
		out.Post = v
		return s.Codec.Encode(v)
	})
	if err != nil {
		out.Post = zero
		return err
	}
	out.Succeeded = true
	return nil
}

// Barrier orders the session's next read after every write acknowledged
// before the call (engine.Client.Barrier; a sync does not, on the
// leader), connection problems retried.
func (s *Cell[T]) Barrier(ctx context.Context) error {
	return s.E.Retry(ctx, func() error { return s.E.Barrier(ctx, s.Full) })
}
