package cache

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// readers is how many reads a load or a batch of events keeps in flight
// on the session at once: go-zookeeper and the Wire pipeline them, so a
// load costs about one round trip per level of the tree, not per node.
const readers = 64

// runPersistent keeps the cache current on w until ctx ends (false), or
// until the client reaches a server without persistent watches (true:
// go on with one-shot watches).
func (c *Cache) runPersistent(ctx context.Context, w *engine.PersistentWatch) (fallBack bool) {
	batches := make(chan []engine.PersistentEvent)
	pumped := make(chan struct{})
	go func() { // the watch's queue, as a channel
		defer close(pumped)
		defer close(batches)
		for {
			evs, ok := w.Events(ctx.Done())
			if !ok {
				return
			}
			select {
			case batches <- evs:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() { <-pumped }()

	var (
		retry     backoff.BackOff
		timer     *time.Timer
		again     <-chan time.Time
		needsLoad bool // the cache may miss changes: read it all again
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	failed := func(err error) {
		needsLoad = true
		if retry == nil {
			retry = c.e.RetryPolicy()
		}
		d := retry.NextBackOff()
		if d == backoff.Stop {
			retry = nil
			d = time.Second
		}
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
		if err := c.load(ctx); err != nil {
			if ctx.Err() == nil {
				failed(err)
			}
			return
		}
		needsLoad, retry, again = false, nil, nil
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
		// A resync (a new connection, or the first) makes a full read,
		// which covers every event before it.
		last := -1
		for i, ev := range evs {
			switch ev.Kind {
			case engine.PersistentResync:
				last = i
			case engine.PersistentFailed:
				if errors.Is(ev.Err, recipes.ErrUnimplemented) {
					return true
				}
				c.e.Logger().Warn("zkrecipes: cache: setting the watch again failed; the client tries again", "cache", c.path, "err", ev.Err)
			}
		}
		if last >= 0 {
			evs = evs[last+1:]
			load()
		}
		if needsLoad {
			continue // the next load covers these
		}
		if err := c.apply(ctx, evs); err != nil && ctx.Err() == nil {
			failed(err)
		}
	}
}

// load reads the whole cached subtree and merges it: events for what
// differs (NodeDeleted first, deepest first; then NodeCreated and
// NodeChanged, parents first), then Initialized the first time, Resynced
// after.
func (c *Cache) load(ctx context.Context) error {
	tree, err := c.readTree(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	var evs []Event
	var order []string
	c.preorderLocked(func(full string, _ *entry) { order = append(order, full) })
	for i := len(order) - 1; i >= 0; i-- {
		full := order[i]
		en := c.nodes[full]
		if en == nil {
			continue // went with an ancestor
		}
		if l := tree[full]; l == nil || l.stat.Czxid != en.node.Stat.Czxid {
			evs = c.removeLocked(evs, full)
		}
	}
	var walk func(full string)
	walk = func(full string) {
		l := tree[full]
		if l == nil {
			return
		}
		evs = c.upsertLocked(evs, full, l.data, &l.stat)
		if c.nodes[full] == nil {
			return
		}
		for _, k := range l.kids {
			walk(engine.JoinPath(full, k))
		}
	}
	walk(c.full)
	c.publishLocked(evs, true)
	return nil
}

// loaded is a node as a full read saw it.
type loaded struct {
	data []byte
	stat zk.Stat
	kids []string // sorted; those read
}

// readTree reads the cached subtree, readers reads at a time, breadth
// first: a node's data (getData; exists for a node at the maximum depth
// under WithoutData), and its children (getChildren, only for a node
// with children above the maximum depth; under WithoutData the children
// read gives the stat as well, so it is the only read). A node gone
// between the reads is left out (its deletion is reported by the watch).
func (c *Cache) readTree(ctx context.Context) (map[string]*loaded, error) {
	type task struct {
		full  string
		depth int
	}
	var (
		mu     sync.Mutex
		cond   = sync.NewCond(&mu)
		queue  = []task{{c.full, 0}}
		active int
		first  error
		out    = map[string]*loaded{}
		wg     sync.WaitGroup
	)
	read := func(t task) ([]task, error) {
		var (
			l    loaded
			kids []string
		)
		deeper := t.depth < c.o.maxDepth
		switch {
		case c.o.noData && deeper:
			ks, st, err := c.e.Children(ctx, t.full)
			if err != nil {
				return nil, err
			}
			l.stat, kids = *st, ks
		case c.o.noData:
			ok, st, err := c.e.Exists(ctx, t.full)
			if err != nil || !ok {
				return nil, err
			}
			l.stat = *st
		default:
			data, st, err := c.e.Get(ctx, t.full)
			if err != nil {
				return nil, err
			}
			l.data, l.stat = data, *st
			if deeper && st.NumChildren > 0 {
				ks, _, err := c.e.Children(ctx, t.full)
				if err != nil {
					return nil, err
				}
				kids = ks
			}
		}
		slices.Sort(kids)
		l.kids = kids
		next := make([]task, len(kids))
		for i, k := range kids {
			next[i] = task{engine.JoinPath(t.full, k), t.depth + 1}
		}
		mu.Lock()
		out[t.full] = &l
		mu.Unlock()
		return next, nil
	}
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			for {
				for len(queue) == 0 && active > 0 && first == nil {
					cond.Wait()
				}
				if first != nil || (len(queue) == 0 && active == 0) {
					cond.Broadcast()
					return
				}
				t := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				active++
				mu.Unlock()
				next, err := read(t)
				if errors.Is(err, zk.ErrNoNode) {
					next, err = nil, nil // gone meanwhile
				} else if refused(err) {
					c.refusedRead(t.full)
					next, err = nil, nil // left out
				}
				mu.Lock()
				active--
				if err != nil && first == nil {
					first = err
				}
				queue = append(queue, next...)
				cond.Broadcast()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return out, nil
}

// apply merges a batch of the watch's events. Every node they name is
// read (all at once, pipelined): its data for a creation or a change, its
// stat alone for a deletion. Then the events are applied in order, each
// against what the read saw, which is as of after the whole batch (or
// later): the creations and changes of a node before its last deletion in
// the batch are skipped (what was read is after that deletion), and a
// deletion of a node that the read still shows with the czxid the cache
// holds is skipped too (the node deleted was an older one, whose deletion
// the cache's copy already reflects: reporting it would delete a node that
// exists).
func (c *Cache) apply(ctx context.Context, evs []engine.PersistentEvent) error {
	lastDelete := map[string]int{}
	wantData := map[string]bool{}
	var toRead []string
	for i, ev := range evs {
		if ev.Kind != engine.PersistentNode || !c.inScope(ev.Path) {
			continue
		}
		switch ev.Type {
		case zk.EventNodeDeleted:
			lastDelete[ev.Path] = i
		case zk.EventNodeCreated, zk.EventNodeDataChanged:
		default:
			continue
		}
		data, seen := wantData[ev.Path]
		if !seen {
			toRead = append(toRead, ev.Path)
		}
		wantData[ev.Path] = data || ev.Type != zk.EventNodeDeleted
	}
	if len(toRead) == 0 {
		return nil
	}
	type result struct {
		there bool
		data  []byte
		stat  *zk.Stat
	}
	results := make([]result, len(toRead))
	err := parallel(ctx, len(toRead), func(i int) error {
		full := toRead[i]
		var (
			r   result
			err error
		)
		if c.o.noData || !wantData[full] {
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
	byPath := make(map[string]*result, len(toRead))
	for i, p := range toRead {
		byPath[p] = &results[i]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	var out []Event
	for i, ev := range evs {
		if ev.Kind != engine.PersistentNode || !c.inScope(ev.Path) {
			continue
		}
		r := byPath[ev.Path]
		switch ev.Type {
		case zk.EventNodeDeleted:
			if en := c.nodes[ev.Path]; en != nil && r.there && r.stat.Czxid == en.node.Stat.Czxid {
				continue // an older node's deletion
			}
			out = c.removeLocked(out, ev.Path)
		case zk.EventNodeCreated, zk.EventNodeDataChanged:
			if d, ok := lastDelete[ev.Path]; ok && d > i {
				continue // what was read is after that deletion
			}
			if r.there {
				out = c.upsertLocked(out, ev.Path, r.data, r.stat)
			} else {
				out = c.removeLocked(out, ev.Path) // deleted since: its event follows
			}
		}
	}
	c.publishLocked(out, false)
	return nil
}

// refused reports whether a read was refused for want of permission: the
// node is left out of the cache, not retried.
func refused(err error) bool {
	return errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed)
}

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
