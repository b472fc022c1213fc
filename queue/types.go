package queue

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Queue is Curator's DistributedQueue: each Put is a persistent
// sequential node <path>/queue-<seq> holding its items framed as Curator
// frames them (Encode), taken in sequence order. Producers only Put; a
// queue made WithConsumer also consumes, on a goroutine of its own
// between Start and Close, in normal mode (at most once) or, WithLockPath,
// in lock-safety mode (at least once, fenced: see the package doc).
// Curator's DistributedQueue processes, producers and consumers, can
// share the path.
type Queue struct{ q *core }

// New returns the queue at path. It does not touch ZooKeeper.
func New(c *recipes.Client, path string, opts ...Option) (*Queue, error) {
	q, err := newCore(c, kindPlain, path, opts)
	if err != nil {
		return nil, err
	}
	return &Queue{q}, nil
}

// Start makes the queue's directory (and its lock directory) as Curator's
// start does, and with a consumer starts consuming. Put needs no Start.
func (q *Queue) Start(ctx context.Context) error { return q.core().start(ctx) }

// Close stops consuming: the consumer's ctx ends, and Close waits until
// the item in hand is finished, or ctx ends.
func (q *Queue) Close(ctx context.Context) error { return q.core().close(ctx) }

// Put adds one item at the tail of the queue (Curator's put). A create
// whose reply is lost to a connection problem is made again, so an item
// may be queued twice then: puts are at least once.
func (q *Queue) Put(ctx context.Context, item []byte) error {
	return q.core().put(ctx, ItemPrefix, [][]byte{item})
}

// PutMulti adds several items in one node (Curator's putMulti): they are
// consumed together, as one Message.
func (q *Queue) PutMulti(ctx context.Context, items [][]byte) error {
	return q.core().put(ctx, ItemPrefix, items)
}

// Len returns the number of queue nodes now (a PutMulti counts once).
func (q *Queue) Len(ctx context.Context) (int, error) { return q.core().length(ctx) }

// Path returns the queue's path as given to New.
func (q *Queue) Path() string { return q.core().path }

// Unreadable returns how many items whose data could not be decoded this
// queue's consumer met: each kept in the queue, or handed to the
// WithUnreadable handler, and logged at error with its bytes.
func (q *Queue) Unreadable() int64 { return q.core().unreadable.Load() }

func (q *Queue) core() *core {
	if q == nil || q.q == nil {
		return unmade(kindPlain)
	}
	return q.q
}

// IDQueue is Curator's DistributedIdQueue: a Queue whose items carry an
// id, in their names (queue-|<id>|<seq>, '/' and '|' in the id made '_'),
// so that the items of an id can be removed before they are consumed.
// Items are taken in sequence order whatever their ids; an item put back
// after a failed Consume keeps its id (CURATOR-224).
type IDQueue struct{ q *core }

// NewID returns the id queue at path. It does not touch ZooKeeper.
func NewID(c *recipes.Client, path string, opts ...Option) (*IDQueue, error) {
	q, err := newCore(c, kindID, path, opts)
	if err != nil {
		return nil, err
	}
	return &IDQueue{q}, nil
}

// Start is Queue.Start.
func (q *IDQueue) Start(ctx context.Context) error { return q.core().start(ctx) }

// Close is Queue.Close.
func (q *IDQueue) Close(ctx context.Context) error { return q.core().close(ctx) }

// Put adds an item with an id (not empty) at the tail of the queue.
func (q *IDQueue) Put(ctx context.Context, id string, item []byte) error {
	return q.PutMulti(ctx, id, [][]byte{item})
}

// PutMulti adds several items with one id in one node.
func (q *IDQueue) PutMulti(ctx context.Context, id string, items [][]byte) error {
	c := q.core()
	if err := c.check(ctx); err != nil {
		return err
	}
	if id == "" {
		return zkerr.Namedf(c.what(), "put: %w: empty id", recipes.ErrInvalidArgument)
	}
	return c.put(ctx, idName(id), items)
}

