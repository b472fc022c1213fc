package cache

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// loaded is a node as a full read saw it.
type loaded struct {
	data []byte
	stat zk.Stat
	kids []string // sorted; those read
}

// readTask is a node a load is to read, at depth below the root.
type readTask struct {
	full  string
	depth int
}

// treeReader is one full read of a cache's subtree (readTree): a queue
// of nodes to read, worked by readers goroutines.
type treeReader struct {
	c   *Cache
	ctx context.Context

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []readTask
	active int
	first  error
	out    map[string]*loaded

	seenNodes, seenBytes atomic.Int64 // nodes read, and their data
}

// readTree reads the cached subtree, readers reads at a time, breadth
// first: a node's data (getData; exists for a node at the maximum depth
// under WithoutData), and its children (getChildren, only for a node
// with children above the maximum depth; under WithoutData the children
// read gives the stat as well, so it is the only read); with data, up to
// multiBatch nodes a request (multiRead, ZooKeeper 3.6+). A node gone
// between the reads is left out (its deletion is reported by the watch).
func (c *Cache) readTree(ctx context.Context) (map[string]*loaded, error) {
	r := &treeReader{c: c, ctx: ctx, queue: []readTask{{c.full, 0}}, out: map[string]*loaded{}}
	r.cond = sync.NewCond(&r.mu)
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.work()
		}()
	}
	wg.Wait()
	if r.first != nil {
		return nil, r.first
	}
	return r.out, nil
}

// work takes nodes off the queue and reads them until the queue is empty
// and no read is under way, or a read failed.
func (r *treeReader) work() {
	take := multiBatch
	if r.c.o.noData {
		take = 1 // a multiRead gives no stat with the children
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		for len(r.queue) == 0 && r.active > 0 && r.first == nil {
			r.cond.Wait()
		}
		if r.first != nil || (len(r.queue) == 0 && r.active == 0) {
			r.cond.Broadcast()
			return
		}
		n := min(len(r.queue), take)
		if n > 1 {
			n = min(n, r.batch())
		}
		ts := slices.Clone(r.queue[len(r.queue)-n:])
		r.queue = r.queue[:len(r.queue)-n]
		r.active++
		r.mu.Unlock()
		var (
			next []readTask
			err  error
		)
		if r.c.o.noData {
			next, err = r.readOne(ts[0])
		} else {
			next, err = r.readBatch(ts)
		}
		r.mu.Lock()
		r.active--
		if err != nil && r.first == nil {
			r.first = err
		}
		r.queue = append(r.queue, next...)
		r.cond.Broadcast()
	}
}

// batch is how many nodes the next multiRead takes: about multiBytes of
// data, judged from the nodes read so far.
func (r *treeReader) batch() int {
	n := r.seenNodes.Load()
	if n < multiSeen || r.c.noMulti.Load() {
		return 1
	}
	avg := r.seenBytes.Load()/n + 1
	return int(max(1, min(multiBatch, multiBytes/avg)))
}

// seen counts a node read, for batch.
func (r *treeReader) seen(l *loaded) {
	r.seenNodes.Add(1)
	r.seenBytes.Add(int64(len(l.data)))
}

// keep keeps what was read of the node at full.
func (r *treeReader) keep(full string, l *loaded) {
	r.mu.Lock()
	r.out[full] = l
	r.mu.Unlock()
}

// children returns the tasks of full's children.
func children(t readTask, kids []string) []readTask {
	next := make([]readTask, len(kids))
	for i, k := range kids {
		next[i] = readTask{zkpath.JoinPath(t.full, k), t.depth + 1}
	}
	return next
}

// read reads one node alone, and its children when they are cached.
func (r *treeReader) read(t readTask) ([]readTask, error) {
	c, ctx := r.c, r.ctx
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
			if kids, _, err = c.e.Children(ctx, t.full); err != nil {
				return nil, err
			}
		}
	}
	slices.Sort(kids)
	l.kids = kids
	r.seen(&l)
	r.keep(t.full, &l)
	return children(t, kids), nil
}

