package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Kinds of queue.
const (
	kindMutex     = "mutex"
	kindRWLock    = "rwlock"
	kindSemaphore = "semaphore"
	kindLatch     = "latch"
	kindEmpty     = "empty" // a node without children or data
	kindData      = "data"  // a node with data and without children: not a queue
)

// Roles of a node in its queue.
const (
	roleHolder    = "holder"
	roleLeader    = "leader"
	roleWaiter    = "waiter"
	roleAcquiring = "acquiring"    // a semaphore's internal lock holder, taking a lease
	roleUnknown   = "maybe-holder" // held or waiting: the inspector cannot tell
)

// Libraries, by node name.
const (
	libCurator = "curator-compatible"
	libZKLock  = "go-zookeeper"
	libKazoo   = "kazoo"
	libUnknown = "unknown"
)

// Lock names in node names.
const (
	nameLock      = "lock-"
	nameKazooLock = "__lock__"
	nameKazooRead = "__rlock__"
	nameRead      = "__READ__"
	nameWrite     = "__WRIT__"
	nameLatch     = "latch-"
	nameLease     = "lease-"
	semLeases     = "leases"
	semLocks      = "locks"
)

var (
	curatorName = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-`)
	zkLockName  = regexp.MustCompile(`^_c_[0-9a-f]{32}-lock-\d{10}$`)
	kazooName   = regexp.MustCompile(`^[0-9a-f]{32}__r?lock__\d{10}$`)
)

// library names the client library whose naming a node follows.
func library(name string) string {
	switch {
	case curatorName.MatchString(name):
		return libCurator
	case zkLockName.MatchString(name):
		return libZKLock
	case kazooName.MatchString(name):
		return libKazoo
	}
	return libUnknown
}

// Report is what one inspection found: a queue, or a summary of the locks
// under a path.
type Report struct {
	Path string `json:"path"`
	// Namespace is -namespace: every path shown is inside it.
	Namespace string        `json:"namespace,omitempty"`
	Mode      string        `json:"mode"` // "queue" or "summary"
	Queue     *Queue        `json:"queue,omitempty"`
	Locks     []LockSummary `json:"locks,omitempty"`
	// DataNodes counts the data nodes a summary found and did not list.
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
	Path    string `json:"path"`
	Kind    string `json:"kind"`
	Held    bool   `json:"held"`
	Holders int    `json:"holders"`
	Waiters int    `json:"waiters"`
	// Undecided counts the nodes that hold or wait: the inspector cannot
	// tell which (role maybe-holder).
	Undecided int `json:"undecided,omitempty"`
	// OldestWaiterAgeMS is the age of the oldest waiting node.
	OldestWaiterAgeMS *int64 `json:"oldest_waiter_age_ms,omitempty"`
	// MaxLeases is a semaphore's maximum, when -count gave it.
	MaxLeases *int `json:"max_leases,omitempty"`
	// Nodes are the contenders in queue order (a semaphore's leases).
	Nodes []Node `json:"nodes"`
	// InternalLock is a semaphore's internal lock queue (<path>/locks).
	InternalLock []Node   `json:"internal_lock,omitempty"`
	Notes        []string `json:"notes,omitempty"`
}

// Node is one contender.
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
	Held              bool   `json:"held"`
	Holders           int    `json:"holders"`
	Waiters           int    `json:"waiters"`
	Undecided         int    `json:"undecided,omitempty"`
	OldestWaiterAgeMS *int64 `json:"oldest_waiter_age_ms,omitempty"`
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
		v, err = do(engine.Of(r.c), full)
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
// zk.ErrNoNode.
func (r *reader) children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	v, err := read(ctx, r, "children", path, func(e *engine.Client, full string) (engine.ChildrenView, error) {
		v, err := e.ReadChildren(ctx, full, r.watches, false)
		if err == nil && !v.Exists {
			err = zk.ErrNoNode
		}
		return v, err
	})
	return v.Children, v.Stat, err
}

// get reads path's data. A missing node is zk.ErrNoNode.
func (r *reader) get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	v, err := read(ctx, r, "get", path, func(e *engine.Client, full string) (engine.NodeView, error) {
		v, err := e.ReadData(ctx, full, r.watches, false)
		if err == nil && !v.Exists {
			err = zk.ErrNoNode
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
var errNoNode = errors.New("no such node (an idle lock's parent is a container the server removes; or check the path and -namespace)")

// inspect reads the queue, or the locks, at cfg.path.
func inspect(ctx context.Context, r *reader, cfg config) (*Report, error) {
	r.now = time.Now()
	rep := &Report{Path: cfg.path, Namespace: r.c.Namespace(), Time: r.now}
	kids, st, err := r.children(ctx, cfg.path)
	if errors.Is(err, zk.ErrNoNode) {
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
	kind := nodeKind(kids, st)
	if kind == "leases" { // <semaphore>/leases itself: show the semaphore
		parent, _ := engine.SplitPath(cfg.path)
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s holds a semaphore's leases: showing the semaphore %s", cfg.path, parent))
		cfg.path, kind = parent, kindSemaphore
		rep.Path = parent
		if kids, _, err = r.children(ctx, parent); err != nil {
			return nil, fmt.Errorf("%s: %w", parent, err)
		}
	}
	if cfg.summary || kind == "" {
		rep.Mode = "summary"
		if err := summarise(ctx, r, cfg, rep, cfg.path, kids, st); err != nil {
			return nil, err
		}
		return rep, nil
	}
	rep.Mode = "queue"
	q, err := readQueue(ctx, r, cfg, cfg.path, kind, kids, true)
	if err != nil {
		return nil, err
	}
	rep.Queue = q
	return rep, nil
}

// nodeKinds counts the kinds of queue node among names.
type nodeKinds struct {
	read, write, kazooRead, kazooLock, latch, lock, lease, semParts, other int
}

// queueName matches a queue node's name: a lock name followed by the
// server's sequence suffix (a downgrade's read node takes its writer's).
var queueName = regexp.MustCompile(`(__READ__|__WRIT__|__rlock__|__lock__|latch-|lock-|lease-)-?\d{10}$`)

func countKinds(kids []string) nodeKinds {
	var k nodeKinds
	for _, n := range kids {
		m := queueName.FindStringSubmatch(n)
		if m == nil {
			if n == semLeases || n == semLocks {
				k.semParts++
			} else {
				k.other++
			}
			continue
		}
		switch m[1] {
		case nameRead:
			k.read++
		case nameWrite:
			k.write++
		case nameKazooRead:
			k.kazooRead++
		case nameKazooLock:
			k.kazooLock++
		case nameLatch:
			k.latch++
		case nameLock:
			k.lock++
		case nameLease:
			k.lease++
		}
	}
	return k
}

// detectKind tells the queue kind from the children's names: "" when they
// are not queue nodes (a parent of locks), kindEmpty when there are none,
// "leases" for a semaphore's leases node.
func detectKind(kids []string) string {
	if len(kids) == 0 {
		return kindEmpty
	}
	k := countKinds(kids)
	switch {
	case k.read+k.write+k.kazooRead > 0:
		return kindRWLock
	case k.latch > 0:
		return kindLatch
	case k.lock+k.kazooLock > 0:
		return kindMutex
	case k.semParts > 0 && k.other == 0 && k.lease == 0:
		return kindSemaphore
	case k.lease > 0:
		return "leases"
	}
	return ""
}

// nodeKind is detectKind, with a node without children told apart by its
// stat: kindData when it has data (a SharedCount, a configuration node),
// kindEmpty when it has none (a lock parent nobody uses).
func nodeKind(kids []string, st *zk.Stat) string {
	kind := detectKind(kids)
	if kind == kindEmpty && st != nil && st.DataLength > 0 {
		return kindData
	}
	return kind
}

// sortKey orders a child of a queue of the given kind, as Curator does
// (engine.SortKey), with Kazoo's names as extra lock names.
func sortKey(kind, name string) string {
	switch kind {
	case kindRWLock:
		return engine.SortKey(name, nameRead, nameWrite, nameKazooRead, nameKazooLock)
	case kindLatch:
		return engine.SortKey(name, nameLatch)
	case kindSemaphore:
		return engine.SortKey(name, nameLease)
	}
	return engine.SortKey(name, nameLock, nameKazooLock)
}

func isWriter(name string) bool {
	m := queueName.FindStringSubmatch(name)
	return m != nil && (m[1] == nameWrite || m[1] == nameKazooLock)
}

// readNodes reads the data and stat of each child of parent and returns
// them in queue order. Children that vanish meanwhile are left out.
func readNodes(ctx context.Context, r *reader, parent, kind string, kids []string) ([]Node, error) {
	nodes := make([]Node, 0, len(kids))
	for _, name := range kids {
		p := engine.JoinPath(parent, name)
		data, st, err := r.get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone since the list: the children watch redraws
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		n := Node{
			Name:    name,
			Path:    p,
			Key:     sortKey(kind, name),
			Ctime:   time.UnixMilli(st.Ctime).UTC(),
			DataLen: len(data),
			Library: library(name),
			raw:     data,
			owner:   st.EphemeralOwner,
		}
		if st.EphemeralOwner != 0 {
			n.Session = fmt.Sprintf("0x%016x", uint64(st.EphemeralOwner))
		}
		n.age = max(r.now.Sub(n.Ctime), 0)
		n.AgeMS = n.age.Milliseconds()
		if utf8.Valid(data) {
			n.Data = string(data)
		} else {
			n.DataBase64 = base64.StdEncoding.EncodeToString(data)
		}
		if kind == kindRWLock {
			n.writer = isWriter(name)
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
	return nodes, nil
}

// readQueue reads the queue at path, whose children are kids. top is false
// within a summary, where the maximum of a semaphore is not known.
func readQueue(ctx context.Context, r *reader, cfg config, path, kind string, kids []string, top bool) (*Queue, error) {
	q := &Queue{Path: path, Kind: kind, Nodes: []Node{}}
	if kind == kindEmpty {
		q.Notes = append(q.Notes, "no children: nothing holds or waits here")
		return q, nil
	}
	if kind == kindData {
		return readData(ctx, r, q)
	}
	if kind == kindSemaphore {
		return readSemaphore(ctx, r, cfg, q, kids, top)
	}
	nodes, err := readNodes(ctx, r, path, kind, kids)
	if err != nil {
		return nil, err
	}
	q.Nodes = nodes
	switch kind {
	case kindRWLock:
		rwRoles(q)
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
	if kind == kindMutex && top {
		k := countKinds(kids)
		if k.kazooLock > 0 && k.lock > 0 {
			q.Notes = append(q.Notes, "Kazoo and lock- nodes share this queue: safe only if no Curator client uses it (Curator does not recognise Kazoo's nodes)")
		}
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
		case roleHolder, roleLeader:
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
	q.Held = q.Holders > 0
}

// readSemaphore reads <path>/leases and <path>/locks.
func readSemaphore(ctx context.Context, r *reader, cfg config, q *Queue, kids []string, top bool) (*Queue, error) {
	read := func(name string) ([]Node, error) {
		p := engine.JoinPath(q.Path, name)
		if !slices.Contains(kids, name) {
			if r.watches != nil {
				if _, err := r.exists(ctx, p); err != nil {
					return nil, err
				}
			}
			return []Node{}, nil
		}
		sub, _, err := r.children(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return []Node{}, nil // a container reaped since the list
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		kind := kindSemaphore
		if name == semLocks {
			kind = kindMutex
		}
		return readNodes(ctx, r, p, kind, sub)
	}
	leases, err := read(semLeases)
	if err != nil {
		return nil, err
	}
	locks, err := read(semLocks)
	if err != nil {
		return nil, err
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

// readData describes a data node: its size, its data and, for 4 bytes,
// its value as a SharedCount.
func readData(ctx context.Context, r *reader, q *Queue) (*Queue, error) {
	data, _, err := r.get(ctx, q.Path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("%s: %w", q.Path, err)
	}
	q.Notes = append(q.Notes, fmt.Sprintf("a data node (%d bytes, no children): not a lock, semaphore or latch queue", len(data)))
	note := "data: " + formatData(data)
	if len(data) == 4 {
		note += fmt.Sprintf(" (as a SharedCount: %d)", int32(binary.BigEndian.Uint32(data)))
	}
	q.Notes = append(q.Notes, note)
	return q, nil
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

// summarise walks the tree under path (whose children are kids, whose stat
// is st) and summarises every queue in it into rep.Locks. Nodes without
// children are listed as empty lock paths when they have no data, and
// counted in rep.DataNodes when they have (not listed: they are no locks).
// A subtree the session may not read (NoAuth) goes to rep.Skipped, and
// the walk goes on.
func summarise(ctx context.Context, r *reader, cfg config, rep *Report, path string, kids []string, st *zk.Stat) error {
	rep.Locks = []LockSummary{}
	visited := 0
	skip := func(path string, err error) bool {
		if !errors.Is(err, zk.ErrNoAuth) {
			return false
		}
		rep.Skipped = append(rep.Skipped, Skipped{Path: path, Reason: "not authorised to read (NoAuth): an ACL protects it; give -auth"})
		return true
	}
	var walk func(path string, kids []string, st *zk.Stat, top bool) error
	walk = func(path string, kids []string, st *zk.Stat, top bool) error {
		visited++
		if visited > maxWalk {
			return fmt.Errorf("more than %d nodes under %s: give a narrower path", maxWalk, cfg.path)
		}
		kind := nodeKind(kids, st)
		switch {
		case (kind == kindEmpty || kind == kindData) && top:
			return nil
		case kind == kindData:
			rep.DataNodes++
			return nil
		case kind != "" && kind != "leases":
			q, err := readQueue(ctx, r, cfg, path, kind, kids, false)
			if skip(path, err) {
				return nil
			}
			if err != nil {
				return err
			}
			rep.Locks = append(rep.Locks, LockSummary{Path: path, Kind: kind, Held: q.Held, Holders: q.Holders, Waiters: q.Waiters, Undecided: q.Undecided, OldestWaiterAgeMS: q.OldestWaiterAgeMS})
			return nil
		}
		slices.Sort(kids)
		for _, k := range kids {
			p := engine.JoinPath(path, k)
			if p == "/zookeeper" && r.c.Namespace() == "" {
				continue // the server's own
			}
			sub, subSt, err := r.children(ctx, p)
			if errors.Is(err, zk.ErrNoNode) || skip(p, err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if err := walk(p, sub, subSt, false); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(path, kids, st, true)
}
