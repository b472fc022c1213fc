package mutex

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Lease is one owner's hold on a Mutex. Acquiring again by the same owner
// returns the same Lease. Its Release releases a hold from any goroutine.
type Lease struct {
	hold  *engine.Hold
	m     *Mutex
	ct    *engine.Contest
	sig   engine.Signals
	owner any
	count int // guarded by m.mu

	proc *procHold // WithLocalHandoff: the process's hold this lease is part of
	seq  uint64    // its place among the process hold's local holders (0: the first)
}

// Node returns the path of the lease's node (inside the client's
// namespace, as every path the library returns).
func (l *Lease) Node() string { return l.hold.Node() }

// Done returns a channel that closes when the lease may be gone: on LOST,
// on SUSPENDED under the client's Standard error policy, when the client
// closes, and when the lease is fully released.
func (l *Lease) Done() <-chan struct{} { return l.hold.Done() }

// IsLost reports whether the session that owned the lease was lost (or
// the client closed) since it began.
func (l *Lease) IsLost() bool { return l.hold.IsLost() }

// Token returns the lease's fencing token (recipes.FenceToken): the
// creation zxid (czxid) of its node and, under WithLocalHandoff, the
// lease's place among the owners that shared that node. Tokens strictly
// increase across successive holders of the same path, even when the
// parent was deleted and recreated in between. The first call reads the
// node (one request); later calls return the cached value.
func (l *Lease) Token(ctx context.Context) (recipes.FenceToken, error) {
	z, err := l.hold.Token(ctx)
	if err != nil {
		return recipes.FenceToken{}, err
	}
	return recipes.FenceToken{Czxid: z, Local: l.seq}, nil
}

// Fenced runs ops (recipes.CreateOp, SetOp, DeleteOp, CheckOp, on recipe
// paths: the client's namespace is applied) as one transaction
// together with a check that the lease's node still exists, so the server
// refuses the writes of a holder that lost it: the error then wraps
// ErrFenced, as it does once the lease is fully released. The responses returned are for ops
// only. A connection error is returned as it is (recipes.IsRetryable): the
// transaction may or may not have been applied.
func (l *Lease) Fenced(ctx context.Context, ops ...recipes.Op) ([]zk.MultiResponse, error) {
	return l.hold.Fenced(ctx, recipeargs.Ops(ops)...)
}

// Count returns how many times the owner holds the lock through this
// Lease: 0 once it is released.
func (l *Lease) Count() int {
	if l == nil || l.m == nil {
		return 0
	}
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	return l.count
}

// Release releases one hold of the lease's owner, from any goroutine,
// exactly as the owner's Mutex.Release would: the last one deletes the lock
// node, and if the session was lost while the lock was held it drops the
// whole hold and returns an error wrapping ErrLockLost. Once the lease is
// fully released, Release returns ErrNotHeld and releases nothing, even
// if the owner has acquired again since (under a new Lease).
func (l *Lease) Release(ctx context.Context) error {
	if l == nil || l.m == nil {
		return fmt.Errorf("%w: Lease not returned by Acquire", recipes.ErrInvalidArgument)
	}
	if err := l.m.check(ctx); err != nil {
		return err
	}
	l.m.mu.Lock()
	return l.m.release(ctx, l)
}
