package cache

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/notify"
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

// errUnsynced says a load read the subtree while its watch was not set
// on the connection the reads went over: it proves nothing, and the
// watch's next PersistentResync (on its way) makes the load that does.
var errUnsynced = errors.New("the watch is not set on the connection")

// runPersistent keeps the cache current on w until ctx ends (false), or
// until the client reaches a server without persistent watches (true:
// go on with one-shot watches).
//
// Each node event has its read started as it comes (stream.go); the
// events are applied in order as their reads come in, on a goroutine of
// its own (applier), so that this one, which takes the events, never
// waits for the cache's lock (held by readers of a large cache, or by a
// merge) while events come. A full read is made
// for each PersistentResync (a new connection, or the first), and again
// under the retry policy after a read failed; only a read made while the
// watch was set on its connection counts (load), and it covers every
// PersistentResync so far: one fault makes one Resynced, however the
// retries and the resyncs meet.
func (c *Cache) runPersistent(ctx context.Context, w *engine.PersistentWatch) (fallBack bool) {
	var (
		retry     = c.e.Backoff()
		timer     *time.Timer
		again     <-chan time.Time
		needsLoad bool   // the cache may miss changes: read it all again
		covered   uint64 // the PersistentResyncs the last load covers
		s         stream // the events whose reads are under way
		applier   notify.Listeners[func()]
	)
	applier.Listen(func(merge func()) { merge() })
	w.ReadEach(ctx, c.wantRead)
	defer applier.Close()
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	failed := func(err error) {
		needsLoad, s = true, stream{}
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
		n, err := c.load(ctx, w, applier.Post)
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
		select {
		case <-ctx.Done():
			return false
		case <-w.Wake():
			evs, ok := w.Poll()
			if !ok {
				return false // removed, or the client closed
			}
			// A resync makes a full read, which covers every event before
			// it, unless a load made since it was pushed covers it already.
			last, unsupported := c.lastResync(evs)
			if unsupported {
				return true
			}
			if last >= 0 {
				evs, s = evs[last+1:], stream{}
				if n, _ := w.Synced(); n != covered || needsLoad {
					load()
				}
			}
			if needsLoad {
				continue // the next load covers these
			}
			c.enqueue(ctx, &s, evs)
		case <-s.head():
		case <-again:
			again = nil
			load()
			continue
		}
		if err := c.drain(&s, applier.Post); err != nil && ctx.Err() == nil {
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

// load reads the whole cached subtree and has post merge it (after what
// was posted before): events for what differs (NodeDeleted first,
// deepest first; then NodeCreated and NodeChanged, parents first), then
// Initialized the first time, Resynced after. It returns how many
// PersistentResyncs the read covers, or errUnsynced when the watch was
// not set on the connection throughout (then nothing is merged).
func (c *Cache) load(ctx context.Context, w *engine.PersistentWatch, post func(func())) (uint64, error) {
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
	c.readFloor = c.e.ReadOrder() // reads sent before may be older than the tree
	post(func() { c.mergeTree(tree) })
	return n, nil
}

// mergeTree merges a full read of the subtree (see load).
func (c *Cache) mergeTree(tree map[string]*loaded) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.life.Closed() {
		return
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
}

// refused reports whether a read was refused for want of permission: the
// node is left out of the cache, not retried.
func refused(err error) bool { return zkerr.IsRefused(err) }

// refusedRead logs a node left out because the session may not read it.
func (c *Cache) refusedRead(full string) {
	c.e.Logger().Warn("zkrecipes: cache: the session may not read a node; it is left out", "cache", c.path, "node", c.e.Namespace().Strip(full))
}