// Remove deletes every item with id that is not being consumed (Curator's
// remove), each under its lock in lock-safety mode, and returns how many
// it deleted.
func (q *IDQueue) Remove(ctx context.Context, id string) (int, error) {
	c := q.core()
	if err := c.check(ctx); err != nil {
		return 0, err
	}
	if id == "" {
		return 0, zkerr.Namedf(c.what(), "remove: %w: empty id", recipes.ErrInvalidArgument)
	}
	var kids []string
	err := c.e.Retry(ctx, func() error {
		var err error
		kids, _, err = c.e.Children(ctx, c.full)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, zkerr.Namedf(c.what(), "remove %s: %w", id, err)
	}
	n, want := 0, fixID(id)
	for _, name := range sortItems(kids, ItemPrefix, kindID) {
		if got, _, ok := parseID(name); !ok || got != want {
			continue
		}
		ok, err := c.tryRemove(ctx, name)
		if err != nil {
			return n, zkerr.Namedf(c.what(), "remove %s: %w", id, err)
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// Len is Queue.Len.
func (q *IDQueue) Len(ctx context.Context) (int, error) { return q.core().length(ctx) }

// Path returns the queue's path as given to NewID.
func (q *IDQueue) Path() string { return q.core().path }

// Unreadable returns how many items whose data could not be decoded this
// queue's consumer met: each kept in the queue, or handed to the
// WithUnreadable handler, and logged at error with its bytes.
func (q *IDQueue) Unreadable() int64 { return q.core().unreadable.Load() }

func (q *IDQueue) core() *core {
	if q == nil || q.q == nil {
		return unmade(kindID)
	}
	return q.q
}

// PriorityQueue is Curator's DistributedPriorityQueue: each item carries
// a priority in its name (queue-<1 for >= 0, else 0><8 hex digits><seq>),
// and the consumer takes the lowest priority first (items of one priority
// in sequence order), listing the queue again after every item so that a
// more urgent item put meanwhile goes next.
type PriorityQueue struct{ q *core }

// NewPriority returns the priority queue at path. It does not touch
// ZooKeeper.
func NewPriority(c *recipes.Client, path string, opts ...Option) (*PriorityQueue, error) {
	q, err := newCore(c, kindPriority, path, opts)
	if err != nil {
		return nil, err
	}
	return &PriorityQueue{q}, nil
}

// Start is Queue.Start.
func (q *PriorityQueue) Start(ctx context.Context) error { return q.core().start(ctx) }

// Close is Queue.Close.
func (q *PriorityQueue) Close(ctx context.Context) error { return q.core().close(ctx) }

// Put adds an item with a priority: lower goes first.
func (q *PriorityQueue) Put(ctx context.Context, priority int32, item []byte) error {
	return q.core().put(ctx, priorityName(priority), [][]byte{item})
}

// PutMulti adds several items with one priority in one node.
func (q *PriorityQueue) PutMulti(ctx context.Context, priority int32, items [][]byte) error {
	return q.core().put(ctx, priorityName(priority), items)
}

// Len is Queue.Len.
func (q *PriorityQueue) Len(ctx context.Context) (int, error) { return q.core().length(ctx) }

// Path returns the queue's path as given to NewPriority.
func (q *PriorityQueue) Path() string { return q.core().path }

// Unreadable returns how many items whose data could not be decoded this
// queue's consumer met: each kept in the queue, or handed to the
// WithUnreadable handler, and logged at error with its bytes.
func (q *PriorityQueue) Unreadable() int64 { return q.core().unreadable.Load() }

func (q *PriorityQueue) core() *core {
	if q == nil || q.q == nil {
		return unmade(kindPriority)
	}
	return q.q
}

// DelayQueue is Curator's DistributedDelayQueue: each item carries the
// time it is due in its name (queue-|<epoch ms in hex>|<seq>) and is not
// consumed before then; due items go in due-time order. The consumer
// sleeps until the first item is due (or the queue changes). Producers'
// and consumers' clocks are compared: keep them in sync.
type DelayQueue struct{ q *core }

// NewDelay returns the delay queue at path. It does not touch ZooKeeper.
func NewDelay(c *recipes.Client, path string, opts ...Option) (*DelayQueue, error) {
	q, err := newCore(c, kindDelay, path, opts)
	if err != nil {
		return nil, err
	}
	return &DelayQueue{q}, nil
}

// Start is Queue.Start.
func (q *DelayQueue) Start(ctx context.Context) error { return q.core().start(ctx) }

// Close is Queue.Close.
func (q *DelayQueue) Close(ctx context.Context) error { return q.core().close(ctx) }

// Put adds an item due at until (after the Unix epoch).
func (q *DelayQueue) Put(ctx context.Context, until time.Time, item []byte) error {
	return q.PutMulti(ctx, until, [][]byte{item})
}

// PutMulti adds several items due at until in one node.
func (q *DelayQueue) PutMulti(ctx context.Context, until time.Time, items [][]byte) error {
	c := q.core()
	if err := c.check(ctx); err != nil {
		return err
	}
	if until.UnixMilli() <= 0 {
		return zkerr.Namedf(c.what(), "put: %w: due time %v is not after the epoch", recipes.ErrInvalidArgument, until)
	}
	return c.put(ctx, delayName(until), items)
}

// Len is Queue.Len.
func (q *DelayQueue) Len(ctx context.Context) (int, error) { return q.core().length(ctx) }

// Path returns the queue's path as given to NewDelay.
func (q *DelayQueue) Path() string { return q.core().path }

// Unreadable returns how many items whose data could not be decoded this
// queue's consumer met: each kept in the queue, or handed to the
// WithUnreadable handler, and logged at error with its bytes.
func (q *DelayQueue) Unreadable() int64 { return q.core().unreadable.Load() }

func (q *DelayQueue) core() *core {
	if q == nil || q.q == nil {
		return unmade(kindDelay)
	}
	return q.q
}

// unmade stands for the core of a queue its constructor did not make (a
// nil pointer, a zero value): every method returns the not-made error
// naming the queue's type, and Path "".
func unmade(k kind) *core { return &core{kind: k} }

// notMade is the error of a method of a queue its constructor did not
// make.
func (q *core) notMade() error {
	k := kindPlain
	if q != nil {
		k = q.kind
	}
	switch k {
	case kindID:
		return zkerr.NotMade("IDQueue", "NewID")
	case kindPriority:
		return zkerr.NotMade("PriorityQueue", "NewPriority")
	case kindDelay:
		return zkerr.NotMade("DelayQueue", "NewDelay")
	}
	return zkerr.NotMade("Queue", "New")
}
