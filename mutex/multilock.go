package mutex

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Locker is a lock a MultiLock can take: a Mutex (an rwlock's read or
// write lock too), a semaphore.Mutex, or another recipe's lock (Curator's
// InterProcessLock). AcquireHold is its Acquire, returning the hold.
type Locker interface {
	AcquireHold(ctx context.Context) (recipes.Hold, error)
}

// MultiLock holds a set of locks as one, like Curator's
// InterProcessMultiLock: Acquire acquires all of them in the order given,
// or none (on failure it releases the ones it got, in reverse order), and
// the MultiLease it returns releases them in reverse order. Owners and
// reentrancy are those of the parts.
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

// Acquire acquires every lock, in order, or none of them.
func (ml *MultiLock) Acquire(ctx context.Context) (*MultiLease, error) {
	if ml == nil || len(ml.locks) == 0 {
		return nil, fmt.Errorf("%w: MultiLock not made by NewMultiLock", recipes.ErrInvalidArgument)
	}
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	holds := make([]recipes.Hold, 0, len(ml.locks))
	for i, l := range ml.locks {
		h, err := l.AcquireHold(ctx)
		if err != nil {
			rerr := releaseAll(context.WithoutCancel(ctx), holds)
			return nil, errors.Join(fmt.Errorf("zkrecipes: multilock: lock %d: %w", i, err), rerr)
		}
		holds = append(holds, h)
	}
	return &MultiLease{holds: holds}, nil
}

// MultiLease is the hold of every lock of a MultiLock.
type MultiLease struct {
	holds []recipes.Hold

	once sync.Once
	done chan struct{}
}

// Holds returns the hold of each lock, in the MultiLock's order.
func (l *MultiLease) Holds() []recipes.Hold { return append([]recipes.Hold(nil), l.holds...) }

// Done closes when any of the holds may be gone (see recipes.Hold).
func (l *MultiLease) Done() <-chan struct{} {
	l.once.Do(func() {
		l.done = make(chan struct{})
		cases := make([]<-chan struct{}, len(l.holds))
		for i, h := range l.holds {
			cases[i] = h.Done()
		}
		go func() {
			defer close(l.done)
			waitAny(cases)
		}()
	})
	return l.done
}

// waitAny returns when any of chs is closed.
func waitAny(chs []<-chan struct{}) {
	any := make(chan struct{})
	var once sync.Once
	for _, ch := range chs[1:] {
		go func() {
			select {
			case <-ch:
				once.Do(func() { close(any) })
			case <-any:
			}
		}()
	}
	select {
	case <-chs[0]:
		once.Do(func() { close(any) })
	case <-any:
	}
}

// IsLost reports whether any hold's session was lost.
func (l *MultiLease) IsLost() bool {
	for _, h := range l.holds {
		if h.IsLost() {
			return true
		}
	}
	return false
}

// Release releases every hold in reverse order; it tries all of them and
// joins their errors.
func (l *MultiLease) Release(ctx context.Context) error {
	if l == nil || len(l.holds) == 0 {
		return fmt.Errorf("%w: MultiLease not returned by MultiLock.Acquire", recipes.ErrInvalidArgument)
	}
	return releaseAll(ctx, l.holds)
}

func releaseAll(ctx context.Context, holds []recipes.Hold) error {
	var errs []error
	for i := len(holds) - 1; i >= 0; i-- {
		if err := holds[i].Release(ctx); err != nil {
			errs = append(errs, fmt.Errorf("zkrecipes: multilock: release %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}
