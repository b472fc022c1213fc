package cache

import (
	"fmt"

	"github.com/go-zookeeper/zk"
)

// EventType says what an Event reports.
type EventType uint8

const (
	// NodeCreated: a node is in the cache that was not (New is set).
	NodeCreated EventType = iota + 1
	// NodeChanged: a cached node's data was written (its mzxid moved; the
	// bytes may be the same). Old and New are set.
	NodeChanged
	// NodeDeleted: a node left the cache (Old is set). A node deleted
	// with its subtree is reported after its descendants, deepest first.
	NodeDeleted
	// Initialized: the first full load is done; reported once in the
	// cache's life (see Cache).
	Initialized
	// Resynced: a full read of the subtree, made after the cache's watch
	// was set again on a new connection (or after a failed read), has
	// been merged: the events before it bring the cache to what that read
	// saw (see Cache). Never before Initialized.
	Resynced
)

// String names the type as Curator does: NODE_CREATED, NODE_CHANGED,
// NODE_DELETED, INITIALIZED, and RESYNCED.
func (t EventType) String() string {
	switch t {
	case NodeCreated:
		return "NODE_CREATED"
	case NodeChanged:
		return "NODE_CHANGED"
	case NodeDeleted:
		return "NODE_DELETED"
	case Initialized:
		return "INITIALIZED"
	case Resynced:
		return "RESYNCED"
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// Node is a cached node: its path (namespace-relative, as every path the
// library returns), its data (nil under WithoutData) and a copy of its
// Stat as of its last data change: the children fields (Cversion,
// NumChildren, Pzxid) may be older, as the cache does not read a node
// again when only its children change; Cache.Children gives them.
// The Data slice is the cache's own memory, shared with every caller and
// listener (a slice of a block of many nodes' records, its capacity
// capped to its length): do not modify it. The cache never writes it
// again, so a Node stays as it was when read, whatever changes after.
type Node struct {
	Path string
	Data []byte
	Stat zk.Stat
}

// Event is one change of the cache, reported to listeners.
type Event struct {
	Type EventType
	// Path is the node that changed (never the cache's root unless the
	// root itself changed); empty for Initialized and Resynced.
	Path string
	// Old is the node as cached before the change (NodeChanged,
	// NodeDeleted); nil otherwise.
	Old *Node
	// New is the node as cached after the change (NodeCreated,
	// NodeChanged); nil otherwise.
	New *Node
}

// String formats the event as "NODE_CHANGED /path".
func (e Event) String() string {
	if e.Path == "" {
		return e.Type.String()
	}
	return e.Type.String() + " " + e.Path
}
