package recipes

import (
	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// Sentinel errors: the one set of the whole module, defined here only.
// Every error returned by this module that stems from one of these
// conditions matches it with errors.Is. Messages have the form
// "zkrecipes: <recipe> <path>: <what>" (the path as the caller knows it,
// inside the namespace), or "zkrecipes: <op> <path>: <what>" for a Client
// method.
var (
	// ErrNilClient is returned when a recipe is given a nil *Client.
	ErrNilClient = zkerr.ErrNilClient
	// ErrClosed is returned by operations on a recipe (a latch, a
	// selector, a reaper, a shared count) that has been closed, and on
	// anything whose Client has been closed.
	ErrClosed = zkerr.ErrClosed
	// ErrClientClosed is returned when the Client itself has been closed,
	// by its own methods and by every recipe on it. It matches ErrClosed
	// too: errors.Is(err, ErrClientClosed) tells a closed client apart
	// from a recipe closed on its own, whose errors match ErrClosed only.
	ErrClientClosed = zkerr.ErrClientClosed
	// ErrInvalidPath is returned for an empty, relative, trailing-slash, "." or
	// "..", NUL-containing or otherwise malformed ZooKeeper path.
	ErrInvalidPath = zkerr.ErrInvalidPath
	// ErrInvalidArgument is returned for a bad option or argument other than a path.
	ErrInvalidArgument = zkerr.ErrInvalidArgument
	// ErrSessionLost is returned when the ZooKeeper session ended (expired, or
	// declared lost after the session timeout passed without a connection)
	// while an operation depended on it.
	ErrSessionLost = zkerr.ErrSessionLost
	// ErrNotOwner is returned when a lock is released by an owner that does not hold it.
	ErrNotOwner = zkerr.ErrNotOwner
	// ErrNotHeld is returned when releasing something that is not held at all.
	ErrNotHeld = zkerr.ErrNotHeld
	// ErrLockLost is returned when releasing a hold whose session was lost
	// while it was held: the hold may have passed to someone else.
	ErrLockLost = zkerr.ErrLockLost
	// ErrNotAcquired is returned by a try-acquire that found the lock held.
	ErrNotAcquired = zkerr.ErrNotAcquired
	// ErrFenced is returned by a fenced write that the server refused because
	// the lock node no longer exists.
	ErrFenced = zkerr.ErrFenced
	// ErrNotConnected is returned by an operation that makes one attempt
	// (a TryAcquire, say) while the client has no connection to a server. It
	// is retryable (IsRetryable).
	ErrNotConnected = zkerr.ErrNotConnected
	// ErrNotStarted is returned by a recipe with a Start (a latch, a
	// selector, a reaper) used before Start.
	ErrNotStarted = zkerr.ErrNotStarted
	// ErrAlreadyStarted is returned by a second Start. A Start that failed
	// left nothing behind and may be called again.
	ErrAlreadyStarted = zkerr.ErrAlreadyStarted
	// ErrNoLeader is returned when an election has no leader.
	ErrNoLeader = zkerr.ErrNoLeader
	// ErrUpgrade is returned when the owner of a read lock asks for the
	// write lock of the same read/write lock, which would deadlock.
	ErrUpgrade = zkerr.ErrUpgrade
	// ErrConflict is returned by an atomic update that did not happen
	// (package atomicval): other writers came first on every attempt its
	// retry policies allowed, a compare-and-set found another value than
	// the expected one (or no node), or the promoted lock was not taken in
	// time. Nothing was written.
	ErrConflict = zkerr.ErrConflict
	// ErrUnknownOutcome is returned by an atomic update (package
	// atomicval) whose write may or may not have been applied: its reply
	// was lost to a connection problem (or ctx ended with it in flight)
	// and the node does not tell, because other writers wrote since or
	// wrote the same bytes. Read the value to decide; the update was not
	// tried again, so it was applied at most once.
	ErrUnknownOutcome = zkerr.ErrUnknownOutcome
	// ErrCorrupt is returned when a node holds data a recipe cannot read:
	// an atomic long that is not 8 bytes, say. The message names the
	// length found.
	ErrCorrupt = zkerr.ErrCorrupt
	// ErrDuplicateMember reports a group member (package nodes) whose id
	// another member uses too: another session holds the member's node, or
	// another process wrote its payload over ours (what Curator's
	// GroupMember does with a duplicate id). The message names the other
	// session.
	ErrDuplicateMember = zkerr.ErrDuplicateMember
	// ErrUnimplemented is returned when the server lacks what an operation
	// needs, and the message says what: persistent watches
	// (Client.WatchPersistent) need ZooKeeper 3.6 or later, and a client
	// made by Connect; container nodes, which the recipes make their
	// parents of unless the Client is made WithoutContainers, need 3.5.3
	// or later; TTL nodes (nodes.PersistentTTLNode, the TTL create modes)
	// need 3.5.3 or later with extended types enabled.
	ErrUnimplemented = zkerr.ErrUnimplemented
)

// ZooKeeper's own errors, as the Client's node operations (Create, Get,
// Set, Delete, Multi, ...) return them: the same values as go-zookeeper's,
// so errors.Is matches either, and a caller needs no other import.
var (
	// ErrNoNode: the node does not exist (Curator's NoNodeException).
	ErrNoNode = zk.ErrNoNode
	// ErrNodeExists: the node exists already (NodeExistsException).
	ErrNodeExists = zk.ErrNodeExists
	// ErrBadVersion: the node is not at the version given
	// (BadVersionException).
	ErrBadVersion = zk.ErrBadVersion
	// ErrNotEmpty: the node to delete has children (NotEmptyException).
	ErrNotEmpty = zk.ErrNotEmpty
	// ErrNoAuth: the session may not do this to the node (NoAuthException).
	ErrNoAuth = zk.ErrNoAuth
	// ErrNoChildrenForEphemerals: an ephemeral node cannot have children.
	ErrNoChildrenForEphemerals = zk.ErrNoChildrenForEphemerals
	// ErrAuthFailed: the server refused the client's credentials
	// (AuthFailedException); Connect returns it at once when the server
	// refuses a SASL authentication (WithSASLDigest).
	ErrAuthFailed = zk.ErrAuthFailed
)

// IsRetryable reports whether err is a transient connection problem after
// which the same request may be tried again: connection loss, no server
// reachable, a moved session, and every transport error go-zookeeper may
// pass through as it is (a reset, a broken pipe, EOF, a timeout, a closed
// socket). NoNode, NodeExists, session expiry, an ended ctx and the like
// are not.
func IsRetryable(err error) bool { return zkerr.IsRetryable(err) }
