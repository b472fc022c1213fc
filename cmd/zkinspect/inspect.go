package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// Kinds of node, as classify tells them.
const (
	kindMutex     = "mutex"
	kindRWLock    = "rwlock"
	kindSemaphore = "semaphore"
	kindLatch     = "latch"
	kindLeases    = "leases"  // lease nodes under a node that is not a semaphore
	kindEmpty     = "empty"   // a node without children or data
	kindData      = "data"    // a node with data and without children: not a queue
	kindUnknown   = "unknown" // children that make no recipe zkinspect knows
	kindParent    = "parent"  // persistent children only: a summary walks them
	kindDouble    = "doublebarrier"
	// kindQueue and kindSimpleQueue are work queues (package queue): items
	// queue-...<seq> (Curator's DistributedQueue family) or qn-<seq>
	// (SimpleDistributedQueue, ZooKeeper's contrib queue).
	kindQueue       = "queue"
	kindSimpleQueue = "simple-queue"
	kindGroup       = "group"      // ephemeral children without children: a GroupMember group
	kindTTL         = "ttlnode"    // one persistent child named touch: a PersistentTTLNode
	kindService     = "service"    // a discovery service: instances of it (curator-x-discovery)
	kindQueueLock   = "queue-lock" // a queue's lock directory: ephemeral locks named as items
	// A summary tells its data nodes apart by their data: kindData for
	// plain data, and these.
	kindCounter = "counter" // 4 or 8 bytes: SharedCount, DistributedAtomicInteger/Long
	kindBarrier = "barrier" // an IP address, Curator's default data: a DistributedBarrier up, perhaps
)

// Roles of a node in its queue.
const (
	roleHolder    = "holder"
	roleLeader    = "leader"
	roleWaiter    = "waiter"
	roleAcquiring = "acquiring"    // a semaphore's internal lock holder, taking a lease
	roleUnknown   = "maybe-holder" // held or waiting: the inspector cannot tell
	roleNone      = "unknown"      // a child of a node zkinspect cannot classify
	roleEntered   = "entered"      // a double barrier's member once the ready node exists
	roleItem      = "item"         // a work queue's item
	roleMember    = "member"       // a group's member
	roleTouch     = "touch"        // a TTL node's touch child
	roleMarker    = "marker"       // zkrecipes' marker beside a queue item's lock
)

// Libraries, by node name.
const (
	libCurator = "curator-compatible"
	libZKLock  = "go-zookeeper"
	libKazoo   = "kazoo"
	libUnknown = "unknown"
)

var (
	zkLockName = regexp.MustCompile(`^_c_[0-9a-f]{32}-lock-\d{10}$`)
	kazooName  = regexp.MustCompile(`^[0-9a-f]{32}__r?lock__\d{10}$`)
)

// library names the client library whose naming a node follows: a
// protected name (zkpath.ParseProtected) is Curator's and zkrecipes'.
func library(name string) string {
	switch {
	case isProtected(name), reUUIDName.MatchString(name): // a double barrier's member
		return libCurator
	case zkLockName.MatchString(name):
		return libZKLock
	case kazooName.MatchString(name):
		return libKazoo
	}
	return libUnknown
}

// isProtected reports whether name was made by a protected create.
func isProtected(name string) bool {
	_, _, ok := zkpath.ParseProtected(name)
	return ok
}

// Report is what one inspection found: a queue, or a summary of the locks
// under a path.
type Report struct {
	Path string `json:"path"`
	// Namespace is -namespace: every path shown is inside it.
	Namespace string `json:"namespace,omitempty"`
	Mode      string `json:"mode"` // "queue" or "summary"
	Queue     *Queue `json:"queue,omitempty"`
	// Discovery is a service discovery base path or service (mode
	// "discovery").
	Discovery *Discovery    `json:"discovery,omitempty"`
	Locks     []LockSummary `json:"locks,omitempty"`
	// DataNodes counts the data nodes a summary found (each listed, of
	// kind counter, barrier or data).
	DataNodes int `json:"data_nodes,omitempty"`
	// Skipped are the subtrees a summary could not read: the output is
	// partial (exit status 3).
	Skipped []Skipped `json:"skipped,omitempty"`
	Notes   []string  `json:"notes,omitempty"`
	// Time is when the inspection was made (shown by -watch).
	Time time.Time `json:"-"`
}

