package queue

// Items whose data does not decode: kept in the queue by default, or
// handed to the user's handler (WithUnreadable); counted, measured and
// logged either way.

import (
	"context"
	"errors"
	"fmt"
)

// UnreadableFunc is handed a queue item whose data does not decode (not
// Curator's framing): name is the item's node name under the queue's path
// (queue-<seq>, as Message.Node ends), data its bytes as stored.
type UnreadableFunc func(ctx context.Context, name string, data []byte) error

// WithUnreadable hands every item whose data does not decode to h, on the
// consumer's goroutine, instead of keeping it in the queue. Consume never
// sees such an item, in either mode.
//
// In normal mode the item is deleted, then handed to h (at most once, as
// Consume is called; h's error is logged and the item is gone). In
// lock-safety mode h runs under the item's lock; when h returns nil the
// item is deleted (fenced, as Ack), and when it returns an error the item
// is kept in the queue, as without a handler.
//
// Without a handler (the default) an unreadable item is kept in the
// queue, in either mode: not consumed, not deleted (in lock-safety mode
// its lock is released), and passed over by this consumer until it is
// gone, so the items after it are consumed; it counts in Len and against
// WithMaxItems until someone removes it. (Curator's consumers delete such
// an item: one that shares the queue will.) Each unreadable item the
// consumer meets is counted (Unreadable, and the metric
// recipes.MetricQueueUnreadable, result kept or handed) and logged at
// error with its bytes and what happened to it.
func WithUnreadable(h UnreadableFunc) Option {
	return option("Queue", "WithUnreadable", h != nil, "nil unreadable handler", func(o *options) { o.unreadable = h })
}

// outcome is what the consumer did with one item.
type outcome uint8

const (
	finished   outcome = iota // consumed, deleted, or gone
	lockedAway                // another consumer holds its lock
	kept                      // unreadable, left in the queue
)

// metricName is the queue's recipe label.
func (k kind) metricName() string {
	switch k {
	case kindID:
		return "id_queue"
	case kindPriority:
		return "priority_queue"
	case kindDelay:
		return "delay_queue"
	}
	return "queue"
}

// unreadableNormally handles, in normal mode, an item whose data did not
// decode: kept without a handler; else deleted (unless another consumer
// took it first, or it changed since it was read) and handed over.
func (q *core) unreadableNormally(ctx context.Context, name string, data []byte, version int32, derr error) outcome {
	h := q.opts.unreadable
	if h == nil {
		q.noteUnreadable(name, data, derr, true, "corrupt queue item kept in the queue (no unreadable handler): not consumed, not deleted, passed over")
		return kept
	}
	if !q.deleteItem(ctx, name, version) {
		return finished // another consumer has it
	}
	if herr := h(ctx, name, data); herr != nil {
		q.noteUnreadable(name, data, derr, false, "corrupt queue item deleted and handed to the unreadable handler, which failed: in normal mode the item is gone", "handler_err", herr)
		return finished
	}
	q.noteUnreadable(name, data, derr, false, "corrupt queue item deleted and handed to the unreadable handler")
	return finished
}

// unreadableWithLock handles, in lock-safety mode, an item whose data did
// not decode, under its lock l: kept (the lock released) without a
// handler or when the handler fails; else handed over, then deleted.
func (q *core) unreadableWithLock(ctx context.Context, name string, l *lock, data []byte, derr error) outcome {
	h := q.opts.unreadable
	if h == nil {
		q.release(l)
		q.noteUnreadable(name, data, derr, true, "corrupt queue item kept in the queue (no unreadable handler): not consumed, not deleted, its lock released, passed over")
		return kept
	}
	if herr := h(ctx, name, data); herr != nil {
		q.release(l)
		q.noteUnreadable(name, data, derr, true, "corrupt queue item kept in the queue: the unreadable handler failed; its lock released, passed over", "handler_err", herr)
		return kept
	}
	m := q.message(name, nil)
	m.lock, m.data = l, data
	switch ferr := m.finish(ctx, false); {
	case ferr == nil, errors.Is(ferr, errItemGone):
		q.noteUnreadable(name, data, derr, false, "corrupt queue item handed to the unreadable handler and deleted")
	default:
		q.noteUnreadable(name, data, derr, false, "corrupt queue item handed to the unreadable handler; its lock was lost before it was deleted, so it may be handed over again", "ack_err", ferr)
	}
	return finished
}

// noteUnreadable counts an unreadable item (Unreadable and the metric)
// and logs at error what happened to it, with its bytes (up to 512,
// quoted), the decoding error and more (the handler's error, say).
func (q *core) noteUnreadable(name string, data []byte, derr error, isKept bool, what string, more ...any) {
	q.unreadable.Add(1)
	q.e.CountUnreadable(q.kind.metricName(), q.path, isKept)
	shown := data[:min(len(data), 512)]
	args := []any{"queue", q.path, "item", name, "kept", isKept, "bytes", len(data),
		"data", fmt.Sprintf("%q", shown), "err", derr}
	q.log.Error("zkrecipes: "+what, append(args, more...)...)
}
