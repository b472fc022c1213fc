package recipes

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// Hold is the public view of every acquisition: a mutex or read/write
// lock's lease, a semaphore lease, a leadership term. Each of those types
// has these methods, documented on it; code that only needs to know
// whether it still holds, and to fence its writes, can take a Hold.
type Hold interface {
	// Node returns the server path of the node that proves the hold.
	Node() string
	// Done closes when the hold may be gone: on LOST, on SUSPENDED under
	// the Standard error policy, when the client closes, and when the hold
	// is released.
	Done() <-chan struct{}
	// IsLost reports whether the session that owned the hold was lost (or
	// the client closed) since the hold was acquired.
	IsLost() bool
	// Token returns the fencing token (see FenceToken), which strictly
	// increases across successive holders of the same path.
	Token(ctx context.Context) (FenceToken, error)
	// Fenced runs ops (CreateOp, SetOp, DeleteOp, CheckOp) as one
	// transaction together with a check that the hold's node still exists;
	// the server refuses them (ErrFenced) once it is gone.
	Fenced(ctx context.Context, ops ...Op) ([]zk.MultiResponse, error)
}
