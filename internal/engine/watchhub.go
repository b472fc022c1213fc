package engine

import (
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// watchKind is the kind of watch a read leaves on a node. ZooKeeper, and
// go-zookeeper after it, keep the three apart: each fires on its own
// events.
type watchKind uint8

const (
	// watchData is getData's watch: it fires when the node is written or
	// deleted. A getData of a missing node leaves none.
	watchData watchKind = iota + 1
	// watchExists is exists's watch: it fires when the node is created,
	// written or deleted; it is the only one a missing node can carry.
	watchExists
	// WatchChildren is getChildren's watch: it fires when a child is
	// created or deleted, and when the node itself is deleted.
	WatchChildren
)

// String names the watch as ZooKeeper's request does.
func (k watchKind) String() string {
	switch k {
	case watchData:
		return "data"
	case watchExists:
		return "exists"
	case WatchChildren:
		return "children"
	}
	return "unknown"
}

// firedKinds returns the kinds of watch on a node that an event of type t
// fires, as the server and go-zookeeper (notifyWatches) decide it. Nil for
// an event that is not about a node.
func firedKinds(t zk.EventType) []watchKind {
	switch t {
	case zk.EventNodeCreated:
		return []watchKind{watchExists}
	case zk.EventNodeDataChanged:
		return []watchKind{watchExists, watchData}
	case zk.EventNodeChildrenChanged:
		return []watchKind{WatchChildren}
	case zk.EventNodeDeleted, zk.EventNotWatching:
		return []watchKind{watchExists, watchData, WatchChildren}
	}
	return nil
}

// watchID names one watch of the connection: a node and a kind.
type watchID struct {
	path string
	kind watchKind
}

// watchReg is one read's interest in one watch: registered before the
// request that sets the watch is sent, so that its event cannot come
// first; dead once it fired or was dropped.
type watchReg struct {
	f    *Follower
	key  string
	id   watchID
	dead atomic.Bool
}

// watchHub routes the connection's watch events and state transitions to
// the followers, each on the one queue it waits on: a fired watch goes to
// the read that left it, named by key, path and kind, with no goroutine
// and no select per watch. Events come from go-zookeeper's event callback
// (or, for an adopted connection, its event channel), which sees every
// watch event before go-zookeeper hands it to the watch's own channel.
type watchHub struct {
	mu        sync.Mutex
	regs      map[watchID]map[*watchReg]struct{}
	followers map[*Follower]struct{}
}

// register records f's read key's interest in the watch id.
func (h *watchHub) register(f *Follower, key string, id watchID) *watchReg {
	r := &watchReg{f: f, key: key, id: id}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.regs == nil {
		h.regs = map[watchID]map[*watchReg]struct{}{}
	}
	set := h.regs[id]
	if set == nil {
		set = map[*watchReg]struct{}{}
		h.regs[id] = set
	}
	set[r] = struct{}{}
	return r
}

// unregister drops r: its request failed, or its read no longer cares.
// The server's watch, if it was set, fires later to nobody.
func (h *watchHub) unregister(r *watchReg) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.dead.Store(true)
	if set := h.regs[r.id]; set != nil {
		delete(set, r)
		if len(set) == 0 {
			delete(h.regs, r.id)
		}
	}
}

// dispatch hands a watch event to every read whose watch it fires. It is
// called for every event of the connection; session events pass through.
func (h *watchHub) dispatch(ev zk.Event) {
	if ev.Type == zk.EventSession {
		return
	}
	kinds := firedKinds(ev.Type)
	if len(kinds) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range kinds {
		id := watchID{ev.Path, k}
		for r := range h.regs[id] {
			r.dead.Store(true)
			if r.f == nil {
				continue // a Watches of no Follower: it only asks Armed
			}
			r.f.q.Push(followItem{reg: r, ev: FollowEvent{Kind: followWatch, Key: r.key, Path: ev.Path, Type: ev.Type, Watch: k}})
		}
		delete(h.regs, id)
	}
}

// fire hands one watch's event to its read, unless it fired already.
func (h *watchHub) fire(r *watchReg, ev zk.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.dead.Load() {
		return
	}
	r.dead.Store(true)
	if set := h.regs[r.id]; set != nil {
		delete(set, r)
		if len(set) == 0 {
			delete(h.regs, r.id)
		}
	}
	if r.f != nil {
		r.f.q.Push(followItem{reg: r, ev: FollowEvent{Kind: followWatch, Key: r.key, Path: r.id.path, Type: ev.Type, Watch: r.id.kind}})
	}
}

// backstop makes r hear its watch on an adopted connection, whose events
// reach the Client late, through go-zookeeper's event channel, which drops
// events when it is full: a goroutine waits on the watch's own channel
// (which go-zookeeper never drops, and which is this watch's alone) until
// it fires, the connection drops the watch (the session ended or the
// connection closed) or the client closes. A connection Connect dialled
// needs none: its event callback sees every event in order with the
// replies: the caller calls it only for an adopted connection.
func (h *watchHub) backstop(r *watchReg, ch <-chan zk.Event, closed <-chan struct{}) {
	if ch == nil {
		return
	}
	go func() {
		select {
		case ev, ok := <-ch:
			if ok {
				h.fire(r, ev)
			}
		case <-closed:
		}
	}()
}

// join adds f to the followers told of state transitions; c.sm.mu is held,
// so that no transition comes between the state f starts from and the
// first one it is told.
func (h *watchHub) join(f *Follower) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.followers == nil {
		h.followers = map[*Follower]struct{}{}
	}
	h.followers[f] = struct{}{}
}

func (h *watchHub) leave(f *Follower) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.followers, f)
}

// state tells every follower of a transition; c.sm.mu is held.
func (h *watchHub) state(s zkstate.State, session int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for f := range h.followers {
		f.q.Push(followItem{ev: FollowEvent{Kind: FollowState, State: s}, session: session})
	}
}

// watching returns how many reads wait for a watch (for tests).
func (h *watchHub) watching() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, set := range h.regs {
		n += len(set)
	}
	return n
}

// armedAt reports whether a read waits for a watch of any kind on path.
func (h *watchHub) armedAt(path string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range []watchKind{watchData, watchExists, WatchChildren} {
		if len(h.regs[watchID{path, k}]) > 0 {
			return true
		}
	}
	return false
}
