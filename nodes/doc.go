// Package nodes is Curator's nodes recipes (org.apache.curator.framework.
// recipes.nodes) on ZooKeeper, with Curator's znodes, so Go and Java
// processes share them: PersistentNode, PersistentTTLNode and
// GroupMember.
//
// A PersistentNode is a node of ours that exists while it runs, in any
// create mode (TTL modes with WithTTL; containers), optionally protected.
// It is built on the engine's owned node, the one a leader latch stands
// on.
//
// # Guarantees
//
//   - Start creates the node in the background (missing parents as
//     containers); WaitReady waits for it within a ctx and
//     returns its actual path.
//   - A node that goes (deleted by another client, with its parent,
//     reaped, or with a lost session) is created again at the same path,
//     with the latest data set (CURATOR-241). A sequential node is made
//     again at the path it had, in the plain form of its mode
//     (CURATOR-190/483); a protected node gets a new protected name.
//   - A node already at the path (left by an earlier run, or made by
//     someone else) is adopted and given our data. An ephemeral node of
//     another session at the path is not ours: it is reported
//     (Event.Foreign) and left alone, and ours is made once it goes.
//   - SetData works before the first create succeeds (Curator refuses it:
//     CURATOR-507): the first node is made with the latest data.
//   - Close deletes the node with a guaranteed delete.
//   - A TTL mode refused by a server that runs without
//     -Dzookeeper.extendedTypesEnabled=true gives an error that names that
//     setting (WaitReady returns it).
//   - Listeners hear the current node first, then each node made again,
//     in order (the listener rule of package recipes).
//
// # Limits
//
// A change another client makes to the node's data is not reverted (as in
// Curator); the node is checked on its watch and on every reconnection,
// so a deleted node is back within a round trip while connected, and
// within the reconnection after a lost session. A persistent node made
// and then lost track of by a crash before Close stays (it is persistent):
// use an ephemeral or TTL mode for a node that must go with the process.
//
// # ACLs
//
// Each node (a TTL node's touch child too) and its missing parents get the
// Client's ACLs (recipes.WithACLProvider). A create the server refuses is
// returned by WaitReady at once (an error wrapping recipes.ErrNoAuth) and
// tried again only at the next change of connection state or SetData, as
// Curator's PersistentNode stops at NOAUTH. See docs/security.md.
package nodes
