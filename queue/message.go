package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Message is one queue node handed to a Consumer: its items (one, or
// several for a PutMulti) and, in lock-safety mode, the consumer's hold
// on it.
type Message struct {
	// Items are the node's items, in the order they were put.
	Items [][]byte
	// Node is the item node's path (inside the client's namespace).
	Node string
	// ID is an IDQueue item's id (with '/' and '|' made '_'), "" for
	// other queues.
	ID string

	q    *core
	name string
	data []byte
	lock *lock // nil in normal mode

	mu     sync.Mutex
	acked  bool
	ackErr error
	asked  bool // Ack was called by the consumer
}

// Data returns the first item: the item, for a node put by Put.
func (m *Message) Data() []byte {
	if m == nil || len(m.Items) == 0 {
		return nil
	}
	return m.Items[0]
}

// Done returns a channel that closes when the consumer's lock on the item
// may be gone (lock-safety mode): on SUSPENDED under the client's Standard
// error policy, on LOST, when the client closes, and once the item is
// acknowledged. Work that must not run twice stops when it closes. In
// normal mode the item is already deleted and nothing can be lost: Done
// returns nil (a channel that never closes).
func (m *Message) Done() <-chan struct{} {
	if m == nil || m.lock == nil {
		return nil
	}
	return m.lock.hold.Done()
}

// IsLost reports whether the session that held the item's lock was lost
// (or the client closed): the item may then be with another consumer.
// Always false in normal mode.
func (m *Message) IsLost() bool { return m != nil && m.lock != nil && m.lock.hold.IsLost() }

// Fenced runs ops (recipe paths, as Client.Multi takes them) as one
// transaction together with a check that the consumer still holds the
// item's lock, so the server refuses the writes of a consumer whose lock
// was lost (recipes.ErrFenced). In normal mode there is no lock: it
// returns an error wrapping recipes.ErrNotHeld.
func (m *Message) Fenced(ctx context.Context, ops ...recipes.Op) ([]zk.MultiResponse, error) {
	if m == nil || m.q == nil {
		return nil, notMadeMessage()
	}
	if m.lock == nil {
		return nil, zkerr.Namedf(m.q.what(), "fenced: %w: normal mode has no lock", recipes.ErrNotHeld)
	}
	return m.lock.hold.Fenced(ctx, recipeargs.Ops(ops)...)
}

// Ack deletes the item and releases its lock in one fenced transaction,
// in lock-safety mode (in normal mode the item is already deleted: nil).
// When the lock was lost (its session expired while the item was being
// consumed, so another consumer may have it now), nothing is deleted and
// Ack returns an error wrapping recipes.ErrLockLost. Consume need not
// call it (the queue acknowledges an item whose Consume returned nil), but
// a consumer that must know whether it alone consumed the item calls it
// before it returns. Later calls return the first one's result.
func (m *Message) Ack(ctx context.Context) error {
	if m == nil || m.q == nil {
		return notMadeMessage()
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	m.mu.Lock()
	m.asked = true
	m.mu.Unlock()
	if err := m.finish(ctx, false); !errors.Is(err, errItemGone) {
		return err
	}
	return nil
}

func notMadeMessage() error { return zkerr.NotMade("Message", "a queue") }

func (m *Message) told() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.asked
}

// finish deletes (or requeues) the item and releases the lock, once.
func (m *Message) finish(ctx context.Context, requeue bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.acked {
		return m.ackErr
	}
	m.acked = true
	m.ackErr = m.q.fencedFinish(ctx, m, requeue)
	if m.lock != nil {
		m.lock.hold.MarkReleased()
	}
	return m.ackErr
}

// What a look at the marker says after a finish's reply was lost.
const (
	finishAgain   = iota // the marker is there: the finish did not apply
	finishApplied        // the marker is gone in its own session: we deleted it
	finishLost           // the look was answered in another session
)

// afterLostReply reads the look at the marker (there or not) taken after
// a finish transaction's reply was lost, given the session the look's
// reply came in (engine.Client.ConnSessionID after it) and the lock's.
// Only the finish deletes the marker while its session lives, so its
// absence says the finish applied only when the look was answered in
// that session: in a later one, the marker may have gone with the
// expired session, the lock with it, and the item to another consumer
// (the chaos suite saw an ack report success so, 5 ms into a new session
// after a SIGSTOP past the session timeout, for an item another consumer
// had taken and acknowledged). The finish may have applied too, but
// which cannot be told: the lock is lost.
func afterLostReply(markerThere bool, lookSession, lockSession int64) int {
	switch {
	case lookSession != lockSession:
		return finishLost
	case markerThere:
		return finishAgain
	}
	return finishApplied
}

// failed returns the index of the op a failed multi failed on, -1 when
// none is marked.
func failed(res []zk.MultiResponse) int {
	for i, r := range res {
		if r.Error != nil {
			return i
		}
	}
	return -1
}
