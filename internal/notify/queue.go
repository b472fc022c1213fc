package notify

import "sync"

// Queue is an unbounded FIFO: Push never blocks, so neither go-zookeeper's
// event callback nor the client's state machine can be held up by a slow
// consumer. It is the one queue behind the client's event inbox, its
// followers, its persistent watches and every listener.
type Queue[T any] struct {
	mu       sync.Mutex
	items    []T
	wake     chan struct{}
	closed   bool
	draining bool // no new items; closed once empty
}

// NewQueue returns an empty queue.
func NewQueue[T any]() *Queue[T] { return &Queue[T]{wake: make(chan struct{}, 1)} }

// Push appends v; it reports false once the queue is closed.
func (q *Queue[T]) Push(v T) bool {
	q.mu.Lock()
	ok := !q.closed && !q.draining
	if ok {
		q.items = append(q.items, v)
	}
	q.mu.Unlock()
	q.signal()
	return ok
}

func (q *Queue[T]) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Close makes Take return false at once; items still queued are dropped.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	q.closed = true
	q.items = nil
	q.mu.Unlock()
	q.signal()
}

// Drain closes the queue for new items but lets Take return those queued
// before it reports the end.
func (q *Queue[T]) Drain() {
	q.mu.Lock()
	q.draining = true
	q.mu.Unlock()
	q.signal()
}

// Take returns every queued item, blocking until there is one; ok is false
// once the queue is closed or done is closed.
func (q *Queue[T]) Take(done <-chan struct{}) (items []T, ok bool) {
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

// Wake is signalled (without blocking: one signal stands for any number)
// after an item is pushed or the queue closes; a consumer that also waits
// for other things selects on it, then Polls.
func (q *Queue[T]) Wake() <-chan struct{} { return q.wake }

// Poll returns every queued item without blocking (none when the queue is
// empty); ok is false once the queue is closed.
func (q *Queue[T]) Poll() (items []T, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, false
	}
	items, q.items = q.items, nil
	return items, true
}
