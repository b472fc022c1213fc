// Package cache is Curator's CuratorCache for Go: a local mirror of a
// ZooKeeper subtree (configuration, feature flags, a service registry, a
// shard map), of one node (NodeCache's view), or of one node's children
// (PathChildrenCache's view), kept current by watches, with events when
// something changes. One implementation serves every view: New (and
// NewTreeCache) for a subtree, optionally down to WithMaxDepth;
// NewNodeCache for a node; NewChildrenCache for a node's children.
//
// A cache reads and watches; it never writes or creates anything in
// ZooKeeper, not even its root, which need not exist.
//
// # How it keeps current
//
// On ZooKeeper 3.6 and later the cache sets one persistent recursive
// watch on its root (a persistent one, not recursive, for a NodeCache):
// one server watch however large the subtree. Each event makes the cache
// read the node that changed, as Curator's CuratorCache makes one getData
// per event: the read is sent as the event comes, by the client's
// receiving goroutine before it reads the connection's next frame, so
// the reads of successive events go out pipelined on the session, in the
// events' order, whatever the cache's own goroutines are doing; the
// events are applied in order as their replies come. The client sets
// the watch again on every new connection, and since ZooKeeper does not
// replay what changed while the watch was away, the cache then reads
// the whole subtree again (a resync) and reports what differs. The first
// load and every resync read 64 nodes per request (ZooKeeper 3.6's
// multiRead: their data and stats, then their children's names), with up
// to 64 such requests in flight, so a load of 100,000 nodes is about
// 3,200 requests and one round trip per level of the tree (node by node,
// pipelined, under WithoutData, whose reads need the children's stat).
//
// On a server without persistent watches (before 3.6), or with
// WithOneShotWatches, the cache keeps itself current with one-shot
// watches, as Curator's TreeCache does: a data watch and a children watch
// per node, read again each time one fires, after every reconnection and
// after a new session; failed reads are retried under the client's retry
// policy, never in a tight loop. The reads due together (every node's,
// after a fault) run 64 at a time, pipelined as a load's are, so the
// cache heals in a few round trips per level of the tree, not two a node
// (1,111 nodes on a 10 ms link: about a second after the link is back). Either way the cache gives the same
// reads and the same kinds of events; on one-shot watches the events of
// different nodes come in the order the cache read them, which may not
// be the order the server applied the changes in (a node's own events
// keep theirs).
//
// # Events
//
// NodeCreated, NodeChanged and NodeDeleted carry the node before (Old)
// and after (New) the change, and the path of the node that changed,
// never the watched root unless it changed. A change is recognized by the
// node's mzxid, and a deletion and a creation by its czxid, not by its
// version (Curator's CuratorCache compares versions, and so misses a node
// deleted and created again with the same version while the client was
// away; this cache reports NodeDeleted and then NodeCreated).
//
// Initialized is reported once in the cache's life, when the first full
// load is done, also when the root does not exist (an empty cache) and
// whatever the number of children (Curator 5.4 never reported it past
// 65,535: CURATOR-690). Resynced is reported after each later full read
// (a resync, after a new connection or a failed read) has been merged:
// the NodeCreated, NodeChanged and NodeDeleted events just before it take
// the cache to what that read saw. So after Resynced the cache holds
// every change the server applied before the watch was set again; changes
// after that point are in events that follow.
//
// Listeners hear the current contents first (a NodeCreated for each
// cached node, then Initialized once the first load is done), then every
// change, in the order the server applied them, each listener on a
// goroutine of its own (never the client's event loop: a slow listener
// delays only itself). Subscribe gives the same on a channel.
// Filters select from them as Curator's listener builder does
// (ForCreates, ForChanges, ForDeletes, ForInitialized, AfterInitialized).
//
// Each watch event is checked against its own read, made after it came:
// a change is applied only when the node's mzxid moved forward, a node
// whose czxid differs was deleted and created again, and a deletion is
// applied only when the node the cache holds is gone (not when the
// deleted node was an older one the cache has already replaced), so that
// the events a listener hears, replayed in order, always give the
// cache's contents. A deletion costs a read (of the node's stat) only
// when it can be that old: when a read of the node (its own, or a full
// read's) may have been answered after the deletion's event came (events
// and replies come in the connection's order); most are applied at once.
//
// # What the cache guarantees, and what it does not
//
// A cache is eventually consistent. It guarantees that, once the server
// is reachable and quiet, the cache equals the server node for node
// (path, data, version, mzxid), and that every difference on the way is
// reported as an event, in the server's order for the changes it saw as
// they happened. It does not guarantee:
//
//   - How current it is at a given moment: a change is in the cache one
//     event delivery and one read after the server applied it (about a
//     round trip on a healthy session); while the client is disconnected
//     the cache is as old as the last event before the cut, and it
//     catches up with a resync after the session (or a new one) is back.
//     Reads from memory never block and never tell how old they are:
//     watch the client's connection state for that.
//   - Every intermediate state: a node changed twice before the read its
//     first change's event started reaches the server is reported once
//     (NodeChanged with the latest data), as by Curator's CuratorCache; a
//     node created and deleted in between may not be reported at all; and
//     a resync reports the difference, not the history (many changes
//     while away are one NodeChanged; a node deleted and created again is
//     NodeDeleted then NodeCreated). Since both read each event's node as
//     the event comes, a version Curator's cache reports beside this one
//     is reported by this one too, unless this one's read loses the race
//     against the next change (a loaded machine, a slow process:
//     internal/interop's TestCuratorCacheVersions measures it).
//   - A node's children fields of Stat (Cversion, NumChildren, Pzxid) as
//     of now: Node.Stat is as of the node's last data change; Children
//     lists the cached children.
//   - Nodes the session may not read: since ZooKeeper 3.8.4 and 3.9.2 the
//     server does not report changes of nodes the session cannot read
//     (ACLs), and a read refused is left out.
//   - The one-shot watches of WithOneShotWatches stay on the server
//     after Close until they fire, on every version (Close removes the
//     persistent watch from the server). Before 3.9 a one-shot watch set
//     through the same client on the exact root of a cache would replace
//     its persistent watch (ZOOKEEPER-4466): the client refuses them.
//
// # Memory
//
// The cache holds every node of its subtree (and its data, unless
// WithoutData) in the process: size it to the subtree it mirrors. It
// keeps them packed: a tree of nodes addressed by index, each with the
// sorted indexes of its children, and per node one record of bytes in
// blocks of up to 64 KiB, holding the node's name (not its path: paths
// are rebuilt on each read and event), its Stat packed as varints (about
// 16 bytes where zk.Stat takes 72) and its data. Measured (examples/bench
// -which cache, ZooKeeper 3.9.6, 101,001 nodes under fan-out 100 with
// 100-byte values): 139 heap bytes per cached node, about 40 beside the
// value, against 358 with a map of Node values and about 400 for Curator
// 5.7.1's CuratorCache on the same tree. A change writes a new record
// and never rewrites bytes in place; the blocks are compacted once more
// than half of them is superseded records. Reads and events build their
// Node values as they go (a path string per node); a Node's Data is a
// slice of a block, shared, so a Data held after the node changed keeps
// its block (up to 64 KiB) in memory. A value over 16 KiB has an
// allocation of its own.
//
// # ACLs
//
// A cache creates nothing, so ACLs only limit what it reads: a node it may
// not read is left out with its subtree and logged at warn, and Start and
// WaitReady succeed. See docs/security.md.
package cache
