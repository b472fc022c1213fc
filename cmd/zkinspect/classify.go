package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// A node is told apart by what its children are, never by its own name or
// its parent's: their names and their mode (ephemeral when the Stat has an
// ephemeralOwner); one without children by its own data (a data node, or
// empty). A recipe's queue node is an ephemeral
// node without children whose name ends with a lock name and the server's
// 10-digit sequence suffix (a downgrade's read node takes its writer's):
//
//   - mutex (also a LeaderSelector, go-zookeeper's zk.Lock, Kazoo's Lock):
//     queue nodes named lock- (or Kazoo's __lock__), the first holds;
//   - read/write lock: __READ__ and __WRIT__ (Kazoo's __rlock__ and
//     __lock__);
//   - leader latch: latch-;
//   - a semaphore's leases: lease-.
//
// A double barrier (DistributedDoubleBarrier) is a node whose children are
// ephemeral members named by a UUID and perhaps the persistent node
// ready, none with children.
//
// A semaphore (InterProcessSemaphoreV2) is a node whose children are
// persistent nodes named locks and leases, both there (or leases alone,
// with leases in it: the internal lock's container is reaped between
// acquisitions), locks holding only lock- queue nodes and leases only
// lease- ones. A node whose children are all persistent is a parent (a
// summary walks it); one with no children is empty, or a data node when it
// has data. Anything else is unknown and shown as such: ephemeral children
// no recipe here makes, or queue nodes of two recipes side by side.
//
// A work queue (package queue, Curator's SimpleDistributedQueue and
// DistributedQueue family) is a node whose children are all persistent
// items without children, named qn-<seq> or queue-...<seq>: its depth and
// its oldest item's age are shown. A queue's lock directory (its lockPath,
// lock-safety mode) is a node whose children are ephemeral, without
// children, named as the items they lock (queue-...<seq>), and perhaps
// zkrecipes' markers beside them (_c_<uuid>-<item>, made in the same
// transaction).
//
// A discovery service (curator-x-discovery) is a node whose children have
// no children and at least one of them is an instance of the service the
// node names (its data is ServiceInstance JSON with that name): told
// before a group, whose members look the same but for their data.

// kazooReadName is Kazoo's read lock name (its write lock is a Lock, named
// mutex.KazooLockName).
const kazooReadName = "__rlock__"

// lockNames are the lock names a queue node's name may end with (before
// its sequence), in the order they are looked for.
var lockNames = []string{
	rwlock.ReadLockName, rwlock.WriteLockName, kazooReadName, mutex.KazooLockName,
	election.LatchName, semaphore.LeaseName, mutex.LockName,
}

// queueNodeName returns the lock name name ends with, before a sequence
// suffix, and the text it sorts by (contend.SortKey, Curator's rule); ""
// when name is no queue node's name.
func queueNodeName(name string) (lock, key string) {
	for _, ln := range lockNames {
		if !strings.Contains(name, ln) {
			continue
		}
		if key := contend.SortKey(name, ln); isSequence(key) {
			return ln, key
		}
	}
	return "", ""
}

// isSequence reports whether s is a sequence suffix: %010d of the
// parent's counter (a minus sign and 9 digits once it overflows).
func isSequence(s string) bool {
	if len(s) != 10 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c != '-' || i > 0) {
			return false
		}
	}
	return true
}

// child is a child of an inspected node, as read (its data and stat).
type child struct {
	name string
	path string
	data []byte
	st   *zk.Stat // nil when it could not be read (err)
	err  error    // zk.ErrNoAuth: an ACL keeps it from this session
	lock string   // the lock name its name ends with, or ""
	key  string   // what it sorts by: after the lock name, or its name
}

// ephemeral reports whether c is an ephemeral node.
func (c *child) ephemeral() bool { return c.st != nil && c.st.EphemeralOwner != 0 }

// queueNode reports whether c is a recipe's queue node.
func (c *child) queueNode() bool { return c.lock != "" && c.ephemeral() && c.st.NumChildren == 0 }

// probe is a node and its children, read.
type probe struct {
	path string
	st   *zk.Stat
	kids []child // by name
}

// probeNode lists the children of path and reads each one. Children gone
// since the list are left out; a child the session may not read is kept
// with its error.
func probeNode(ctx context.Context, r *reader, path string) (*probe, error) {
	names, st, err := r.children(ctx, path)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	p := &probe{path: path, st: st, kids: make([]child, 0, len(names))}
	for _, name := range names {
		c := child{name: name, path: zkpath.JoinPath(path, name), key: name}
		c.data, c.st, err = r.get(ctx, c.path)
		switch {
		case errors.Is(err, recipes.ErrNoNode):
			continue // gone since the list: the children watch redraws
		case errors.Is(err, zk.ErrNoAuth):
			c.err, c.st = err, nil
		case err != nil:
			return nil, fmt.Errorf("%s: %w", c.path, err)
		}
		if lock, key := queueNodeName(name); lock != "" {
			c.lock, c.key = lock, key
		}
		p.kids = append(p.kids, c)
	}
	return p, nil
}

