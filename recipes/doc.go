// Package recipes is the shared core of zkrecipes, a Go port of Apache
// Curator's ZooKeeper recipes.
//
// It provides the Client every recipe takes, and the building blocks the
// recipes share:
//
//   - Connection states as Curator names them (CONNECTED, SUSPENDED,
//     RECONNECTED, LOST, READ_ONLY), published in order to listeners. The
//     Client drains go-zookeeper's session events at once, and declares LOST
//     itself one negotiated session timeout after the last byte received
//     (both read from the wire by a Wire), since go-zookeeper only learns of
//     an expiry after it reconnects. If a session declared LOST comes back,
//     the nodes of its lost holds are deleted at once.
//   - Error policies (Standard and Session) that decide when a hold — a
//     lock, a lease, a leadership — may be gone, exposed as Done channels.
//   - Namespaces, ACL providers, digest authentication, a retry policy
//     built on cenkalti/backoff for transient connection errors, path
//     validation and request counters (Stats).
//   - Protected ephemeral-sequential creates (_c_<uuid>-<name><seq>, found
//     again by their uuid after a sync when a reply is lost; ghosts of our
//     own node deleted on sight), container parents that are recreated when
//     the server reaps them between two calls, and guaranteed deletes that
//     never block on a dead connection and keep retrying in the background.
//   - The contender engine (Contest and Driver, after Curator's
//     LockInternals and LockInternalsDriver) that the mutex, read/write
//     lock, semaphore and leader latch all queue through: drivers decide
//     from the contenders ahead and the asking owner (Query, Verdict), say
//     which contenders block (Blocks) and when to list again (Relist);
//     nodes at a given sequence (EnterAtSequence), an ephemeralOwner check
//     (EnterVerifyOwner), the semaphore's count-based wait (Contest.AwaitCount) and
//     a long-lived participant for the leader latch (Participate), with
//     fencing tokens and fenced writes (Hold).
//
// Recipe paths are given as users see them; Client.FullPath validates them
// and applies the namespace. Every other Client method takes server paths.
//
// Nodes are laid out exactly as Curator lays them out, so Go and Java
// processes can share locks and elections.
package recipes
