package mutex

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// WithLocalHandoff lets the goroutines (owners) of this process that share
// one Mutex queue in memory behind the process's single lock node and pass
// the lock to each other in memory, without a ZooKeeper round trip, up to
// bound times in a row; then the node is deleted and the next local waiter
// queues a new node at the back of the ZooKeeper queue, so waiters in
// other processes wait for at most bound local hand-offs. Off by default.
//
// What stays as without it: the wire layout (one ordinary lock node per
// process hold), reentrancy per owner, Done (each lease closes on
// SUSPENDED/LOST of the session that owns the node) and Fenced (the
// process's node must still exist; a released lease's Fenced is refused
// locally). What changes: the local holders of one process hold share its
// node, so the czxid of their Token is the same; its Local part, the
// local hand-off count, makes the token strictly increase across every
// successive holder. Fairness is per process: the local queue is FIFO,
// but the process keeps the lock for up to bound hand-offs while others
// wait.
func WithLocalHandoff(bound int) Option {
	return func(o *options) error {
		if bound < 1 {
			return fmt.Errorf("%w: local hand-off bound %d", recipes.ErrInvalidArgument, bound)
		}
		o.local = bound
		return nil
	}
}

// localState is a Mutex's in-memory queue (WithLocalHandoff); m.mu.
type localState struct {
	proc      *procHold      // the process's current hold, nil when none
	acquiring bool           // an owner is queueing the process's node
	queue     []*localWaiter // FIFO
}

// procHold is one lock node held by the process, passed between local
// owners.
type procHold struct {
	handoffs int    // local hand-offs so far
	seq      uint64 // last local holder's sequence
	cur      *Lease // the lease that holds the node now
}

// localWaiter is an owner waiting in memory.
type localWaiter struct {
	owner any
	ch    chan localTurn // buffered: one turn
}

// localTurn is what a local waiter is told: the lease handed to it, or
// that it must queue the process's node itself.
type localTurn struct {
	lease   *Lease
	acquire bool
}

// acquireLocal takes the lock through the process's hold when one exists
// or is being made (waiting in memory), else queues the process's node.
func (m *Mutex) acquireLocal(ctx context.Context, owner any, wait bool) (*Lease, error) {
	m.mu.Lock()
	ls := &m.local
	if ls.proc == nil && !ls.acquiring {
		ls.acquiring = true
		m.mu.Unlock()
		return m.acquireForProcess(ctx, owner, wait)
	}
	if !wait {
		m.mu.Unlock()
		return nil, m.errorf("%w: held in this process", recipes.ErrNotAcquired)
	}
	w := &localWaiter{owner: owner, ch: make(chan localTurn, 1)}
	ls.queue = append(ls.queue, w)
	m.mu.Unlock()
	var turn localTurn
	select {
	case turn = <-w.ch:
	case <-ctx.Done():
		m.mu.Lock()
		if m.dropWaiterLocked(w) { // not handed anything: just leave
			m.mu.Unlock()
			return nil, m.errorf("waiting in this process: %w", ctx.Err())
		}
		m.mu.Unlock()
		turn = <-w.ch // handed a turn as we gave up: pass it on
		if turn.lease != nil {
			_ = turn.lease.Release(context.WithoutCancel(ctx))
		} else {
			m.mu.Lock()
			ls.acquiring = false
			m.nextAcquirerLocked()
			m.mu.Unlock()
		}
		return nil, m.errorf("waiting in this process: %w", ctx.Err())
	}
	if turn.lease != nil {
		return turn.lease, nil
	}
	return m.acquireForProcess(ctx, owner, wait) // m.local.acquiring was set for us
}

// acquireForProcess queues the process's node for owner; m.local.acquiring
// is set on entry and cleared here.
func (m *Mutex) acquireForProcess(ctx context.Context, owner any, wait bool) (*Lease, error) {
	l, err := m.acquireNode(ctx, owner, wait)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.local.acquiring = false
	if err != nil {
		m.nextAcquirerLocked() // the next local waiter tries
		return nil, err
	}
	p := &procHold{cur: l}
	m.local.proc = p
	l.proc = p
	m.holds[owner] = l
	m.armRevocation(l.hold.Path(), func() *Lease {
		if m.local.proc == p {
			return p.cur
		}
		return nil
	})
	return l, nil
}

// dropWaiterLocked removes w from the local queue; false when it was no
// longer queued (a turn was handed to it).
func (m *Mutex) dropWaiterLocked(w *localWaiter) bool {
	q := m.local.queue
	for i, x := range q {
		if x == w {
			m.local.queue = append(q[:i:i], q[i+1:]...)
			return true
		}
	}
	return false
}

// nextAcquirerLocked tells the first local waiter, if any, to queue the
// process's node itself, and reserves that for it. m.mu is held.
func (m *Mutex) nextAcquirerLocked() {
	ls := &m.local
	if ls.proc != nil || ls.acquiring || len(ls.queue) == 0 {
		return
	}
	w := ls.queue[0]
	ls.queue = ls.queue[1:]
	ls.acquiring = true
	w.ch <- localTurn{acquire: true}
}

// handOnLocked passes l's process hold to the next local waiter, when
// there is one, the bound allows and the hold is intact, and reports
// whether it did; otherwise the caller deletes the node, and the next
// local waiter is told to queue a new one. m.mu is held.
func (m *Mutex) handOnLocked(l *Lease, lost bool) bool {
	ls := &m.local
	p := l.proc
	if ls.proc != p {
		return false
	}
	if len(ls.queue) == 0 || lost || p.handoffs >= m.opts.local || notify.IsClosed(l.sig.Done) {
		ls.proc = nil
		m.nextAcquirerLocked()
		return false
	}
	w := ls.queue[0]
	ls.queue = ls.queue[1:]
	p.handoffs++
	p.seq++
	nl := &Lease{hold: engine.NewHold(m.e, l.hold.Path(), l.sig).Named(m.what()), m: m, ct: l.ct, sig: l.sig,
		owner: w.owner, count: 1, proc: p, seq: p.seq}
	m.holds[w.owner] = nl
	p.cur = nl
	w.ch <- localTurn{lease: nl}
	return true
}
