package cache

import (
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/gid"
)

// Filter selects what a listener hears (Curator's
// CuratorCacheListenerBuilder). With no For... filter a listener hears
// every type; with some, only those. A filter is not an option: it
// cannot be wrong, so it is not checked.
type Filter func(*listenOptions)

type listenOptions struct {
	types uint32 // bit per EventType; 0: all
	after bool
}

func (lo *listenOptions) wants(t EventType) bool {
	return lo.types == 0 || lo.types&(1<<t) != 0
}

// ForCreates adds NodeCreated to what the listener hears.
func ForCreates() Filter { return forType(NodeCreated) }

// ForChanges adds NodeChanged to what the listener hears.
func ForChanges() Filter { return forType(NodeChanged) }

// ForDeletes adds NodeDeleted to what the listener hears.
func ForDeletes() Filter { return forType(NodeDeleted) }

// ForInitialized adds Initialized to what the listener hears.
func ForInitialized() Filter { return forType(Initialized) }

// ForResynced adds Resynced to what the listener hears.
func ForResynced() Filter { return forType(Resynced) }

// ForAll makes the listener hear every type (the default).
func ForAll() Filter {
	return func(lo *listenOptions) { lo.types = ^uint32(0) }
}

func forType(t EventType) Filter {
	return func(lo *listenOptions) { lo.types |= 1 << t }
}

// AfterInitialized makes the listener hear nothing before Initialized
// (Curator's afterInitialized): not the NodeCreated of the first load,
// nor, for a listener added later, those of the current contents; then
// Initialized (if its types include it) and every change after it.
func AfterInitialized() Filter {
	return func(lo *listenOptions) { lo.after = true }
}

// Listen adds a listener. What it hears, in order, on a goroutine of its
// own (a slow listener delays only itself: never the cache, the other
// listeners, or the client's session):
//
//   - the current contents first (the listener rule of package recipes):
//     a NodeCreated for every node cached now (Old nil), parents before
//     children, and Initialized if the first load is done;
//   - then every change as the cache applies it: NodeCreated, NodeChanged,
//     NodeDeleted, in the order the server applied them; Initialized once,
//     after the NodeCreated events of the first load (so a listener added
//     before Start hears the load as it happens); Resynced after each
//     later full resync.
//
// So any listener, whenever added, hears a NodeCreated for each node
// before any other event about it, and Initialized exactly once.
// AfterInitialized and the For... filters select from this stream. Events
// share their Node values with the cache and other listeners: do not
// modify them. A panicking listener is not recovered: it ends the
// program, as a panic on any goroutine does. The returned function removes
// the listener; Close removes every listener after delivering what was
// queued. A listener may call Close (it then does not wait for the
// listeners, its own call included, to finish).
func (c *Cache) Listen(fn func(Event), opts ...Filter) (remove func()) {
	if !c.ok() || fn == nil {
		return func() {}
	}
	var lo listenOptions
	for _, o := range opts {
		if o != nil {
			o(&lo)
		}
	}
	seenInit, known := false, false
	deliver := func(evs []Event) {
		if !known {
			known = true
			if id := gid.GoroutineID(); id != 0 {
				c.listenerGs.Store(id, struct{}{})
			}
		}
		for _, ev := range evs {
			if ev.Type == Initialized {
				seenInit = true
			}
			if (lo.after && !seenInit) || !lo.wants(ev.Type) {
				continue
			}
			fn(ev)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var first []Event
	c.preorderLocked(func(full string, slot int32) {
		n := c.nodeLocked(slot, full)
		first = c.emit(first, Event{Type: NodeCreated, Path: n.Path, New: &n})
	})
	if c.initialized {
		first = append(first, Event{Type: Initialized})
	}
	return c.listeners.ListenFirst(deliver, first)
}

// subscription is a Subscribe channel and what ends it.
type subscription struct {
	ch     chan Event
	done   chan struct{} // closed: stop sending
	stop   sync.Once
	closed sync.Once
}

func (s *subscription) end() { s.stop.Do(func() { close(s.done) }) }

// Subscribe is Listen for a channel: it receives what a listener with
// opts would hear (the current contents first, then every change, in
// order), queued without bound while the reader is slow. The returned
// function, or Close, closes the channel (events still queued are
// dropped).
func (c *Cache) Subscribe(opts ...Filter) (<-chan Event, func()) {
	s := &subscription{ch: make(chan Event), done: make(chan struct{})}
	if !c.ok() {
		close(s.ch)
		return s.ch, func() {}
	}
	c.mu.Lock()
	if c.subs == nil {
		c.subs = map[*subscription]struct{}{}
	}
	c.subs[s] = struct{}{}
	c.mu.Unlock()
	remove := c.Listen(func(ev Event) {
		select {
		case <-s.done:
			return
		default:
		}
		select {
		case s.ch <- ev:
		case <-s.done:
		}
	}, opts...)
	return s.ch, func() {
		s.end()
		remove()
		c.mu.Lock()
		delete(c.subs, s)
		c.mu.Unlock()
		s.closed.Do(func() { close(s.ch) })
	}
}

// Resyncs returns how many full resyncs have completed since
// Initialized (the Resynced events so far).
func (c *Cache) Resyncs() int64 {
	if c == nil {
		return 0
	}
	return c.resyncs.Load()
}
