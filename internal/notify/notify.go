// Package notify delivers values in order to listeners, each on a
// goroutine of its own fed by an unbounded queue: Listeners for a stream
// of events, Current for a state whose listeners hear the current value
// first. The client publishes its connection states through it, and the
// recipes their own (members, instances, leadership, cache events).
package notify

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/gid"
)

// Listeners delivers values, in order, to callbacks and channels, each fed
// from an unbounded queue of its own by a goroutine of its own: Post never
// blocks, and a slow or stuck listener delays only itself. The zero value
// is ready to use; Close stops every listener. The Client publishes its
// connection states through one; recipes use it for their own events (a
// shared count's changes, leadership).
type Listeners[T any] struct {
	mu     sync.Mutex
	m      map[uint64]*listener[T]
	next   uint64
	closed bool
}

// Listen registers fn to be called with every value posted from now on,
// in order, on a goroutine of its own. The returned function removes the
// listener; it, and Close, wait up to 5s for a call in progress to return
// (a callback may remove its own listener). A nil fn is ignored.
func (ls *Listeners[T]) Listen(fn func(T)) (remove func()) {
	if fn == nil {
		return func() {} // nothing to call
	}
	l := newListener(fn, nil, nil)
	l.drain = true
	return ls.add(l)
}

// Subscribe returns a channel that receives every value posted from now
// on, in order; values queue without bound while the reader is slow. The
// channel is closed by the returned function or by Close.
func (ls *Listeners[T]) Subscribe() (<-chan T, func()) {
	ch, l := newSubscription[T]()
	return ch, ls.add(l)
}

// newSubscription returns a channel and the listener that feeds it.
func newSubscription[T any]() (<-chan T, *listener[T]) {
	ch := make(chan T)
	done := make(chan struct{})
	l := newListener(func(v T) {
		select {
		case ch <- v:
		case <-done:
		}
	}, done, func() { close(ch) })
	return ch, l
}

// Post queues v for every listener. It never blocks.
func (ls *Listeners[T]) Post(v T) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, l := range ls.m {
		l.q.Push(v)
	}
}

// Close removes every listener: callbacks (Listen) first get the values
// already posted, subscription channels (Subscribe) are closed at once
// (nobody may be reading them). It waits, as remove does, up to 5s per
// listener. Later registrations are stopped at once.
func (ls *Listeners[T]) Close() {
	ls.mu.Lock()
	ls.closed = true
	m := ls.m
	ls.m = nil
	ls.mu.Unlock()
	for _, l := range m {
		l.finish()
	}
}

func (ls *Listeners[T]) add(l *listener[T]) (remove func()) {
	ls.mu.Lock()
	if ls.closed {
		ls.mu.Unlock()
		l.stop()
		return func() {}
	}
	if ls.m == nil {
		ls.m = map[uint64]*listener[T]{}
	}
	id := ls.next
	ls.next++
	ls.m[id] = l
	ls.mu.Unlock()
	return func() {
		ls.mu.Lock()
		delete(ls.m, id)
		ls.mu.Unlock()
		l.stop()
	}
}

// listener delivers values to one callback from an unbounded queue.
type listener[T any] struct {
	drain    bool // a callback: Close delivers what is queued first
	q        *Queue[T]
	done     chan struct{}
	finished chan struct{}
	once     sync.Once
	fn       func(T)
	onStop   func()
	running  atomic.Pointer[listenerToken] // set while fn runs
}

// listenerToken identifies a call of the listener's callback, so that a
// callback removing its own listener does not wait for itself.
type listenerToken struct{ gid uint64 }

func newListener[T any](fn func(T), done chan struct{}, onStop func()) *listener[T] {
	if done == nil {
		done = make(chan struct{})
	}
	l := &listener[T]{q: NewQueue[T](), fn: fn, done: done, finished: make(chan struct{}), onStop: onStop}
	go l.loop()
	return l
}

func (l *listener[T]) loop() {
	defer func() {
		if l.onStop != nil {
			l.onStop()
		}
		close(l.finished)
	}()
	var tok *listenerToken
	for {
		vs, ok := l.q.Take(l.done)
		if !ok {
			return
		}
		for _, v := range vs {
			select {
			case <-l.done:
				return
			default:
			}
			if tok == nil {
				if id, err := gid.LookupGoroutineID(); err == nil {
					tok = &listenerToken{gid: id}
				}
			}
			if tok != nil {
				l.running.Store(tok)
			}
			l.fn(v)
			l.running.Store(nil)
		}
	}
}

