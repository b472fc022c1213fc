package recipes

import (
	"sync"
	"sync/atomic"
	"time"
)

// Listen registers fn to be called with every state transition, in order,
// on a goroutine of its own: a slow fn delays only its own later calls,
// never the client. The returned function removes the listener; it, and
// Close, wait up to 5s for a call in progress to return.
func (c *Client) Listen(fn func(State)) (remove func()) {
	return c.addListener(newListener(fn, nil, nil))
}

// Subscribe returns a channel that receives every state transition in
// order. Transitions queue without bound while the reader is slow. The
// channel is closed by the returned function or when the client closes.
func (c *Client) Subscribe() (<-chan State, func()) {
	ch := make(chan State)
	done := make(chan struct{})
	l := newListener(func(s State) {
		select {
		case ch <- s:
		case <-done:
		}
	}, done, func() { close(ch) })
	return ch, c.addListener(l)
}

func (c *Client) addListener(l *listener) (remove func()) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		l.stop()
		return func() {}
	}
	id := c.nextID
	c.nextID++
	c.listeners[id] = l
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.listeners, id)
		c.mu.Unlock()
		l.stop()
	}
}

// listener delivers states to one callback from an unbounded queue.
type listener struct {
	q        *queue[State]
	done     chan struct{}
	finished chan struct{}
	once     sync.Once
	fn       func(State)
	onStop   func()
	running  atomic.Pointer[listenerToken] // set while fn runs
}

// listenerToken identifies a call of the listener's callback, so that a
// callback removing its own listener does not wait for itself.
type listenerToken struct{ gid uint64 }

func newListener(fn func(State), done chan struct{}, onStop func()) *listener {
	if done == nil {
		done = make(chan struct{})
	}
	l := &listener{q: newQueue[State](), fn: fn, done: done, finished: make(chan struct{}), onStop: onStop}
	go l.loop()
	return l
}

func (l *listener) post(s State) { l.q.push(s) }

func (l *listener) loop() {
	defer func() {
		if l.onStop != nil {
			l.onStop()
		}
		close(l.finished)
	}()
	var tok *listenerToken
	for {
		states, ok := l.q.take(l.done)
		if !ok {
			return
		}
		for _, s := range states {
			select {
			case <-l.done:
				return
			default:
			}
			if tok == nil {
				if id, err := LookupGoroutineID(); err == nil {
					tok = &listenerToken{gid: id}
				}
			}
			if tok != nil {
				l.running.Store(tok)
			}
			l.fn(s)
			l.running.Store(nil)
		}
	}
}

// stop ends delivery and waits for the listener goroutine to finish,
// unless called from that goroutine (a callback removing itself). A
// callback that is still busy after listenerStopWait is left to finish on
// its own, so that a stuck listener cannot hang Close.
func (l *listener) stop() {
	l.once.Do(func() {
		close(l.done)
		l.q.close()
	})
	if tok := l.running.Load(); tok != nil {
		if id, err := LookupGoroutineID(); err == nil && tok.gid == id {
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
