package cache

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// readers is how many reads a load or a batch of events keeps in flight
// on the session at once: go-zookeeper and the Wire pipeline them, so a
// load costs about one round trip per level of the tree, not per node.
const readers = 64

// multiBatch is how many nodes one multiRead request (ZooKeeper 3.6+)
// reads in a load; multiNames caps the children's names one request
// fetches (a node with more is read alone, with getChildren2).
// A batch is smaller when the values are large: about multiBytes of data
// per request, judged from the nodes read so far (node by node until
// multiSeen have been).
const (
	multiBatch = 64
	multiNames = 8192
	multiBytes = 256 << 10
	multiSeen  = 16
)

// pump hands the watch's events on, batch by batch, until ctx ends or
// the watch does; done closes when it returns.
func pump(ctx context.Context, w *engine.PersistentWatch) (batches <-chan []engine.PersistentEvent, done <-chan struct{}) {
	out := make(chan []engine.PersistentEvent)
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		defer close(out)
		for {
			evs, ok := w.Events(ctx.Done())
			if !ok {
				return
			}
			select {
			case out <- evs:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, pumped
}

// errUnsynced says a load read the subtree while its watch was not set
// on the connection the reads went over: it proves nothing, and the
// watch's next PersistentResync (on its way) makes the load that does.
var errUnsynced = errors.New("the watch is not set on the connection")

// runPersistent keeps the cache current on w until ctx ends (false), or
// until the client reaches a server without persistent watches (true:
// go on with one-shot watches).
//
// A full read is made for each PersistentResync (a new connection, or the
// first), and again under the retry policy after a read failed; only a
// read made while the watch was set on its connection counts (load), and
// it covers every PersistentResync so far: one fault makes one Resynced,
// however the retries and the resyncs meet.
func (c *Cache) runPersistent(ctx context.Context, w *engine.PersistentWatch) (fallBack bool) {
	batches, pumped := pump(ctx, w)
	defer func() { <-pumped }()
	var (
		retry     = c.e.Backoff()
		timer     *time.Timer
		again     <-chan time.Time
		needsLoad bool   // the cache may miss changes: read it all again
		covered   uint64 // the PersistentResyncs the last load covers
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	failed := func(err error) {
		needsLoad = true
		d := retry.Pace()
		c.e.Logger().Warn("zkrecipes: cache: reading failed; reading everything again", "cache", c.path, "in", d, "err", err)
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Stop()
			timer.Reset(d)
		}
		again = timer.C
	}
	load := func() {
		n, err := c.load(ctx, w)
		switch {
		case err == nil:
			needsLoad, again, covered = false, nil, n
			retry.Reset()
		case errors.Is(err, errUnsynced):
			needsLoad, again = true, nil // the next PersistentResync loads
		case ctx.Err() == nil:
			failed(err)
		}
	}
	for {
		var evs []engine.PersistentEvent
		select {
		case <-ctx.Done():
			return false
		case b, ok := <-batches:
			if !ok {
				return false // removed, or the client closed
			}
			evs = b
		case <-again:
			again = nil
			load()
			continue
		}
		// A resync makes a full read, which covers every event before
		// it, unless a load made since it was pushed covers it already.
		last, unsupported := c.lastResync(evs)
		if unsupported {
			return true
		}
		if last >= 0 {
			evs = evs[last+1:]
			if n, _ := w.Synced(); n != covered || needsLoad {
				load()
			}
		}
		if needsLoad {
			continue // the next load covers these
		}
		if err := c.apply(ctx, w, evs); err != nil && ctx.Err() == nil {
			failed(err)
		}
	}
}

// lastResync returns the index of the last PersistentResync in evs (-1:
// none), and whether the client reached a server without persistent
// watches; it logs the other failures to set the watch again.
func (c *Cache) lastResync(evs []engine.PersistentEvent) (last int, unsupported bool) {
	last = -1
	for i, ev := range evs {
		switch ev.Kind {
		case engine.PersistentResync:
			last = i
		case engine.PersistentFailed:
			if errors.Is(ev.Err, recipes.ErrUnimplemented) {
				return last, true
			}
			c.e.Logger().Warn("zkrecipes: cache: setting the watch again failed; the client tries again", "cache", c.path, "err", ev.Err)
		}
	}
	return last, false
}

// load reads the whole cached subtree and merges it: events for what
// differs (NodeDeleted first, deepest first; then NodeCreated and
// NodeChanged, parents first), then Initialized the first time, Resynced
// after. It returns how many PersistentResyncs the read covers, or
// errUnsynced when the watch was not set on the connection throughout
// (then nothing is merged).
func (c *Cache) load(ctx context.Context, w *engine.PersistentWatch) (uint64, error) {
	n, ok := w.Synced()
	if !ok {
		return 0, errUnsynced
	}
	tree, err := c.readTree(ctx)
	if err != nil {
		return 0, err
	}
	// The tree may be newer than events still to come from before its
	// replies: their deletions are checked (apply). The reads went through
	// the Wire (MultiRead), whose replies can overtake events; an exists
	// through go-zookeeper after them is a barrier (PersistentWatch.Routed).
	// A refused exists (ZooKeeper 3.9 checks READ on an existing node) is
	// a reply all the same: the barrier holds, and the root is left out.
	if _, _, err := c.e.Exists(ctx, c.full); err != nil && !refused(err) {
		return 0, err
	}
	if now, ok := w.Synced(); now != n || !ok {
		return 0, errUnsynced
	}
	c.verifyTo, c.ahead = w.Routed(), nil
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.life.Closed() {
		return n, nil
	}
	var evs []Event
	type cached struct {
		full string
		slot int32
	}
	var order []cached
	c.preorderLocked(func(full string, slot int32) { order = append(order, cached{full, slot}) })
	for i := len(order) - 1; i >= 0; i-- {
		// Reverse preorder: a node's subtree comes before it, so no node
		// here went with an ancestor yet.
		o := order[i]
		if l := tree[o.full]; l == nil || l.stat.Czxid != c.st.czxid(o.slot) {
			evs = c.removeLocked(evs, o.full)
		}
	}
	var walk func(full string)
	walk = func(full string) {
		l := tree[full]
		if l == nil {
			return
		}
		evs = c.upsertLocked(evs, full, l.data, &l.stat)
		if slot, _ := c.findLocked(full); slot < 0 {
			return
		}
		for _, k := range l.kids {
			walk(zkpath.JoinPath(full, k))
		}
	}
	walk(c.full)
	c.publishLocked(evs, true)
	return n, nil
}

// apply merges a batch of the watch's events. Every node created or
// changed is read (all at once, pipelined), and so is a deleted one whose
// deletion may be older than the node the cache holds (its stat alone).
// Then the events are applied in order, each against what the read saw,
// which is as of after the whole batch (or later): the creations and
// changes of a node before its last deletion in the batch are skipped
// (what was read is after that deletion), and a deletion of a node that
// the read still shows with the czxid the cache holds is skipped too (the
// node deleted was an older one, whose deletion the cache's copy already
// reflects: reporting it would delete a node that exists).
//
// A deletion can be older than the cached node only if the node's read
// (here or in a load) was answered after the deletion's event came: then
// the event has a Seq at most what PersistentWatch.Routed said after the
// read (c.ahead, c.verifyTo). Any other deletion is applied without a
// read: most are, as reads overtake events only while changes pile up.
func (c *Cache) apply(ctx context.Context, w *engine.PersistentWatch, evs []engine.PersistentEvent) error {
	lo, hi := batchSeqs(evs)
	for p, to := range c.ahead {
		if to < lo {
			delete(c.ahead, p) // no event to come is that old
		}
	}
	b := c.planReads(evs)
	if err := c.readNodes(ctx, b); err != nil {
		return err
	}
	routed := w.Routed() // the reads are no newer than later events
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.life.Closed() {
		return nil
	}
	c.publishLocked(c.mergeLocked(b, routed, hi), false)
	return nil
}

// batchReads is what apply reads for a batch of events: the nodes the
// batch names, and what the reads saw of them.
type batchReads struct {
	evs        []engine.PersistentEvent
	lastDelete map[string]int       // a node's last deletion in evs (its index)
	wantData   map[string]bool      // a node to read: for its data (true) or its stat alone
	toRead     []string             // the nodes to read, in the order evs names them
	seen       map[string]*nodeRead // what the reads saw of them
}

// nodeRead is what a read saw of a node (there false: gone, or left out).
type nodeRead struct {
	there bool
	data  []byte
	stat  *zk.Stat
}

// batchSeqs returns the first and last Seq of the node events in evs (0
// when there are none).
func batchSeqs(evs []engine.PersistentEvent) (lo, hi uint64) {
	for _, ev := range evs {
		if ev.Kind == engine.PersistentNode {
			if lo == 0 {
				lo = ev.Seq
			}
			hi = ev.Seq
		}
	}
	return lo, hi
}

// overtaken reports whether a read of ev's node may have been answered
// after ev came: ev's Seq is at most what PersistentWatch.Routed said
// after a load or after the node's read (see apply).
func (c *Cache) overtaken(ev engine.PersistentEvent) bool {
	return ev.Seq <= c.verifyTo || ev.Seq <= c.ahead[ev.Path]
}

// planReads finds the nodes a batch of events names to read: every node
// created or changed (for its data), and a deleted one whose deletion a
// read may have overtaken (for its stat).
func (c *Cache) planReads(evs []engine.PersistentEvent) *batchReads {
	b := &batchReads{evs: evs, lastDelete: map[string]int{}, wantData: map[string]bool{}}
	for i, ev := range evs {
		if ev.Kind != engine.PersistentNode || !c.inScope(ev.Path) {
			continue
		}
		switch ev.Type {
		case zk.EventNodeDeleted:
			b.lastDelete[ev.Path] = i
			if !c.overtaken(ev) {
				continue
			}
		case zk.EventNodeCreated, zk.EventNodeDataChanged:
		default:
			continue
		}
		data, seen := b.wantData[ev.Path]
		if !seen {
			b.toRead = append(b.toRead, ev.Path)
		}
		b.wantData[ev.Path] = data || ev.Type != zk.EventNodeDeleted
	}
	return b
}

// readNodes reads the nodes b names, all at once (pipelined), into
// b.seen. A node gone, or that the session may not read (logged), is
// seen not there.
func (c *Cache) readNodes(ctx context.Context, b *batchReads) error {
	results := make([]nodeRead, len(b.toRead))
	err := parallel(ctx, len(b.toRead), func(i int) error {
		full := b.toRead[i]
		var (
			r   nodeRead
			err error
		)
		if c.o.noData || !b.wantData[full] {
			r.there, r.stat, err = c.e.Exists(ctx, full)
		} else {
			r.data, r.stat, err = c.e.Get(ctx, full)
			r.there = err == nil
		}
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return nil
		case refused(err):
			c.refusedRead(full)
			return nil // left out (as if gone)
		case err != nil:
			return err
		}
		results[i] = r
		return nil
	})
	if err != nil {
		return err
	}
	b.seen = make(map[string]*nodeRead, len(b.toRead))
	for i, p := range b.toRead {
		b.seen[p] = &results[i]
	}
	return nil
}

// mergeLocked applies the batch's events in order, each against what the
// reads saw (see apply), and returns the cache's events. routed is what
// PersistentWatch.Routed said after the reads, hi the batch's last Seq.
func (c *Cache) mergeLocked(b *batchReads, routed, hi uint64) []Event {
	var out []Event
	for i, ev := range b.evs {
		if ev.Kind != engine.PersistentNode || !c.inScope(ev.Path) {
			continue
		}
		r := b.seen[ev.Path]
		switch ev.Type {
		case zk.EventNodeDeleted:
			if slot, _ := c.findLocked(ev.Path); slot >= 0 && r != nil && r.there && r.stat.Czxid == c.st.czxid(slot) {
				continue // an older node's deletion
			}
			out = c.removeLocked(out, ev.Path)
		case zk.EventNodeCreated, zk.EventNodeDataChanged:
			if d, ok := b.lastDelete[ev.Path]; ok && d > i {
				continue // what was read is after that deletion
			}
			if r.there {
				out = c.upsertLocked(out, ev.Path, r.data, r.stat)
				if routed > hi { // events after the batch may be older than the read
					if c.ahead == nil {
						c.ahead = map[string]uint64{}
					}
					c.ahead[ev.Path] = routed
				}
			} else {
				out = c.removeLocked(out, ev.Path) // deleted since: its event follows
			}
		}
	}
	return out
}

// refused reports whether a read was refused for want of permission: the
// node is left out of the cache, not retried.
func refused(err error) bool { return zkerr.IsRefused(err) }

// refusedRead logs a node left out because the session may not read it.
func (c *Cache) refusedRead(full string) {
	c.e.Logger().Warn("zkrecipes: cache: the session may not read a node; it is left out", "cache", c.path, "node", c.e.StripNamespace(full))
}

// parallel runs fn(0..n-1), readers at a time, and returns the first
// error.
func parallel(ctx context.Context, n int, fn func(i int) error) error {
	if n == 0 {
		return nil
	}
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range min(n, readers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= n || first != nil || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}
