// Package engine is the core every recipe drives, hidden from users:
// package recipes is its public face (Client, options, connection states,
// errors). recipes.Client is a type defined on this package's Client, so
// the recipe packages reach the engine by converting the pointer,
// (*engine.Client)(c); a nil or zero Client is no client (ErrNilClient).
//
// What lives here:
//
//   - The client machinery: the go-zookeeper connection, its session events
//     drained at once and turned into Curator's connection states by the
//     state machine, LOST declared one negotiated session timeout after
//     the server last answered (the Wire reads both from the protocol),
//     counted requests, the retry policy, and the ensemble followed
//     through reconfiguration (/zookeeper/config read by a Follower, a
//     host provider whose list it replaces, as Curator's EnsembleTracker).
//   - Protected ephemeral(-sequential) creates (_c_<uuid>-<name>, found
//     again after a lost reply, ghosts of our own node deleted on sight),
//     made only by a Contest or an OwnedNode, container parents recreated
//     when reaped between two calls, and guaranteed deletes that never
//     block on a dead connection.
//   - The contender queue (Contest) every lock-like recipe drives, with its
//     contend.Driver: how nodes sort, how many may hold, which contenders
//     block and when to list again. Decide is the one check; the knowledge
//     of gone nodes spares waiters a list per hand-off.
//   - Holds (token, fenced writes, Done) and long-lived participation in a
//     queue (a leader latch's terms), on an OwnedNode.
//   - OwnedNode, a node of ours that must exist: made in the background
//     (protected where asked, in any create mode), made again with the
//     latest data after a deletion or a lost session (a sequential one at
//     a new path), checked to belong to the current session, deleted with
//     a guaranteed delete on Close.
//   - CompareAndSet, the compare-and-set loop on a versioned node: read,
//     compute, write on condition of the version read, and on a conflict
//     read again, under the retry policy.
//   - The two primitives every recipe waits and watches through:
//     Await, to wait until a condition over a watched read holds (with the
//     lost-session rule written once), and the Follower, to keep what reads
//     see current: it runs many reads on one goroutine, each watch and
//     state change arriving on its one queue named by read, node, event
//     type and watch kind (so only the read whose watch fired runs again),
//     reports the connection states and, once, that every read has read;
//     it reads again on reconnection and after a new session, with
//     backoff. Follower.AddNode follows one node's data; the watched read
//     (getData with a watch, else exists for the node's creation) is
//     written once: ReadData, ReadChildren, ReadExists.
//
// # Adding a recipe
//
// A new recipe is one new package that imports recipes and this package,
// and touches nothing here. A lock-like recipe declares a contend.Driver
// (its lock names, its number of leases, which contenders block it) and
// queues with Client.Enter and Contest.Acquire; fencing and Done come from
// the Hold it builds on the node. Anything else is a condition or a view:
//
//   - A barrier waits with Await: DistributedBarrier's look is an exists
//     with a watch (Done when the node is gone); DistributedDoubleBarrier's
//     is a children list with a watch (Done at N children to enter, at none
//     to leave), with Wait.Session set to the session of its own node so
//     that a lost session ends the wait.
//   - A cache follows with a Follower: NodeCache is AddNode,
//     PathChildrenCache is a children read plus an AddNode per child (added
//     and removed as the list changes, all on the Follower's goroutine),
//     and a tree cache is the same one level further at a time, each node
//     keeping one watch of each kind (Watches.Armed). A FollowEvent
//     names the node and what happened to it, so persistent recursive
//     watches can later feed the same events from one watch on the root.
//     SharedValue and SharedCount (package shared) are an AddNode with
//     versioned writes through CompareAndSet; an atomic counter is
//     CompareAndSet alone.
//   - Persistent nodes, group membership and a registered service
//     instance are an OwnedNode each (SetData for a new payload, Listen
//     for the node made again), and service discovery reads a cache of
//     JSON instances.
//
// Each of those is its own package next to mutex and election.
//
// # The leaves beside it
//
// What is pure, or shared by the engine and the recipes without needing a
// client, lives in leaf packages the engine imports: zkpath (paths, node
// names, the Namespace that maps recipe paths to server paths), contend
// (the lock-like recipes' rule), zkop (a transaction's ops), lifecycle
// (the one lifecycle of long-lived recipes), notify (queues, listeners,
// IsClosed), zkerr and zkstate (errors and connection states).
package engine