// Queue is one lock-like queue in order.
type Queue struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	// Held is null when it is not known (an unknown node, or lease nodes
	// outside a semaphore).
	Held    *bool `json:"held"`
	Holders int   `json:"holders"`
	Waiters int   `json:"waiters"`
	// Undecided counts the nodes that hold or wait: the inspector cannot
	// tell which (role maybe-holder).
	Undecided int `json:"undecided,omitempty"`
	// OldestWaiterAgeMS is the age of the oldest waiting node.
	OldestWaiterAgeMS *int64 `json:"oldest_waiter_age_ms,omitempty"`
	// MaxLeases is a semaphore's maximum, when -count gave it.
	MaxLeases *int `json:"max_leases,omitempty"`
	// Depth is a work queue's number of items (nodes; a PutMulti counts
	// once).
	Depth *int `json:"depth,omitempty"`
	// OldestItemAgeMS is the age of a work queue's oldest item.
	OldestItemAgeMS *int64 `json:"oldest_item_age_ms,omitempty"`
	// Nodes are the contenders in queue order (a semaphore's leases; every
	// child of an unknown node).
	Nodes []Node `json:"nodes"`
	// InternalLock is a semaphore's internal lock queue (<path>/locks).
	InternalLock []Node `json:"internal_lock,omitempty"`
	// Ready is whether a double barrier's ready node exists (its members
	// have entered); null for other kinds.
	Ready *bool `json:"ready,omitempty"`
	// LastTouchMS is how long ago a TTL node's touch child was last
	// touched (its mtime, by the server's clock).
	LastTouchMS *int64 `json:"last_touch_ms,omitempty"`
	// Counter is a data node of 4 or 8 bytes read as a counter.
	Counter *Counter `json:"counter,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// Counter is a data node's value as a counter, by its length: "long" for
// 8 bytes (DistributedAtomicLong, atomicval.Int64), "int" for 4
// (SharedCount, DistributedAtomicInteger, atomicval.Int32, Kazoo's
// Counter with support_curator), big-endian.
type Counter struct {
	Type  string `json:"type"`
	Value int64  `json:"value"`
}

// Node is one contender (or one child of an unknown node).
type Node struct {
	Position int    `json:"position"`
	Name     string `json:"name"`
	Path     string `json:"path"`
	Key      string `json:"sequence"` // what it is ordered by
	Lock     string `json:"lock,omitempty"`
	Role     string `json:"role"`
	// Session is the ephemeralOwner, "0x" and 16 hex digits ("" for a
	// persistent node).
	Session    string    `json:"session"`
	Ctime      time.Time `json:"ctime"`
	AgeMS      int64     `json:"age_ms"`
	Data       string    `json:"data"`                  // the data, when it is UTF-8
	DataBase64 string    `json:"data_base64,omitempty"` // the data, when it is not
	DataLen    int       `json:"data_len"`
	Library    string    `json:"library"`

	raw    []byte
	owner  int64
	writer bool
	age    time.Duration
}

// Skipped is a subtree a summary left out, and why.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// LockSummary is one line of a summary.
type LockSummary struct {
	Path              string `json:"path"`
	Kind              string `json:"kind"`
	Held              *bool  `json:"held"` // null when not known (an unknown node)
	Holders           int    `json:"holders"`
	Waiters           int    `json:"waiters"`
	Undecided         int    `json:"undecided,omitempty"`
	OldestWaiterAgeMS *int64 `json:"oldest_waiter_age_ms,omitempty"`
	Ready             *bool  `json:"ready,omitempty"` // a double barrier's
	// Depth and OldestItemAgeMS are a work queue's (Queue's).
	Depth           *int   `json:"depth,omitempty"`
	OldestItemAgeMS *int64 `json:"oldest_item_age_ms,omitempty"`
	// Unreadable counts a discovery service's nodes that do not read as
	// its instances (Holders counts those that do).
	Unreadable int `json:"unreadable,omitempty"`
	// Why says what keeps an unknown node from being classified.
	Why string `json:"why,omitempty"`
	// Counter is a counter's value; Bytes a plain data node's size.
	Counter *Counter `json:"counter,omitempty"`
	Bytes   *int     `json:"bytes,omitempty"`
}

// reader makes the read requests of one inspection, retrying connection
// losses, through the engine's watched reads. In watch mode (watches not
// nil: -watch's Follow keeps them) each read leaves a watch, unless one
// from an earlier inspection is still armed on that node: one of each
// kind per node, however many times it is drawn; a node that is gone
// keeps none.
type reader struct {
	c       *recipes.Client
	watches *engine.Watches
	now     time.Time
}

// read runs one read of path (a recipe path: the namespace is applied),
// retried; a failure names the operation and the server path, as the
// Client's own reads do.
func read[T any](ctx context.Context, r *reader, op, path string, do func(e *engine.Client, full string) (T, error)) (T, error) {
	var v T
	full, err := r.c.FullPath(path)
	if err != nil {
		return v, err
	}
	err = r.c.Retry(ctx, func() error {
		var err error
		v, err = do((*engine.Client)(r.c), full)
		return err
	})
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, recipes.ErrClosed), errors.Is(err, recipes.ErrNilClient), errors.Is(err, recipes.ErrInvalidArgument):
		return v, err // said once, as the Client says them
	}
	return v, fmt.Errorf("zkrecipes: %s %s: %w", op, full, err)
}

// children lists path's children; the stat is path's own (its data length
// tells a data node from an empty lock parent). A missing node is
// recipes.ErrNoNode.
func (r *reader) children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	v, err := read(ctx, r, "children", path, func(e *engine.Client, full string) (engine.ChildrenView, error) {
		v, err := e.ReadChildren(ctx, full, r.watches, false)
		if err == nil && !v.Exists {
			err = recipes.ErrNoNode
		}
		return v, err
	})
	return v.Children, v.Stat, err
}

// get reads path's data. A missing node is recipes.ErrNoNode.
func (r *reader) get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	v, err := read(ctx, r, "get", path, func(e *engine.Client, full string) (engine.NodeView, error) {
		v, err := e.ReadData(ctx, full, r.watches, false)
		if err == nil && !v.Exists {
			err = recipes.ErrNoNode
		}
		return v, err
	})
	return v.Data, v.Stat, err
}

// exists leaves a watch (in watch mode) on a node that may not exist yet.
func (r *reader) exists(ctx context.Context, path string) (bool, error) {
	return read(ctx, r, "exists", path, func(e *engine.Client, full string) (bool, error) {
		ok, _, err := e.ReadExists(ctx, full, r.watches)
		return ok, err
	})
}

// errNoNode says the inspected path does not exist: nothing holds or
// waits there (a recipe's parent is a container node, which the server
// removes once it is empty), or the path or the namespace is not the one
// the recipes use.
var errNoNode = errors.New("no such node (an idle lock's parent is a container the server removes; a DistributedBarrier here is down; or check the path and -namespace)")

// inspect reads the queue, or the locks, at cfg.path.
func inspect(ctx context.Context, r *reader, cfg config) (*Report, error) {
	r.now = time.Now()
	rep := &Report{Path: cfg.path, Namespace: r.c.Namespace(), Time: r.now}
	p, err := probeNode(ctx, r, cfg.path)
	if errors.Is(err, recipes.ErrNoNode) {
		if r.watches != nil { // to redraw when it appears
			if _, err := r.exists(ctx, cfg.path); err != nil {
				return nil, fmt.Errorf("%s: %w", cfg.path, err)
			}
		}
		return nil, fmt.Errorf("%s: %w", cfg.path, errNoNode)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.path, err)
	}
	if !cfg.summary {
		d, err := readDiscovery(ctx, r, p)
		if err != nil {
			return nil, err
		}
		if d != nil {
			rep.Mode, rep.Discovery = "discovery", d
			return rep, nil
		}
	}
	cl, err := classify(ctx, r, p)
	if err != nil {
		return nil, err
	}
	if cl.kind == kindLeases && cfg.path != "/" { // <semaphore>/leases: show the semaphore
		parent, _ := zkpath.SplitPath(cfg.path)
		pp, err := probeNode(ctx, r, parent)
		if err != nil && !errors.Is(err, recipes.ErrNoNode) {
			return nil, fmt.Errorf("%s: %w", parent, err)
		}
		if err == nil {
			pcl, err := classify(ctx, r, pp)
			if err != nil {
				return nil, err
			}
			if pcl.kind == kindSemaphore {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s holds a semaphore's leases: showing the semaphore %s", cfg.path, parent))
				rep.Path, p, cl = parent, pp, pcl
			}
		}
	}
	if cfg.summary || cl.kind == kindParent {
		rep.Mode = "summary"
		if err := summarise(ctx, r, cfg, rep, p, cl); err != nil {
			return nil, err
		}
		return rep, nil
	}
	rep.Mode = "queue"
	if cfg.v1 && cl.kind != kindMutex {
		rep.Notes = append(rep.Notes, "-v1: the path is not laid out as a semaphore v1 (lock- nodes directly under it): shown as found")
	}
	q, err := readQueue(ctx, r, cfg, p.path, cl, true)
	if err != nil {
		return nil, err
	}
	rep.Queue = q
	return rep, nil
}

// sortKey orders a queue node of the given kind, as Curator does
// (contend.SortKey with the recipe's lock name), with Kazoo's names as
// extra lock names.
func sortKey(kind, name string) string {
	switch kind {
	case kindRWLock:
		return contend.SortKey(name, rwlock.ReadLockName, rwlock.WriteLockName, kazooReadName, mutex.KazooLockName)
	case kindLatch:
		return contend.SortKey(name, election.LatchName)
	case kindLeases, kindSemaphore:
		return contend.SortKey(name, semaphore.LeaseName)
	case kindQueue, kindSimpleQueue:
		return name // Curator's DistributedQueue and SimpleDistributedQueue order
	case kindGroup, kindTTL, kindService, kindSharder:
		return name
	case kindQueueLock: // a marker beside the lock it marks
		item, _ := lockedItem(name)
		return item
	case kindUnknown:
		_, key := queueNodeName(name)
		if key == "" {
			return name
		}
		return key
	}
	return contend.SortKey(name, mutex.LockName, mutex.KazooLockName)
}

// nodes turns children of a queue of the given kind into Nodes, in queue
// order.
func (r *reader) nodes(kind string, kids []child) []Node {
	nodes := make([]Node, 0, len(kids))
	for _, c := range kids {
		n := Node{
			Name:    c.name,
			Path:    c.path,
			Key:     sortKey(kind, c.name),
			DataLen: len(c.data),
			Library: library(c.name),
			raw:     c.data,
		}
		if c.st != nil {
			n.Ctime = time.UnixMilli(c.st.Ctime).UTC()
			n.owner = c.st.EphemeralOwner
			n.age = max(r.now.Sub(n.Ctime), 0)
			n.AgeMS = n.age.Milliseconds()
		}
		if n.owner != 0 {
			n.Session = fmt.Sprintf("0x%016x", uint64(n.owner))
		}
		if utf8.Valid(c.data) {
			n.Data = string(c.data)
		} else {
			n.DataBase64 = base64.StdEncoding.EncodeToString(c.data)
		}
		if kind == kindRWLock {
			n.writer = c.lock == rwlock.WriteLockName || c.lock == mutex.KazooLockName
			n.Lock = "read"
			if n.writer {
				n.Lock = "write"
			}
		}
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b Node) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		if a.writer != b.writer { // a downgrade's read node after its write node
			if a.writer {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	for i := range nodes {
		nodes[i].Position = i + 1
	}
	return nodes
}

// readQueue makes the queue of the node at path, classified as cl. top is
// false within a summary, where the maximum of a semaphore is not known.
func readQueue(ctx context.Context, r *reader, cfg config, path string, cl *class, top bool) (*Queue, error) {
	kind := cl.kind
	q := &Queue{Path: path, Kind: kind, Nodes: []Node{}}
	switch kind {
	case kindEmpty:
		q.Held = new(bool)
		q.Notes = append(q.Notes, "no children: nothing holds or waits here", barrierNote)
		return q, nil
	case kindData:
		q.Held = new(bool)
		return readData(ctx, r, q)
	case kindSemaphore:
		return readSemaphore(ctx, r, cfg, q, cl, top)
	case kindDouble:
		return readDouble(r, q, cl), nil
	case kindQueue, kindSimpleQueue:
		q.Nodes = r.nodes(kind, cl.queue)
		depth := len(q.Nodes)
		q.Depth = &depth
		var oldest int64
		for i := range q.Nodes {
			n := &q.Nodes[i]
			n.Role, n.Library = roleItem, libCurator
			oldest = max(oldest, n.AgeMS)
			if kind == kindQueue { // the table shows the items, not Curator's framing
				if items, err := queue.Decode(n.raw); err == nil {
					n.raw = bytes.Join(items, []byte(", "))
				}
			}
		}
		q.OldestItemAgeMS = &oldest
		return q, nil
	case kindGroup:
		q.Nodes = r.nodes(kind, cl.queue)
		for i := range q.Nodes {
			q.Nodes[i].Role, q.Nodes[i].Library = roleMember, libCurator
		}
		held := len(q.Nodes) > 0
		q.Held, q.Holders = &held, len(q.Nodes)
		q.Notes = append(q.Notes, "a group (GroupMember): each member is <path>/<id>, ephemeral, with its payload as data (Curator's default: the member's IP address)")
		return q, nil
	case kindTTL:
		q.Nodes = r.nodes(kind, cl.queue)
		for i := range q.Nodes {
			q.Nodes[i].Role = roleTouch
		}
		held := true
		q.Held = &held
		if len(cl.queue) == 1 && cl.queue[0].st != nil {
			last := time.UnixMilli(cl.queue[0].st.Mtime).UTC()
			age := max(r.now.Sub(last), 0).Milliseconds()
			q.LastTouchMS = &age
			q.Notes = append(q.Notes, fmt.Sprintf("a TTL node (PersistentTtlNode): last touch %s (%s ago); its owner touches it every TTL/2", last.Format(time.RFC3339Nano), formatAge(time.Duration(age)*time.Millisecond)))
		}
		q.Notes = append(q.Notes, "ZooKeeper does not report a node's TTL (nor its TTL or container mode) to clients: the server deletes the touch node a TTL after its last touch, then this node")
		return readData(ctx, r, q)
	case kindQueueLock:
		return readQueueLocks(r, q, cl), nil
	case kindSharder:
		return readSharder(r, q, cl), nil
	case kindMutex:
		if top && cfg.v1 {
			return readV1(ctx, r, cfg, q, cl)
		}
	case kindUnknown:
		q.Nodes = r.nodes(kind, cl.queue)
		for i := range q.Nodes {
			q.Nodes[i].Role = roleNone
		}
		q.Notes = append(q.Notes, "cannot classify: "+cl.why+"; its children are listed as they are, with no role")
		return q, nil
	}
	nodes := r.nodes(kind, cl.queue)
	q.Nodes = nodes
	switch kind {
	case kindRWLock:
		rwRoles(q)
	case kindLeases:
		for i := range nodes {
			nodes[i].Role = roleUnknown
		}
		q.Notes = append(q.Notes, "a semaphore's leases, but the node above is not a semaphore (locks and leases only): whether each lease holds or waits for room is unknown")
	default:
		for i := range nodes {
			switch {
			case i > 0:
				nodes[i].Role = roleWaiter
			case kind == kindLatch:
				nodes[i].Role = roleLeader
			default:
				nodes[i].Role = roleHolder
			}
		}
	}
	tally(q, q.Nodes)
	if kind == kindLeases && q.Holders == 0 {
		q.Held = nil // unknown, not free
	}
	if kind == kindMutex && top {
		kazoo, curator := false, false
		for _, c := range cl.queue {
			kazoo = kazoo || c.lock == mutex.KazooLockName
			curator = curator || c.lock == mutex.LockName
		}
		if kazoo && curator {
			q.Notes = append(q.Notes, "Kazoo and lock- nodes share this queue: safe only if no Curator client uses it (Curator does not recognise Kazoo's nodes)")
		}
	}
	if len(cl.others) > 0 && top {
		names := make([]string, len(cl.others))
		for i, o := range cl.others {
			names[i] = o.name
		}
		q.Notes = append(q.Notes, fmt.Sprintf("children outside the queue (persistent, or not readable): %s; -summary walks them", shortList(names)))
	}
	return q, nil
}

// rwRoles marks a read/write lock's holders: the writer when it is first
// (with a read node of its session at its sequence: a downgrade), else the
// readers ahead of the first writer.
func rwRoles(q *Queue) {
	nodes := q.Nodes
	if len(nodes) == 0 {
		return
	}
	if first := nodes[0]; first.writer {
		nodes[0].Role = roleHolder
		for i := 1; i < len(nodes); i++ {
			n := &nodes[i]
			switch {
			case n.writer:
				n.Role = roleWaiter
			case n.Key == first.Key && n.owner == first.owner:
				n.Role = roleHolder // the downgrade's read node
			case n.owner == first.owner && n.owner != 0:
				n.Role = roleUnknown
				q.Notes = append(q.Notes, fmt.Sprintf("%s is a read node of the write holder's session: held if the write lock's owner took it (Curator 5.4's downgrade), else waiting", n.Name))
			default:
				n.Role = roleWaiter
			}
		}
		return
	}
	writerAhead := false
	for i := range nodes {
		n := &nodes[i]
		if n.writer {
			writerAhead = true
		}
		if writerAhead {
			n.Role = roleWaiter
		} else {
			n.Role = roleHolder
		}
	}
}

// tally counts holders and waiters and the oldest waiter.
func tally(q *Queue, nodes []Node) {
	for _, n := range nodes {
		switch n.Role {
		case roleHolder, roleLeader, roleEntered:
			q.Holders++
		case roleUnknown:
			q.Undecided++
		case roleWaiter:
			q.Waiters++
			if q.OldestWaiterAgeMS == nil || n.AgeMS > *q.OldestWaiterAgeMS {
				age := n.AgeMS
				q.OldestWaiterAgeMS = &age
			}
		}
	}
	held := q.Holders > 0
	q.Held = &held
}

// readSemaphore makes a semaphore's queue from its parts, <path>/leases
// and <path>/locks, as classify read them.
func readSemaphore(ctx context.Context, r *reader, cfg config, q *Queue, cl *class, top bool) (*Queue, error) {
	part := func(p *probe) []Node {
		if p == nil {
			return []Node{}
		}
		return r.nodes(kindSemaphore, p.kids)
	}
	leases := part(cl.leases)
	var locks []Node
	if cl.locks != nil {
		locks = r.nodes(kindMutex, cl.locks.kids)
	} else {
		locks = []Node{}
	}
	q.Nodes, q.InternalLock = leases, locks
	if top && cfg.count != "" {
		n, err := readMax(ctx, r, cfg.count)
		if err != nil {
			return nil, err
		}
		q.MaxLeases = &n
	}
	// The internal lock's holder is taking a lease: its newest lease, if it
	// made it already, is the one that may be waiting for room.
	pending := -1
	if len(locks) > 0 && len(leases) > 0 {
		last := len(leases) - 1
		if locks[0].owner != 0 && leases[last].owner == locks[0].owner {
			pending = last
		}
	}
	for i := range leases {
		leases[i].Role = roleHolder
	}
	switch {
	case q.MaxLeases == nil && pending >= 0:
		leases[pending].Role = roleUnknown
		q.Notes = append(q.Notes, "the newest lease belongs to the internal lock's holder: it holds, or waits for a lease to go if the maximum is reached")
	case q.MaxLeases != nil && len(leases) > *q.MaxLeases && pending >= 0:
		leases[pending].Role = roleWaiter
	case q.MaxLeases != nil && len(leases) > *q.MaxLeases:
		q.Notes = append(q.Notes, fmt.Sprintf("%d leases are held, over the maximum of %d: it shrank after they were granted", len(leases), *q.MaxLeases))
	}
	if top && q.MaxLeases == nil {
		q.Notes = append(q.Notes, "the maximum is unknown: give -count <SharedCount path> or -count <n>")
	}
	for i := range locks {
		if i == 0 {
			locks[i].Role = roleAcquiring
		} else {
			locks[i].Role = roleWaiter
		}
	}
	tally(q, leases)
	if len(locks) > 1 {
		tally(q, locks[1:]) // counts only waiters
	}
	return q, nil
}

// readData describes a data node: its size, its data and, for 4 or 8
// bytes (not an IP address's text), its value as a counter; a data node
// holding an IP address could be a barrier (barrierNote).
func readData(ctx context.Context, r *reader, q *Queue) (*Queue, error) {
	data, _, err := r.get(ctx, q.Path)
	if err != nil && !errors.Is(err, recipes.ErrNoNode) {
		return nil, fmt.Errorf("%s: %w", q.Path, err)
	}
	q.Notes = append(q.Notes, fmt.Sprintf("a data node (%d bytes, no children): not a lock, semaphore or latch queue", len(data)))
	note := "data: " + formatData(data)
	address := isAddress(data)
	if q.Counter = counterOf(data); q.Counter != nil && q.Counter.Type == "int" {
		note += fmt.Sprintf(" (as a SharedCount: %d)", q.Counter.Value)
	}
	q.Notes = append(q.Notes, note)
	if address && q.Kind == kindData {
		q.Notes = append(q.Notes, barrierNote)
	}
	return q, nil
}

// isAddress reports whether data is an IP address's text: Curator's
// default data, which a barrier's node (and a queue's directory) holds.
func isAddress(data []byte) bool { return net.ParseIP(string(data)) != nil }

// counterOf reads data as a counter: 4 bytes an int (SharedCount,
// DistributedAtomicInteger, atomicval.Int32), 8 a long
// (DistributedAtomicLong, atomicval.Int64), big-endian; nil otherwise,
// and for an IP address's text.
func counterOf(data []byte) *Counter {
	switch {
	case isAddress(data):
	case len(data) == 4:
		return &Counter{Type: "int", Value: int64(int32(binary.BigEndian.Uint32(data)))}
	case len(data) == 8:
		return &Counter{Type: "long", Value: int64(binary.BigEndian.Uint64(data))}
	}
	return nil
}

// dataLine is a summary's line for the data node at path, told apart by
// its data as readData tells it: a counter, a barrier that is up (an IP
// address; a queue directory emptied holds the same, hence "up?" in the
// table), else plain data.
func dataLine(path string, data []byte) LockSummary {
	switch c := counterOf(data); {
	case c != nil:
		return LockSummary{Path: path, Kind: kindCounter, Counter: c}
	case isAddress(data):
		return LockSummary{Path: path, Kind: kindBarrier}
	}
	n := len(data)
	return LockSummary{Path: path, Kind: kindData, Bytes: &n}
}

// barrierNote is said of a node that is nothing else zkinspect knows and
// could be a DistributedBarrier: no children, and no data or an IP
// address (Curator's default data, which its barrier node holds).
const barrierNote = "could be a DistributedBarrier, up (a barrier's node has no children, and no data or its creator's IP address; the barrier is up while the node exists)"

// readQueueLocks makes a queue's lock directory's list: each lock is held
// by the consumer working on the item of that name, in the queue the
// directory is the lockPath of (its path is not stored with it); a
// marker of zkrecipes' is listed beside its lock.
func readQueueLocks(r *reader, q *Queue, cl *class) *Queue {
	q.Nodes = r.nodes(kindQueueLock, cl.queue)
	markers := 0
	for i := range q.Nodes {
		n := &q.Nodes[i]
		n.Role, n.Library = roleHolder, libCurator
		if _, marker := lockedItem(n.Name); marker {
			n.Role = roleMarker
			markers++
		}
	}
	marker := func(n Node) int {
		if n.Role == roleMarker {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(q.Nodes, func(a, b Node) int { // a lock, then its marker
		return cmp.Or(strings.Compare(a.Key, b.Key), marker(a)-marker(b))
	})
	for i := range q.Nodes {
		q.Nodes[i].Position = i + 1
	}
	tally(q, q.Nodes)
	q.Notes = append(q.Notes, "a queue's lock directory (DistributedQueue's lockPath, lock-safety mode): each lock <path>/<item> is held by the consumer working on that item of its queue, which deletes the item once done (the queue's path is not stored here)")
	if markers > 0 {
		q.Notes = append(q.Notes, "_c_<uuid>-<item> is zkrecipes' marker, made with its lock in one transaction (it proves the lock is this consumer's)")
	}
	return q
}

// readDouble makes a double barrier's member list: every member has
// entered once the ready node exists, else each waits in enter (the
// barrier's memberQty is not stored in ZooKeeper).
func readDouble(r *reader, q *Queue, cl *class) *Queue {
	ready := cl.ready
	q.Ready = &ready
	q.Nodes = r.nodes(kindDouble, cl.queue)
	for i := range q.Nodes {
		q.Nodes[i].Role = roleWaiter
		if ready {
			q.Nodes[i].Role = roleEntered
		}
	}
	tally(q, q.Nodes)
	q.Held = &ready
	if ready {
		q.Notes = append(q.Notes, "ready exists: the members present have entered (or are leaving: each deletes its node, the lowest last, then ready is deleted)")
	} else {
		q.Notes = append(q.Notes, "no ready node: the members wait in enter until memberQty are present (memberQty is not stored in ZooKeeper)")
	}
	return q
}

// readMax returns a semaphore's maximum from -count: a number, or the
// value of a SharedCount node (4 big-endian bytes).
func readMax(ctx context.Context, r *reader, count string) (int, error) {
	if !strings.HasPrefix(count, "/") {
		return strconv.Atoi(count)
	}
	data, _, err := r.get(ctx, count)
	if err != nil {
		return 0, fmt.Errorf("-count %s: %w", count, err)
	}
	if len(data) != 4 {
		return 0, fmt.Errorf("-count %s: %d bytes of data, want a SharedCount's 4", count, len(data))
	}
	return int(int32(binary.BigEndian.Uint32(data))), nil
}

// maxWalk bounds the nodes a summary visits.
const maxWalk = 100000

// summarise walks the tree under p (classified as cl) and summarises every
// queue in it into rep.Locks. Nodes without children are listed as empty
// lock paths when they have no data, and when they have as data nodes
// (dataLine: counter, barrier or data), counted in rep.DataNodes. A node zkinspect cannot
// classify is listed as unknown. The walk goes into every persistent child
// that is not a semaphore's part; a subtree the session may not read
// (NoAuth) goes to rep.Skipped, and the walk goes on.
func summarise(ctx context.Context, r *reader, cfg config, rep *Report, p *probe, cl *class) error {
	rep.Locks = []LockSummary{}
	visited := 0
	skip := func(path string, err error) bool {
		if !errors.Is(err, zk.ErrNoAuth) {
			return false
		}
		rep.Skipped = append(rep.Skipped, Skipped{Path: path, Reason: "not authorised to read (NoAuth): an ACL protects it; give -auth"})
		return true
	}
	var walk func(p *probe, cl *class, top bool, data []byte) error
	walk = func(p *probe, cl *class, top bool, data []byte) error {
		visited++
		if visited > maxWalk {
			return fmt.Errorf("more than %d nodes under %s: give a narrower path", maxWalk, cfg.path)
		}
		switch {
		case (cl.kind == kindEmpty || cl.kind == kindData) && top:
			return nil
		case cl.kind == kindData:
			rep.DataNodes++
			rep.Locks = append(rep.Locks, dataLine(p.path, data))
			return nil
		case cl.kind == kindService:
			svc := serviceOf(r, p)
			held := svc.Readable > 0
			rep.Locks = append(rep.Locks, LockSummary{Path: p.path, Kind: cl.kind, Held: &held, Holders: svc.Readable, Unreadable: svc.Unreadable})
			return nil // its instances are in its line
		case cl.kind != kindParent && cl.kind != kindSharder: // a sharder's shards have lines of their own
			q, err := readQueue(ctx, r, cfg, p.path, cl, false)
			if skip(p.path, err) {
				return nil
			}
			if err != nil {
				return err
			}
			rep.Locks = append(rep.Locks, LockSummary{Path: p.path, Kind: cl.kind, Why: cl.why, Held: q.Held, Holders: q.Holders, Waiters: q.Waiters, Undecided: q.Undecided, OldestWaiterAgeMS: q.OldestWaiterAgeMS, Ready: q.Ready,
				Depth: q.Depth, OldestItemAgeMS: q.OldestItemAgeMS})
			if cl.kind == kindSemaphore {
				return nil // its parts are in its line
			}
		}
		for _, k := range cl.others {
			if k.path == "/zookeeper" && r.c.Namespace() == "" {
				continue // the server's own
			}
			if skip(k.path, k.err) {
				continue
			}
			sub, err := probeNode(ctx, r, k.path)
			if errors.Is(err, recipes.ErrNoNode) || skip(k.path, err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("%s: %w", k.path, err)
			}
			subCl, err := classify(ctx, r, sub)
			if err != nil {
				return err
			}
			if err := walk(sub, subCl, false, k.data); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(p, cl, true, nil)
}