// class is what a node was found to be.
type class struct {
	kind string
	// why says, for kindUnknown, what keeps the node from being
	// classified.
	why string
	// queue are the queue nodes of a lock, latch or leases node; every
	// child of an unknown node.
	queue []child
	// others are the children outside the queue that a summary walks:
	// persistent ones, and those it may not read.
	others []child
	// strays are ephemeral children outside a queue (only an unknown
	// node has them).
	strays []child
	// locks and leases are a semaphore's parts (nil when absent).
	locks, leases *probe
	// ready is whether a double barrier's ready node exists.
	ready bool
}

// reUUIDName is a double barrier member's name: Curator's (and
// zkrecipes') random UUID.
var reUUIDName = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// doubleBarrier reports whether kids are a double barrier's: ephemeral
// members named by a UUID, without children, and perhaps the persistent
// ready node (without children); one of the two at least.
func doubleBarrier(kids []child) bool {
	if len(kids) == 0 {
		return false
	}
	for _, k := range kids {
		switch {
		case k.st == nil || k.st.NumChildren > 0:
			return false
		case k.ephemeral() && reUUIDName.MatchString(k.name):
		case !k.ephemeral() && k.name == barrier.ReadyNode:
		default:
			return false
		}
	}
	return true
}

// classify tells what the node p is from its children; a node whose
// children are locks and leases is read further, to see whether it is a
// semaphore.
func classify(ctx context.Context, r *reader, p *probe) (*class, error) {
	cl := classifyKids(p)
	if cl.kind != kindParent || !semaphoreParts(p.kids) {
		return cl, nil
	}
	sem := &class{kind: kindSemaphore}
	for _, k := range p.kids {
		part, err := probeNode(ctx, r, k.path)
		if errors.Is(err, recipes.ErrNoNode) {
			continue // a container reaped since the list
		}
		if errors.Is(err, zk.ErrNoAuth) {
			return cl, nil // a parent, whose walk skips what it may not read
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.path, err)
		}
		want := mutex.LockName
		if k.name == semaphore.LeaseParent {
			want, sem.leases = semaphore.LeaseName, part
		} else {
			sem.locks = part
		}
		for _, n := range part.kids {
			if !n.queueNode() || n.lock != want {
				return cl, nil // not a semaphore's part: a parent
			}
		}
	}
	switch {
	case sem.locks != nil && sem.leases != nil:
		return sem, nil
	case sem.leases != nil && len(sem.leases.kids) > 0:
		return sem, nil // its internal lock's container is reaped while nobody acquires
	}
	return cl, nil
}

// semaphoreParts reports whether kids are a semaphore's: persistent nodes
// named locks and leases, one of them at least.
func semaphoreParts(kids []child) bool {
	if len(kids) == 0 || len(kids) > 2 {
		return false
	}
	for _, k := range kids {
		if k.st == nil || k.ephemeral() || k.name != semaphore.LockParent && k.name != semaphore.LeaseParent {
			return false
		}
	}
	return true
}

