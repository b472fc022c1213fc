package mutex

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Locker is a lock that can be acquired and released with a context: a
// Mutex, a MultiLock, or another recipe's lock (Curator's InterProcessLock).
type Locker interface {
	Acquire(ctx context.Context) error
	Release(ctx context.Context) error
}

// MultiLock holds a set of locks as one: Lock acquires all of them in the
// order given, or none (on failure it releases the ones it got, in reverse
// order); Unlock releases them in reverse order. Like Curator's
// InterProcessMultiLock. Owners and reentrancy are those of the parts.
type MultiLock struct {
	locks []Locker
}

// NewMultiLock returns a lock over locks, which must be non-empty and
// contain no nil.
func NewMultiLock(locks ...Locker) (*MultiLock, error) {
	if len(locks) == 0 {
		return nil, fmt.Errorf("%w: no locks", recipes.ErrInvalidArgument)
	}
	for i, l := range locks {
		if l == nil {
			return nil, fmt.Errorf("%w: lock %d is nil", recipes.ErrInvalidArgument, i)
		}
	}
	return &MultiLock{locks: append([]Locker(nil), locks...)}, nil
}

// Lock acquires every lock, in order, or none of them.
func (ml *MultiLock) Lock(ctx context.Context) error {
	if ml == nil || len(ml.locks) == 0 {
		return fmt.Errorf("%w: MultiLock not made by NewMultiLock", recipes.ErrInvalidArgument)
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	for i, l := range ml.locks {
		if err := l.Acquire(ctx); err != nil {
			rerr := release(context.WithoutCancel(ctx), ml.locks[:i])
			return errors.Join(fmt.Errorf("multilock: lock %d: %w", i, err), rerr)
		}
	}
	return nil
}

// Unlock releases every lock in reverse order; it tries all of them and
// joins their errors.
func (ml *MultiLock) Unlock(ctx context.Context) error {
	if ml == nil || len(ml.locks) == 0 {
		return fmt.Errorf("%w: MultiLock not made by NewMultiLock", recipes.ErrInvalidArgument)
	}
	return release(ctx, ml.locks)
}

// Acquire is Lock; it makes MultiLock a Locker.
func (ml *MultiLock) Acquire(ctx context.Context) error { return ml.Lock(ctx) }

// Release is Unlock.
func (ml *MultiLock) Release(ctx context.Context) error { return ml.Unlock(ctx) }

func release(ctx context.Context, locks []Locker) error {
	var errs []error
	for i := len(locks) - 1; i >= 0; i-- {
		if err := locks[i].Release(ctx); err != nil {
			errs = append(errs, fmt.Errorf("multilock: unlock %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}
