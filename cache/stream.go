package cache

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
)

// A persistent watch's events, one read each.
//
// Each NodeCreated and NodeDataChanged makes its own read of the node,
// started as the event comes, on the client's receiving goroutine before
// it reads the connection's next frame (PersistentWatch.ReadEach), as
// Curator's CuratorCache makes one getData per event from the client's
// event thread: the reads go out one after the other, pipelined on the
// session, without waiting for each other, for the cache's goroutines, or
// for the events before them to be applied. So a node changed twice, with
// the second change after the first one's read reached the server, is
// reported twice, with each version. The events are applied in the order
// they came, each once its read is in (the events after it wait for it),
// each against what its own read saw, which is as of its event or later:
//
//   - A change is applied only when the node's mzxid moved forward, and a
//     node whose czxid differs was deleted and created again (upsert);
//     a node the read found gone is dropped (its deletion's event
//     follows, and finds nothing to drop).
//   - A deletion is applied without a read, unless a read of the node
//     (here or in a load) may be answered after the deletion's event came
//     (it is under way, or its Seq is at most the read's Routed: c.ahead,
//     c.verifyTo): then the node the cache holds may be newer than the
//     one deleted, and a read of its stat, started as the deletion comes,
//     decides: the deletion is skipped when the node is still there with
//     the czxid the cache holds.
//
// Reads of one session are answered in the order they were sent, so the
// reads applied one after the other never go back in time, as long as
// they went out in the events' order. One that may not have (its Order is
// at most one taken before it, or the last load's: c.readFloor) is made
// again when the event is taken, and so are those after it.

// pendingEvent is a watch event with the read it made (nil: none, yet).
type pendingEvent struct {
	ev   engine.PersistentEvent
	read *engine.AsyncRead
}

// stream is the events taken whose reads are under way, in order. It
// belongs to the persistent watch's goroutine (runPersistent).
type stream struct {
	q    []pendingEvent
	last map[string]*engine.AsyncRead // a node's last read in q
}

// head returns a channel closed when the first event's read is in (nil,
// which blocks, when no event waits or the first makes no read).
func (s *stream) head() <-chan struct{} {
	if len(s.q) == 0 || s.q[0].read == nil {
		return nil
	}
	return s.q[0].read.Done()
}

// wantRead says which events' reads the watch starts as they come
// (PersistentWatch.ReadEach): every creation and change of a node in
// scope, and its stat for a deletion that a read of the node may have
// overtaken (see above; enqueue makes the read of one that a load may
// have overtaken).
func (c *Cache) wantRead(ev engine.PersistentEvent, last *engine.AsyncRead) (read, statOnly bool) {
	if !c.inScope(ev.Path) {
		return false, false
	}
	switch ev.Type {
	case zk.EventNodeDeleted:
		return last != nil, true
	case zk.EventNodeCreated, zk.EventNodeDataChanged:
		return true, c.o.noData
	}
	return false, false
}

// enqueue takes evs's node events of the cache's scope, each with the
// read it makes (creations and changes; deletions that need one, see
// above). The read the watch started as the event came is taken unless
// it may be older than one taken before it, or than the last load (its
// Order is at most c.readFloor): then a new one is made.
func (c *Cache) enqueue(ctx context.Context, s *stream, evs []engine.PersistentEvent) {
	for _, ev := range evs {
		if ev.Kind != engine.PersistentNode || !c.inScope(ev.Path) {
			continue
		}
		p := pendingEvent{ev: ev}
		switch ev.Type {
		case zk.EventNodeDeleted:
			if r := s.last[ev.Path]; c.overtaken(ev) || (r != nil && (!done(r) || r.Routed >= ev.Seq)) {
				p.read = c.takeRead(ctx, ev, true)
			}
		case zk.EventNodeCreated, zk.EventNodeDataChanged:
			p.read = c.takeRead(ctx, ev, c.o.noData)
		default:
			continue
		}
		if p.read != nil {
			if s.last == nil {
				s.last = map[string]*engine.AsyncRead{}
			}
			s.last[ev.Path] = p.read
		}
		s.q = append(s.q, p)
	}
}

// takeRead returns ev's read (see enqueue).
func (c *Cache) takeRead(ctx context.Context, ev engine.PersistentEvent, statOnly bool) *engine.AsyncRead {
	r := ev.Read
	if r == nil || r.Order <= c.readFloor {
		r = c.e.ReadAsync(ctx, ev.Path, statOnly)
	}
	c.readFloor = max(c.readFloor, r.Order)
	return r
}

// drain takes the events at the head of s whose reads are in (or that
// make none), in order, and has post apply them to the cache (after what
// was posted before). An error is a read's that failed.
func (c *Cache) drain(s *stream, post func(func())) error {
	if len(s.q) == 0 {
		return nil
	}
	for p, to := range c.ahead {
		if to < s.q[0].ev.Seq {
			delete(c.ahead, p) // no event to come is that old
		}
	}
	i := 0
	for ; i < len(s.q); i++ {
		p := s.q[i]
		r := p.read
		if r == nil {
			continue
		}
		if !done(r) {
			break
		}
		if r.Err != nil && !refused(r.Err) {
			return r.Err
		}
		if r.Routed > p.ev.Seq { // events after this one may be older than the read
			if c.ahead == nil {
				c.ahead = map[string]uint64{}
			}
			c.ahead[p.ev.Path] = max(c.ahead[p.ev.Path], r.Routed)
		}
		if s.last[p.ev.Path] == r {
			delete(s.last, p.ev.Path) // applied: c.ahead has what it says
		}
	}
	if i == 0 {
		return nil
	}
	ready := s.q[:i:i]
	post(func() { c.apply(ready) })
	if s.q = s.q[i:]; len(s.q) == 0 {
		*s = stream{}
	}
	return nil
}

// apply applies events whose reads are in, in order, and posts what they
// changed to the listeners.
func (c *Cache) apply(ready []pendingEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.life.Closed() {
		return
	}
	var out []Event
	for i := range ready {
		out = c.applyLocked(out, &ready[i])
	}
	c.publishLocked(out, false)
}

// done reports whether r's reply is in.
func done(r *engine.AsyncRead) bool {
	select {
	case <-r.Done():
		return true
	default:
		return false
	}
}

// overtaken reports whether a read of ev's node may have been answered
// after ev came: ev's Seq is at most what a read's Routed said (after a
// load, or after the node's own read).
func (c *Cache) overtaken(ev engine.PersistentEvent) bool {
	return ev.Seq <= c.verifyTo || ev.Seq <= c.ahead[ev.Path]
}

// applyLocked applies one event against its read (see above); a read
// that failed is a refused one (drain stops at the others).
func (c *Cache) applyLocked(out []Event, p *pendingEvent) []Event {
	ev, r := p.ev, p.read
	switch {
	case r != nil && r.Err != nil:
		c.refusedRead(ev.Path)
		return c.removeLocked(out, ev.Path) // left out (as if gone)
	case ev.Type == zk.EventNodeDeleted:
		if slot, _ := c.findLocked(ev.Path); slot >= 0 && r != nil && r.There && r.Stat.Czxid == c.st.czxid(slot) {
			return out // an older node's deletion: the node held is still there
		}
		return c.removeLocked(out, ev.Path)
	case !r.There:
		return c.removeLocked(out, ev.Path) // deleted since: its event follows
	}
	return c.upsertLocked(out, ev.Path, r.Data, r.Stat)
}
