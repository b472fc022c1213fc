package engine

import "sync"

// queue is an unbounded FIFO: push never blocks, so neither go-zookeeper's
// event callback nor the state machine can be held up by a slow consumer.
// It is the one queue behind the client's event inbox and every state
// listener.
type queue[T any] struct {
	mu       sync.Mutex
	items    []T
	wake     chan struct{}
	closed   bool
	draining bool // no new items; closed once empty
}

func newQueue[T any]() *queue[T] { return &queue[T]{wake: make(chan struct{}, 1)} }

// push appends v; it reports false once the queue is closed.
func (q *queue[T]) push(v T) bool {
	q.mu.Lock()
	ok := !q.closed && !q.draining
	if ok {
		q.items = append(q.items, v)
	}
	q.mu.Unlock()
	q.signal()
	return ok
}

func (q *queue[T]) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// close makes take return false at once; items still queued are dropped.
func (q *queue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.items = nil
	q.mu.Unlock()
	q.signal()
}

// drain closes the queue for new items but lets take return those queued
// before it reports the end.
func (q *queue[T]) drain() {
	q.mu.Lock()
	q.draining = true
	q.mu.Unlock()
	q.signal()
}

// take returns every queued item, blocking until there is one; ok is false
// once the queue is closed or done is closed.
func (q *queue[T]) take(done <-chan struct{}) (items []T, ok bool) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, false
		}
		if len(q.items) > 0 {
			items, q.items = q.items, nil
			q.mu.Unlock()
			return items, true
		}
		if q.draining {
			q.closed = true
			q.mu.Unlock()
			return nil, false
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-done:
			return nil, false
		}
	}
}

// poll returns every queued item without blocking (none when the queue is
// empty); ok is false once the queue is closed.
func (q *queue[T]) poll() (items []T, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, false
	}
	items, q.items = q.items, nil
	return items, true
}
