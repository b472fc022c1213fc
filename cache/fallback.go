package cache

import (
	"context"
	"slices"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// fallback keeps the cache current with one-shot watches, Curator's
// TreeCache algorithm on the engine's Follower: a read per node, which
// reads the node's data with a data watch and, above the maximum depth,
// its children with a children watch; a child listed for the first time
// gets a read of its own, a child no longer listed leaves the cache with
// its subtree. The Follower runs a read again when one of its watches
// fires, every read after a reconnection or a new session, and a failed
// read under the client's retry policy (never in a tight loop). The
// reads due together run readers at a time, pipelined on the session as
// a load's are (engine.Follower.Pipeline): after a reconnection or a new
// session every read runs again, and a tree of a thousand nodes is read
// in a few round trips a level, not two a node.
type fallback struct {
	c *Cache
	f *engine.Follower

	// mu guards what follows: the reads of a round run at once, and
	// onEvent runs between rounds.
	mu       sync.Mutex
	reads    map[string]map[string]struct{} // a node with a read -> the names of its children with one
	unloaded map[string]struct{}            // reads not yet run well once
	passDone bool                           // the first pass is done (Initialized or Resynced published)
	resync   map[string]struct{}            // reads to run again before Resynced; nil: none pending
	states   int                            // connection states heard
}

// runFallback runs the cache on one-shot watches until ctx ends.
func (c *Cache) runFallback(ctx context.Context) {
	fb := &fallback{c: c, reads: map[string]map[string]struct{}{}, unloaded: map[string]struct{}{}}
	fb.f = c.e.NewFollower(c.name(), fb.onEvent)
	fb.f.Pipeline(readers)
	fb.mu.Lock()
	fb.add(c.full, 0)
	fb.mu.Unlock()
	if err := fb.f.Run(ctx); err != nil && ctx.Err() == nil {
		c.e.Logger().Debug("zkrecipes: cache: stopped", "cache", c.path, "err", err)
	}
}

// add adds the read of full (fb.mu held).
func (fb *fallback) add(full string, depth int) {
	fb.reads[full] = map[string]struct{}{}
	fb.unloaded[full] = struct{}{}
	if full != fb.c.full {
		parent, name := zkpath.SplitPath(full)
		if kids := fb.reads[parent]; kids != nil {
			kids[name] = struct{}{}
		}
	}
	fb.f.Add(full, func(ctx context.Context, w *engine.Watches) error { return fb.read(ctx, w, full, depth) })
}

// drop removes the reads of full and of its subtree (fb.mu held).
func (fb *fallback) drop(full string) {
	kids, ok := fb.reads[full]
	if !ok {
		return
	}
	for k := range kids {
		fb.drop(zkpath.JoinPath(full, k))
	}
	delete(fb.reads, full)
	delete(fb.unloaded, full)
	if fb.resync != nil {
		delete(fb.resync, full)
	}
	if full != fb.c.full {
		parent, name := zkpath.SplitPath(full)
		if pk := fb.reads[parent]; pk != nil {
			delete(pk, name)
		}
	}
	fb.f.Remove(full)
}

// onEvent hears the Follower's connection states: after the first, every
// state that connects again makes every read run again (the Follower
// does it), and Resynced follows once each has.
func (fb *fallback) onEvent(ev engine.FollowEvent) {
	if ev.Kind != engine.FollowState {
		return
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.states++
	if fb.states == 1 || !ev.State.IsConnected() || !fb.passDone {
		return
	}
	fb.resync = make(map[string]struct{}, len(fb.reads))
	for k := range fb.reads {
		fb.resync[k] = struct{}{}
	}
}

func (fb *fallback) read(ctx context.Context, w *engine.Watches, full string, depth int) error {
	c := fb.c
	v, err := c.e.ReadData(ctx, full, w, full == c.full)
	if refused(err) {
		c.refusedRead(full)
		v, err = engine.NodeView{}, nil // left out, and not read again until its parent's list changes
	}
	if err != nil {
		return err
	}
	var kids []string
	there := v.Exists
	deeper := depth < c.o.maxDepth
	if there && deeper {
		cv, err := c.e.ReadChildren(ctx, full, w, false)
		if refused(err) {
			c.refusedRead(full)
			cv, err = engine.ChildrenView{Exists: true}, nil // its children are left out
		}
		if err != nil {
			return err
		}
		there, kids = cv.Exists, cv.Children
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	if _, ok := fb.reads[full]; !ok {
		// Dropped while it read, by its parent's read (or an
		// ancestor's), run beside it, which saw the node gone: what this
		// one saw may be older.
		return nil
	}
	c.mu.Lock()
	if c.life.Closed() {
		c.mu.Unlock()
		return nil
	}
	var evs []Event
	if !there {
		// Deleted: its parent's read drops it too; the root's read stays,
		// with a watch for its creation (or, deleted between the two
		// reads, its data watch fires and it reads again).
		evs = c.removeLocked(evs, full)
	} else {
		evs = c.upsertLocked(evs, full, v.Data, v.Stat)
		if slot, _ := c.findLocked(full); slot >= 0 && deeper {
			listed := make(map[string]struct{}, len(kids))
			for _, k := range kids {
				listed[k] = struct{}{}
			}
			for _, k := range c.childNamesLocked(slot) {
				if _, ok := listed[k]; !ok {
					evs = c.removeLocked(evs, zkpath.JoinPath(full, k))
				}
			}
		}
	}
	c.publishLocked(evs, false)
	c.mu.Unlock()

	fb.followKids(full, depth, there, kids)
	delete(fb.unloaded, full)
	if fb.resync != nil {
		delete(fb.resync, full)
	}
	fb.settle()
	return nil
}

// followKids updates the reads under full after its read (fb.mu held):
// a node gone loses the reads of its subtree, and its own unless it is
// the root's; otherwise a child listed for the first time gets a read,
// and one no longer listed loses its read and its subtree's.
func (fb *fallback) followKids(full string, depth int, there bool, kids []string) {
	c := fb.c
	switch {
	case !there && full != c.full:
		fb.drop(full)
	case !there:
		for k := range fb.reads[full] {
			fb.drop(zkpath.JoinPath(full, k))
		}
	default:
		listed := make(map[string]struct{}, len(kids))
		slices.Sort(kids)
		for _, k := range kids {
			listed[k] = struct{}{}
			kf := zkpath.JoinPath(full, k)
			if _, ok := fb.reads[kf]; !ok {
				fb.add(kf, depth+1)
			}
		}
		for k := range fb.reads[full] {
			if _, ok := listed[k]; !ok {
				fb.drop(zkpath.JoinPath(full, k))
			}
		}
	}
}

// settle publishes the end of the first pass (Initialized, or Resynced
// when the cache was initialized on a persistent watch before) and of a
// resync (fb.mu held).
func (fb *fallback) settle() {
	c := fb.c
	switch {
	case !fb.passDone && len(fb.unloaded) == 0:
		fb.passDone = true
		fb.resync = nil
	case fb.passDone && fb.resync != nil && len(fb.resync) == 0:
		fb.resync = nil
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.life.Closed() {
		c.publishLocked(nil, true)
	}
}