// readOne is read with a node gone or unreadable left out.
func (r *treeReader) readOne(t readTask) ([]readTask, error) {
	next, err := r.read(t)
	if skip, err := r.leftOut(t.full, err); skip || err != nil {
		return nil, err
	}
	return next, nil
}

// leftOut reports whether a read that failed with err leaves its node
// out (gone meanwhile, or unreadable: logged), and the error otherwise.
func (r *treeReader) leftOut(full string, err error) (bool, error) {
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return true, nil
	case refused(err):
		r.c.refusedRead(full)
		return true, nil
	}
	return false, err
}

// readBatch reads ts in one multiRead (their data), then their children
// in as few more (readKids); one by one where the server or the
// connection cannot.
func (r *treeReader) readBatch(ts []readTask) ([]readTask, error) {
	c := r.c
	if len(ts) == 1 && c.noMulti.Load() {
		return r.readOne(ts[0])
	}
	ops := make([]engine.ReadOp, len(ts))
	for i, t := range ts {
		ops[i] = engine.ReadOp{Path: t.full}
	}
	res, err, ok := c.e.MultiRead(r.ctx, ops)
	if errors.Is(err, zkerr.ErrUnimplemented) {
		c.noMulti.Store(true)
	}
	if !ok || errors.Is(err, zkerr.ErrUnimplemented) {
		var next []readTask
		for _, t := range ts {
			n, err := r.readOne(t)
			if err != nil {
				return nil, err
			}
			next = append(next, n...)
		}
		return next, nil
	}
	if err != nil {
		return nil, err
	}
	var parents []readParent
	for i, res := range res {
		if skip, err := r.leftOut(ts[i].full, res.Err); skip || err != nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		l := &loaded{data: res.Data, stat: res.Stat}
		r.seen(l)
		if ts[i].depth < c.o.maxDepth && res.Stat.NumChildren > 0 {
			parents = append(parents, readParent{ts[i], l})
			continue
		}
		r.keep(ts[i].full, l)
	}
	return r.readKids(parents)
}

// readParent is a node whose data is read and whose children are next.
type readParent struct {
	t readTask
	l *loaded
}

// readKids lists the children of parents, as many a multiRead as
// multiBatch and multiNames allow (a node with more names alone, with
// getChildren2), records the parents and returns their children's tasks.
func (r *treeReader) readKids(parents []readParent) ([]readTask, error) {
	var next []readTask
	for len(parents) > 0 {
		n, names := 1, int(parents[0].l.stat.NumChildren)
		for n < len(parents) && n < multiBatch && names+int(parents[n].l.stat.NumChildren) <= multiNames {
			names += int(parents[n].l.stat.NumChildren)
			n++
		}
		grp := parents[:n]
		parents = parents[n:]
		kids, errs, err := r.listKids(grp, names)
		if err != nil {
			return nil, err
		}
		for i, p := range grp {
			if skip, err := r.leftOut(p.t.full, errs[i]); skip || err != nil {
				if err != nil {
					return nil, err
				}
				continue
			}
			slices.Sort(kids[i])
			p.l.kids = kids[i]
			r.keep(p.t.full, p.l)
			next = append(next, children(p.t, kids[i])...)
		}
	}
	return next, nil
}

// listKids lists the children of grp (names of them in all): in one
// multiRead, or one by one where it cannot.
func (r *treeReader) listKids(grp []readParent, names int) ([][]string, []error, error) {
	c, ctx := r.c, r.ctx
	kids := make([][]string, len(grp))
	errs := make([]error, len(grp))
	if len(grp) == 1 && names > multiNames {
		kids[0], _, errs[0] = c.e.Children(ctx, grp[0].t.full)
		return kids, errs, nil
	}
	ops := make([]engine.ReadOp, len(grp))
	for i, p := range grp {
		ops[i] = engine.ReadOp{Path: p.t.full, Children: true}
	}
	res, err, ok := c.e.MultiRead(ctx, ops)
	if err != nil {
		return nil, nil, err
	}
	for i := range grp {
		if !ok {
			kids[i], _, errs[i] = c.e.Children(ctx, grp[i].t.full)
		} else {
			kids[i], errs[i] = res[i].Children, res[i].Err
		}
	}
	return kids, errs, nil
}
