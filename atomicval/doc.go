// Package atomicval holds Curator's atomic values (recipes/atomic): a
// number or a byte string in one persistent ZooKeeper node that any
// number of processes, Go or Java, update atomically.
//
//   - Int64 is Curator's DistributedAtomicLong: 8 bytes, big-endian.
//   - Int32 is Curator's DistributedAtomicInteger: 4 bytes, big-endian,
//     the encoding of shared.Count, so an Int32 and a SharedCount
//     (Go's or Curator's) share a path.
//   - Value is Curator's DistributedAtomicValue: raw bytes.
//
// The node is the path itself, persistent, made by the first update that
// needs it (its missing parents as containers, as Curator makes them).
// A missing node, or one with empty data, reads as 0 (as nil for a
// Value). Data of another length than the type's is refused as corrupt
// (recipes.ErrCorrupt, the message names the length): Curator reads a
// short node as corrupt too, but silently truncates a long one.
//
// # Name
//
// The package is atomicval, not atomic, so that it sits beside
// sync/atomic in the same file without an import alias; its types are
// named as sync/atomic's (Int64, Int32, Value), since Go readers know
// those widths better than Java's Long and Integer.
//
// # Updates
//
// Every update is a compare-and-set on the node's version (Curator's
// "optimistic" mode): read the value and the version, compute the new
// value, write it on condition that the version did not move; when
// another writer came first, read again and try again, pausing as the
// retry policy says (WithRetryPolicy; ContentionPolicy by default), until the
// policy gives up. With WithPromotedToLock, an update the optimistic
// tries could not make is then tried again holding a mutex.Mutex at
// another path (Curator's PromotedToLock, on an InterProcessMutex that
// Curator processes share), so that updaters that lost take turns
// instead of colliding. The lock only takes contention away: every write
// stays conditional on the version, so an update is atomic even when a
// lock holder's session was lost meanwhile, or a writer does not use the
// lock.
//
//   - Increment, Decrement, Add, Subtract and TrySet create the node when
//     it does not exist. Arithmetic wraps around as Java's does.
//   - CompareAndSet sets only when the value is the expected one, in one
//     try, and never creates the node. Expected values are compared as
//     numbers: an empty node equals 0 (Curator compares the bytes, so its
//     compareAndSet(0, ...) fails on an empty node).
//   - Initialize creates the node with a value only if it does not exist.
//   - Set writes whatever the value, creating the node if need be.
//
// # Reads
//
// A ZooKeeper server serves reads from its own copy, which may lag
// behind writes already acknowledged to other clients. Get and
// CompareAndSet first pass a barrier, a transaction of one check on the
// node that changes nothing but goes through the leader and a quorum as
// a write does; the server answers the read after it, so the read sees
// every write acknowledged before the call: with the updates, the
// counter is linearizable (the chaos suite checks its whole history with
// porcupine). A sync is not enough: the leader takes it for a read, and
// applies a commit only after sending it to the followers, so after a
// sync a read on the leader can miss an increment a follower has already
// acknowledged (the chaos suite saw it, 2 ms after the increment
// returned); and a leader cut off from its followers answers reads until
// it steps down. Curator's get() does not sync at all: on a follower it
// may return a value from before an increment another process has
// already seen succeed, and its compareAndSet may fail against a value
// that is there. The barrier costs a write's round (the leader, a quorum
// and its log), without changing the node or its version. The updates
// need none: a stale read only costs them a lost try.
//
// # Results that cannot be ignored by accident
//
// Curator's updates return an AtomicValue whose succeeded() callers
// forget to check. Here every update returns (Result, error), and an
// update that did not happen returns an error: errors.Is(err,
// recipes.ErrConflict) when other writers won every try allowed, when a
// compare-and-set found another value (or no node), or when the promoted
// lock was not taken within its timeout; recipes.ErrUnknownOutcome when
// a lost reply leaves the outcome unknown (see below); another error when
// ZooKeeper failed or ctx ended. Result.Succeeded is true exactly when
// the error is nil. The Result carries the value the last try read (PreValue; under
// the lock when promoted), the value written (PostValue) and Stats (the
// optimistic and promoted tries and the time each phase took), on
// success and failure alike.
//
// Messages read "zkrecipes: atomic long <path>: <what>" (atomic integer,
// atomic value); errors are package recipes' sentinels, matched with
// errors.Is.
//
// # Lost replies
//
// A write whose reply is lost to a connection problem may or may not have
// been applied. The update reads the node again: when it is still at the
// version the write was conditioned on, or the one write since is
// another's, the write was not applied and the update tries again; when
// writers have written since, or the next version holds the very bytes
// it wrote (two increments of one value write the same bytes), the node
// cannot tell, and the update ends with an error wrapping
// recipes.ErrUnknownOutcome (as does a ctx that ends with a write in
// flight). So an update is never applied twice, and never acknowledged
// when it was not applied: the acknowledged updates are all applied, and
// of those that ended with ErrUnknownOutcome some may be. (Curator tries
// such an update again, and may apply it twice.)
//
// # Limits
//
// A ZooKeeper counter serialises every update through the leader, and
// each successful update needs a read and a conditional write after the
// previous one committed: one node takes about as many updates a second
// from 2 sessions as from 16 (about 1,500 on the benchmark's local
// server, Curator's alike); more sessions only wait longer. It suits ids
// and statistics at tens to hundreds of updates a second, not a hot
// counter: take ids in blocks (CachedInt64), or add in batches.
// docs/counters-and-barriers.md has the figures.
//
// # Blocks of ids
//
// CachedInt64 is Curator's CachedAtomicLong: it takes a block of ids from
// an Int64 in one Add and hands them out from memory. Ids are unique
// across the processes that share the counter, not ordered across them,
// and have gaps (a block a process did not finish; a block whose Add had
// an unknown outcome, which is skipped rather than risk an id twice).
//
// # ACLs
//
// The node, its missing parents and a promoted lock's nodes get the
// Client's ACLs (recipes.WithACLProvider); an update the server refuses
// fails at once with an error wrapping recipes.ErrNoAuth. See
// docs/security.md.
package atomicval
