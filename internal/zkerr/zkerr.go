// Package zkerr is the module's error vocabulary: the sentinel errors
// package recipes exports, and the one way a recipe names its errors
// (Named, Namedf, NotMade). It is a leaf: the engine and every recipe
// import it.
package zkerr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/go-zookeeper/zk"
)

// Sentinel errors. Every error returned by this module that stems from one of
// these conditions matches it with errors.Is.
var (
	// ErrNilClient is returned when a recipe is given a nil *Client.
	ErrNilClient = errors.New("zkrecipes: nil client")
	// ErrClosed is returned by operations on a Client, or on a recipe,
	// that has been closed.
	ErrClosed = errors.New("zkrecipes: closed")
	// ErrClientClosed is returned when the Client itself was closed. It
	// matches ErrClosed too; a recipe's own Close gives ErrClosed alone.
	ErrClientClosed error = clientClosed{}
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
	ErrFenced = errors.New("zkrecipes: fenced: the hold's node no longer exists")
	// ErrNoGoroutineID is returned when the calling goroutine's id, the
	// default owner of a reentrant hold, cannot be read. Name an explicit
	// owner instead (mutex.WithOwner).
	ErrNoGoroutineID = errors.New("zkrecipes: cannot read the goroutine id: name an explicit owner")
	// ErrNotConnected is returned by an operation that makes one attempt
	// (a TryLock, say) while the client has no connection to a server. It
	// is retryable (IsRetryable).
	ErrNotConnected = errors.New("zkrecipes: not connected")
	// ErrNotStarted is returned by a recipe with a Start (a latch, a
	// selector, a reaper) used before Start.
	ErrNotStarted = errors.New("zkrecipes: not started")
	// ErrAlreadyStarted is returned by a second Start.
	ErrAlreadyStarted = errors.New("zkrecipes: already started")
	// ErrUnimplemented is returned when the server lacks what an
	// operation needs, and the message says what: persistent watches
	// (ZooKeeper 3.6 or later, or a server configured without them; or
	// the client cannot send them, a connection it adopted), container
	// nodes (3.5.3 or later), TTL nodes (3.5.3 or later with extended
	// types enabled).
	ErrUnimplemented = errors.New("zkrecipes: not implemented by the server")
	// ErrNoLeader is returned when an election has no leader.
	ErrNoLeader = errors.New("zkrecipes: no leader")
	// ErrUnknownOutcome is returned by an update whose write may or may
	// not have been applied: its reply was lost to a connection problem
	// and the node does not tell.
	ErrUnknownOutcome = errors.New("zkrecipes: outcome unknown")
	// ErrCorrupt is returned when a node holds data a recipe cannot read
	// (an atomic long that is not 8 bytes, say).
	ErrCorrupt = errors.New("zkrecipes: corrupt data")
	// ErrDuplicateMember reports a group member whose id another member
	// uses too.
	ErrDuplicateMember = errors.New("zkrecipes: duplicate member id")
	// ErrUpgrade is returned when a read lock's owner asks for the write lock.
	ErrUpgrade = errors.New("zkrecipes: the read lock's owner cannot take the write lock (upgrade)")
)

// IsRetryable reports whether err is a transient connection problem after
// which the same request may be tried again: connection loss, no server
// reachable, a moved session, and every transport error go-zookeeper may
// pass through as it is (a reset, a broken pipe, EOF, a timeout, a closed
// socket). NoNode, NodeExists, session expiry and the like are not.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the caller's ctx ended (DeadlineExceeded is also a net.Error)
	}
	if errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionMoved) || errors.Is(err, ErrNotConnected) {
		return true
	}
	return isTransportError(err)
}

// isTransportError reports whether err comes from the network rather than
// from ZooKeeper.
func isTransportError(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ETIMEDOUT) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) { // timeouts, *net.OpError and the like
		return true
	}
	return false
}

// IsRefused reports whether err is the server's refusal for want of
// permission (NoAuth) or of valid credentials (AuthFailed): retrying the
// same request cannot help until someone changes the credentials or the
// ACL, so no loop retries it.
func IsRefused(err error) bool {
	return errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed)
}

// Explain adds to an error the server returns for a reason the user can
// act on what to do about it; other errors are returned as they are. The
// result still wraps err (errors.Is(result, zk.ErrNoAuth) holds). An
// error explained already is returned as it is.
func Explain(err error) error {
	if !IsRefused(err) && !errors.Is(err, zk.ErrInvalidACL) {
		return err // nil too
	}
	if msg := err.Error(); strings.Contains(msg, "WithAuth") || strings.Contains(msg, "WithACLProvider") {
		return err
	}
	switch {
	case errors.Is(err, zk.ErrNoAuth):
		return fmt.Errorf("%w (the ACL of the node or of its parent does not grant this client's credentials: check WithAuth and the ACL provider of the client that made it)", err)
	case errors.Is(err, zk.ErrAuthFailed):
		return fmt.Errorf("%w (the server refused the credentials given with WithAuth)", err)
	case errors.Is(err, zk.ErrInvalidACL):
		return fmt.Errorf("%w (the client's ACL provider gave no ACL for the node, or one the server refuses: check WithACLProvider)", err)
	}
	return err
}

// Named returns err as the error of one recipe instance, what ("mutex
// /locks/a", "semaphore /s"): its message is "zkrecipes: <what>: <detail>",
// with the module's prefix once and the recipe named once. The detail is
// err's message without the "zkrecipes: " prefixes of the errors it wraps,
// and without the name of a recipe err itself comes from (a semaphore's
// internal lock): the outermost recipe is the one the caller used. err
// stays in the chain (errors.Is and errors.As see it). A refusal or an
// invalid ACL not yet explained is explained (Explain). A nil err gives
// nil.
func Named(what string, err error) error {
	if err == nil {
		return nil
	}
	return &namedError{what: what, err: Explain(err)}
}

// Namedf is Named(what, fmt.Errorf(format, args...)).
func Namedf(what, format string, args ...any) error {
	return Named(what, fmt.Errorf(format, args...))
}

type namedError struct {
	what string
	err  error
}

func (e *namedError) Error() string { return "zkrecipes: " + e.what + ": " + e.detail() }

func (e *namedError) Unwrap() error { return e.err }

func (e *namedError) detail() string {
	if in, ok := e.err.(*namedError); ok {
		return in.detail()
	}
	return strings.ReplaceAll(e.err.Error(), "zkrecipes: ", "")
}

// clientClosed is ErrClientClosed: its own message, and ErrClosed for
// errors.Is.
type clientClosed struct{}

func (clientClosed) Error() string        { return "zkrecipes: the client is closed" }
func (clientClosed) Is(target error) bool { return target == ErrClosed }

// ErrConflict is returned, wrapping the last conflict's error
// (zk.ErrBadVersion, or zk.ErrNodeExists on a create), by a
// compare-and-set loop that gave up: other writers won every attempt it
// was allowed. Package recipes exports it (recipes.ErrConflict) for the
// atomic values, whose every update that did not happen wraps it.
var ErrConflict = errors.New("zkrecipes: conflict")

// NotMade is the error of a method called on a recipe its constructor
// did not make (a nil pointer, a zero value): the same from every method
// of every type.
func NotMade(typ, ctor string) error {
	return fmt.Errorf("%w: %s not made by %s", ErrInvalidArgument, typ, ctor)
}