// classifyKids tells what p is from its children alone: empty, data,
// parent (to be looked at further for a semaphore), a queue (mutex,
// rwlock, latch, leases) or unknown.
func classifyKids(p *probe) *class {
	cl := &class{}
	if len(p.kids) == 0 {
		cl.kind = kindEmpty
		if p.st != nil && p.st.DataLength > 0 {
			cl.kind = kindData
		}
		return cl
	}
	if isService(p) {
		cl.kind, cl.queue = kindService, p.kids
		return cl
	}
	if doubleBarrier(p.kids) {
		cl.kind = kindDouble
		for _, k := range p.kids {
			if k.ephemeral() {
				cl.queue = append(cl.queue, k)
			} else {
				cl.ready = true
			}
		}
		return cl
	}
	if k := p.kids[0]; len(p.kids) == 1 && k.name == nodes.DefaultTouchNode && k.st != nil && !k.ephemeral() && k.st.NumChildren == 0 {
		cl.kind, cl.queue = kindTTL, p.kids
		return cl
	}
	locks := map[string]bool{}
	for _, k := range p.kids {
		switch {
		case k.queueNode():
			cl.queue = append(cl.queue, k)
			locks[k.lock] = true
		case k.ephemeral():
			cl.strays = append(cl.strays, k)
		default:
			cl.others = append(cl.others, k)
		}
	}
	unknown := func(why string) *class {
		return &class{kind: kindUnknown, why: why, queue: p.kids, others: cl.others}
	}
	if len(cl.queue) == 0 && queueLocks(cl.strays) {
		cl.kind, cl.queue, cl.strays = kindQueueLock, cl.strays, nil
		return cl
	}
	if len(cl.strays) > 0 && len(cl.queue) == 0 && memberNames(cl.strays) {
		cl.kind, cl.queue, cl.strays = kindGroup, cl.strays, nil
		return cl
	}
	if len(cl.strays) > 0 {
		names := make([]string, len(cl.strays))
		for i, s := range cl.strays {
			names[i] = s.name
		}
		return unknown("ephemeral children that are no recipe's queue node (" + shortList(names) + ")")
	}
	if len(cl.queue) == 0 {
		cl.kind = kindParent
		if k := queueItems(cl.others); k != "" {
			cl.kind, cl.queue, cl.others = k, cl.others, nil
		} else if sharderShards(cl.others) {
			cl.kind, cl.queue = kindSharder, cl.others // others kept: a summary walks the shards
		}
		return cl
	}
	has := func(names ...string) bool {
		for _, n := range names {
			if locks[n] {
				return true
			}
		}
		return false
	}
	only := func(names ...string) bool {
		for l := range locks {
			if !slices.Contains(names, l) {
				return false
			}
		}
		return true
	}
	switch {
	case only(mutex.LockName, mutex.KazooLockName):
		cl.kind = kindMutex
	case only(rwlock.ReadLockName, rwlock.WriteLockName, kazooReadName, mutex.KazooLockName) &&
		has(rwlock.ReadLockName, rwlock.WriteLockName, kazooReadName):
		cl.kind = kindRWLock
	case only(election.LatchName):
		cl.kind = kindLatch
	case only(semaphore.LeaseName):
		cl.kind = kindLeases
	default:
		names := make([]string, 0, len(locks))
		for l := range locks {
			names = append(names, l)
		}
		sort.Strings(names)
		return unknown("queue nodes of more than one recipe side by side (" + strings.Join(names, ", ") + ")")
	}
	return cl
}

// queueItems tells whether kids are the items of a queue (package queue,
// Curator's queues, ZooKeeper's contrib queue): persistent nodes without
// children, every one named qn-<seq> (a simple queue) or every one
// queue-...<seq> (the DistributedQueue family). It returns the kind, or
// "" when they are not.
func queueItems(kids []child) string {
	kind := ""
	for _, k := range kids {
		if k.st == nil || k.ephemeral() || k.st.NumChildren > 0 || !isSequence(itemSeq(k.name)) {
			return ""
		}
		var this string
		switch {
		case strings.HasPrefix(k.name, queue.SimplePrefix):
			this = kindSimpleQueue
		case strings.HasPrefix(k.name, queue.ItemPrefix):
			this = kindQueue
		default:
			return ""
		}
		if kind != "" && this != kind {
			return ""
		}
		kind = this
	}
	return kind
}

// queueLocks reports whether kids are a queue's locks (lock-safety mode,
// its lockPath): ephemeral nodes without children, each named as the
// DistributedQueue item it locks (queue-...<seq>) or a marker beside one
// (_c_<uuid>-<item>, zkrecipes'), one lock at least.
func queueLocks(kids []child) bool {
	locks := 0
	for _, k := range kids {
		if k.st == nil || !k.ephemeral() || k.st.NumChildren > 0 {
			return false
		}
		name, marker := lockedItem(k.name)
		if !strings.HasPrefix(name, queue.ItemPrefix) || !isSequence(itemSeq(name)) {
			return false
		}
		if !marker {
			locks++
		}
	}
	return locks > 0
}

// lockedItem returns the name of the item a queue's lock node locks: its
// own name, or for a marker (_c_<uuid>-<item>) the name after its prefix.
func lockedItem(name string) (item string, marker bool) {
	if _, rest, ok := zkpath.ParseProtected(name); ok {
		return rest, true
	}
	return name, false
}

// itemSeq returns the last 10 characters of a queue item's name: its
// sequence suffix.
func itemSeq(name string) string {
	if len(name) < 10 {
		return ""
	}
	return name[len(name)-10:]
}

// memberNames reports whether kids look like a group's members: without
// children, and named by ids that are no other recipe's names (not
// protected, no lock name, no double barrier's UUID), which are left
// unknown.
func memberNames(kids []child) bool {
	for _, k := range kids {
		if k.st == nil || k.st.NumChildren > 0 || strings.HasPrefix(k.name, zkpath.ProtectedPrefix) || reUUIDName.MatchString(k.name) {
			return false
		}
		for _, ln := range lockNames {
			if strings.Contains(k.name, ln) {
				return false
			}
		}
	}
	return true
}

// shortList joins names, the first few only.
func shortList(names []string) string {
	const most = 5
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}
