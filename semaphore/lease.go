package semaphore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Lease is one lease of a semaphore, with its node, Done, Token and
// Fenced. Release returns it, from any goroutine.
type Lease struct {
	hold *engine.Hold
	c    *recipes.Client
	what string // names the semaphore in errors: "semaphore <path>"
	ct   *engine.Contest

	mu     sync.Mutex
	closed bool
}

func newLease(c *recipes.Client, what string, ct *engine.Contest, sig engine.Signals) *Lease {
	return &Lease{hold: engine.NewHold((*engine.Client)(c), ct.Path(), sig).Named(what), c: c, what: what, ct: ct}
}

// Node returns the path of the lease's node (inside the client's
// namespace, as every path the library returns).
func (l *Lease) Node() string { return l.hold.Node() }

// Done returns a channel that closes when the lease may be gone: on LOST,
// on SUSPENDED under the client's Standard error policy, when the client
// closes, and when the lease is returned.
func (l *Lease) Done() <-chan struct{} { return l.hold.Done() }

// IsLost reports whether the session that owned the lease was lost (or
// the client closed) since it began.
func (l *Lease) IsLost() bool { return l.hold.IsLost() }

// Token returns the lease's fencing token (recipes.FenceToken): the
// creation zxid (czxid) of its node. Tokens strictly increase across successive holders of the same
// path, even when the parent was deleted and recreated in between. The
// first call reads the node (one request); later calls return the cached
// value.
func (l *Lease) Token(ctx context.Context) (recipes.FenceToken, error) {
	z, err := l.hold.Token(ctx)
	return recipes.FenceToken{Czxid: z}, err
}

// Fenced runs ops (recipes.CreateOp, SetOp, DeleteOp, CheckOp, on recipe
// paths: the client's namespace is applied) as one transaction
// together with a check that the lease's node still exists, so the server
// refuses the writes of a holder that lost it: the error then wraps
// recipes.ErrFenced, as it does once the lease is returned. The responses returned are for ops
// only. A connection error is returned as it is (recipes.IsRetryable): the
// transaction may or may not have been applied.
func (l *Lease) Fenced(ctx context.Context, ops ...recipes.Op) ([]zk.MultiResponse, error) {
	return l.hold.Fenced(ctx, recipeargs.Ops(ops)...)
}

// Release returns the lease, from any goroutine: its node is deleted, at
// once or, when the client is not connected or ctx ends first, by the
// guaranteed-delete worker in the background. It is safe to call more
// than once: later calls return recipes.ErrNotHeld. If the session was
// lost while the lease was held, Release cleans up and returns an error
// wrapping recipes.ErrLockLost.
func (l *Lease) Release(ctx context.Context) error {
	if l == nil || l.ct == nil {
		return fmt.Errorf("%w: Lease not returned by Acquire", recipes.ErrInvalidArgument)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return zkerr.Namedf(l.what, "%w: lease already returned", recipes.ErrNotHeld)
	}
	l.closed = true
	l.mu.Unlock()
	lost := l.IsLost()
	l.hold.MarkReleased()
	if ctx == nil {
		ctx = context.Background()
	}
	err := l.ct.Leave(ctx)
	if lost {
		return zkerr.Namedf(l.what, "%w", recipes.ErrLockLost)
	}
	if err != nil {
		return zkerr.Namedf(l.what, "%w", err)
	}
	return nil
}

func (l *Lease) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Data reads the lease node's data.
func (l *Lease) Data(ctx context.Context) ([]byte, error) {
	if l == nil || l.c == nil || l.hold == nil {
		return nil, fmt.Errorf("%w: Lease not returned by Acquire", recipes.ErrInvalidArgument)
	}
	var data []byte
	err := l.c.Retry(ctx, func() error {
		var err error
		data, _, err = (*engine.Client)(l.c).Get(ctx, l.hold.Path())
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, zkerr.Namedf(l.what, "%w: %s is gone", recipes.ErrLockLost, l.Node())
	}
	if err != nil {
		return nil, zkerr.Namedf(l.what, "lease data: %w", err)
	}
	return data, nil
}

// ReleaseAll releases every lease and joins the errors (nil leases are
// skipped), as Curator's returnAll.
func ReleaseAll(ctx context.Context, leases []*Lease) error {
	var errs []error
	for _, l := range leases {
		if l != nil {
			if err := l.Release(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
