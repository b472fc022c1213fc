package recipes

import (
	"errors"

	"github.com/go-zookeeper/zk"
)

// Sentinel errors. Every error returned by this module that stems from one of
// these conditions matches it with errors.Is.
var (
	// ErrNilClient is returned when a recipe is given a nil *Client.
	ErrNilClient = errors.New("zkrecipes: nil client")
	// ErrClosed is returned by operations on a Client (or recipe) that has been closed.
	ErrClosed = errors.New("zkrecipes: client closed")
	// ErrInvalidPath is returned for an empty, relative, trailing-slash, "." or
	// "..", NUL-containing or otherwise malformed ZooKeeper path.
	ErrInvalidPath = errors.New("zkrecipes: invalid path")
	// ErrInvalidArgument is returned for a bad option or argument other than a path.
	ErrInvalidArgument = errors.New("zkrecipes: invalid argument")
	// ErrSessionLost is returned when the ZooKeeper session ended (expired, or
	// declared lost after the session timeout passed without a connection)
	// while an operation depended on it.
	ErrSessionLost = errors.New("zkrecipes: session lost")
	// ErrNotOwner is returned when a lock is released by an owner that does not hold it.
	ErrNotOwner = errors.New("zkrecipes: not the owner")
	// ErrNotHeld is returned when releasing something that is not held at all.
	ErrNotHeld = errors.New("zkrecipes: not held")
	// ErrLockLost is returned when releasing a hold whose session was lost
	// while it was held: the hold may have passed to someone else.
	ErrLockLost = errors.New("zkrecipes: hold lost with the session")
	// ErrNotAcquired is returned by a try-acquire that found the lock held.
	ErrNotAcquired = errors.New("zkrecipes: not acquired")
	// ErrFenced is returned by a fenced write that the server refused because
	// the lock node no longer exists.
	ErrFenced = errors.New("zkrecipes: fenced: lock node no longer exists")
)

// IsRetryable reports whether err is a transient connection problem after
// which the same request may be tried again (connection loss, no server
// reachable). NoNode, NodeExists, session expiry and the like are not.
func IsRetryable(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionMoved)
}
