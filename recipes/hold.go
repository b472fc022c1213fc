package recipes

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// Hold is the public view of every acquisition: a mutex or read/write
// lock's lease, a semaphore lease, a leadership term. Each of those types
// has these methods, documented on it; code that only needs to know
// whether it still holds, to fence its writes and to release, can take a
// Hold.
type Hold interface {
	// Node returns the path of the node that proves the hold (a recipe
	// path: inside the client's namespace, like every path the library
	// returns).
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
	// Release ends the hold, from any goroutine: a lease's node is deleted
	// (retried in the background through connection problems), a
	// leadership term ends. Once released, Done is closed and Release
	// returns an error wrapping ErrNotHeld.
	Release(ctx context.Context) error
}

// Participant is one node of a recipe's queue or election, as the
// Participants methods of every recipe report them, in queue order.
type Participant struct {
	// Node is the path of the participant's node (a recipe path).
	Node string
	// ID is the node's data as text: a latch or selector participant's
	// id, or what a lock or lease node carries (by default the holder's
	// IP address, as Curator writes it).
	ID string
	// Holds reports that the participant holds what the queue is for:
	// the lock, a lease, the leadership.
	Holds bool
	// Writer marks a read/write lock's write-lock node.
	Writer bool
}