// finish is stop for Close: a callback listener first gets the values
// already queued (within listenerStopWait), then stops.
func (l *listener[T]) finish() {
	if !l.drain {
		l.stop()
		return
	}
	l.q.Drain()
	t := time.NewTimer(listenerStopWait)
	defer t.Stop()
	select {
	case <-l.finished:
	case <-t.C:
	}
	l.stop()
}

// stop ends delivery and waits for the listener goroutine to finish,
// unless called from that goroutine (a callback removing itself). A
// callback that is still busy after listenerStopWait is left to finish on
// its own, so that a stuck listener cannot hang Close.
func (l *listener[T]) stop() {
	l.once.Do(func() {
		close(l.done)
		l.q.Close()
	})
	if tok := l.running.Load(); tok != nil {
		if id, err := gid.LookupGoroutineID(); err == nil && tok.gid == id {
			return // a callback removing its own listener
		}
	}
	t := time.NewTimer(listenerStopWait)
	defer t.Stop()
	select {
	case <-l.finished:
	case <-t.C:
	}
}

const listenerStopWait = 5 * time.Second

// ListenFirst is Listen with first queued before any value posted later:
// the current state, for a listener that must hear it first. A caller
// that posts under a lock of its own registers under that lock too, so
// that no value posted in between is lost or comes first.
func (ls *Listeners[T]) ListenFirst(fn func(T), first T) (remove func()) {
	if fn == nil {
		return func() {}
	}
	l := newListener(fn, nil, nil)
	l.drain = true
	l.q.Push(first)
	return ls.add(l)
}

// SubscribeFirst is Subscribe with first queued before any value posted
// later (see ListenFirst).
func (ls *Listeners[T]) SubscribeFirst(first T) (<-chan T, func()) {
	ch, l := newSubscription[T]()
	l.q.Push(first)
	return ch, ls.add(l)
}

// Current is a state its listeners hear: the current value first (once
// there is one), then each change, in order, never the same value twice
// in a row (equal decides). A recipe that publishes a state (members,
// instances, leadership) sets it here and lets Listen and Subscribe
// follow; the zero value is not usable: make it with NewCurrent.
type Current[T any] struct {
	mu    sync.Mutex
	ls    Listeners[T]
	v     T
	set   bool
	equal func(a, b T) bool
}

// NewCurrent returns a Current with no value yet.
func NewCurrent[T any](equal func(a, b T) bool) *Current[T] {
	return &Current[T]{equal: equal}
}

// Set makes v the current value and posts it, unless it equals the
// current one; it reports whether it posted. Callers that derive v under
// a lock of their own call Set under it, so values post in their order.
func (c *Current[T]) Set(v T) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set && c.equal(c.v, v) {
		return false
	}
	c.v, c.set = v, true
	c.ls.Post(v)
	return true
}

// Listened reports whether anyone listens now. A publisher whose value
// costs a walk of its state may leave it unmade while nobody listens, and
// Set it before the next Listen or Subscribe (under the lock it sets
// under, so that nothing posted comes in between).
func (c *Current[T]) Listened() bool {
	c.ls.mu.Lock()
	defer c.ls.mu.Unlock()
	return len(c.ls.m) > 0
}

// Get returns the current value, and whether there is one.
func (c *Current[T]) Get() (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v, c.set
}

// Listen calls fn with the current value (if there is one), then with
// each change, in order, on a goroutine of its own (see Listeners).
func (c *Current[T]) Listen(fn func(T)) (remove func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set {
		return c.ls.ListenFirst(fn, c.v)
	}
	return c.ls.Listen(fn)
}

// Subscribe is Listen for a channel (see Listeners.Subscribe).
func (c *Current[T]) Subscribe() (<-chan T, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set {
		return c.ls.SubscribeFirst(c.v)
	}
	return c.ls.Subscribe()
}

// Close removes every listener (see Listeners.Close).
func (c *Current[T]) Close() { c.ls.Close() }

// SubscribeVia is Subscribe (SubscribeFirst when first is not nil) with
// each value converted by conv, without a goroutine of its own: a package
// that exports its own type for T's values subscribes through it.
func SubscribeVia[T, U any](ls *Listeners[T], first *T, conv func(T) U) (<-chan U, func()) {
	ch := make(chan U)
	done := make(chan struct{})
	l := newListener(func(v T) {
		select {
		case ch <- conv(v):
		case <-done:
		}
	}, done, func() { close(ch) })
	if first != nil {
		l.q.Push(*first)
	}
	return ch, ls.add(l)
}

// IsClosed reports whether ch is closed (a Done or state signal).
func IsClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
