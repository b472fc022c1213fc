package election

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// CloseMode says whether Close tells the listeners that leadership ended
// (Curator's LeaderLatch.CloseMode).
type CloseMode int

const (
	// CloseSilent: Close does not call the listeners (the default).
	CloseSilent CloseMode = iota
	// CloseNotifyLeader: if the latch leads, Close tells the listeners it
	// no longer does.
	CloseNotifyLeader
)

// LatchOption configures a Latch.
type LatchOption func(*latchOptions) error

type latchOptions struct {
	closeMode CloseMode
}

// WithCloseMode sets the latch's close mode.
func WithCloseMode(m CloseMode) LatchOption {
	return func(o *latchOptions) error {
		if m != CloseSilent && m != CloseNotifyLeader {
			return fmt.Errorf("%w: close mode %d", recipes.ErrInvalidArgument, m)
		}
		o.closeMode = m
		return nil
	}
}

// Latch is Curator's LeaderLatch: a participant that, once started, stays
// in the election at its path until closed, leading whenever its node is
// first and belongs to its current session. Leadership comes in terms
// (see Term); listeners hear of each start and end, in order.
//
// On SUSPENDED (Standard policy) or LOST the term ends. When the
// connection comes back the latch checks again: with the same session and
// its node still there it keeps its place (and leads again if first);
// when the node is gone (deleted by someone, with the latch path, or with
// a lost session) it makes a new one at the back of the queue.
type Latch struct {
	c    *recipes.Client
	path string
	full string
	id   string
	opts latchOptions

	mu        sync.Mutex
	started   bool
	closed    bool
	term      *Term
	changed   chan struct{} // closed when a term starts or ends, then replaced
	node      string
	nodeCh    chan struct{} // closed when the first node is made
	cancel    context.CancelFunc
	done      chan struct{}
	listeners engine.Listeners[bool]
	silent    bool  // closing silently: no more notifications
	stopErr   error // why the participation stopped, set before done closes
}

// NewLatch returns a latch at path for the participant id (its node's
// data). It does not touch ZooKeeper until Start.
func NewLatch(c *recipes.Client, path, id string, opts ...LatchOption) (*Latch, error) {
	full, err := recipeargs.Path(c, path, "a latch path")
	if err != nil {
		return nil, err
	}
	var o latchOptions
	if err := recipeargs.Options(&o, opts); err != nil {
		return nil, err
	}
	return &Latch{c: c, path: path, full: full, id: id, opts: o,
		changed: make(chan struct{}), nodeCh: make(chan struct{}), done: make(chan struct{})}, nil
}

// ID returns the participant id.
func (l *Latch) ID() string { return l.id }

// Path returns the latch path as given to NewLatch.
func (l *Latch) Path() string { return l.path }

var latchDriver = &engine.Driver{Names: []string{LatchName}}

// Start joins the election: it creates the latch node (waiting for that
// within ctx) and keeps taking part in the background until Close.
func (l *Latch) Start(ctx context.Context) error {
	if l == nil || l.c == nil {
		return fmt.Errorf("%w: Latch not made by NewLatch", recipes.ErrInvalidArgument)
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	if err := engine.Of(l.c).Check(); err != nil {
		return err
	}
	l.mu.Lock()
	switch {
	case l.closed:
		l.mu.Unlock()
		return fmt.Errorf("leader latch %s: %w", l.path, ErrClosed)
	case l.started:
		l.mu.Unlock()
		return ErrAlreadyStarted
	}
	l.started = true
	pctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	done, nodeCh := l.done, l.nodeCh
	l.mu.Unlock()

	go func() {
		defer close(done)
		err := engine.Of(l.c).Participate(pctx, engine.Participation{
			Parent:    l.full,
			LockName:  LatchName,
			Data:      []byte(l.id),
			Driver:    latchDriver,
			Options:   []engine.EnterOption{engine.EnterVerifyOwner()},
			OnNode:    l.onNode,
			OnTerm:    l.onTerm,
			OnTermEnd: l.onTermEnd,
		})
		if err != nil && pctx.Err() == nil && !errors.Is(err, recipes.ErrClosed) {
			l.c.Logger().Error("zkrecipes: leader latch stopped", "path", l.path, "err", err)
		}
		l.mu.Lock()
		l.stopErr = err
		l.mu.Unlock()
	}()
	select {
	case <-nodeCh:
		return nil
	case <-done:
		err := l.stopped()
		l.unstart()
		return err
	case <-ctx.Done():
		// A failed Start leaves nothing behind: the participation ends
		// (its requests honour their ctx, so at once), its node, if made,
		// is deleted, and the latch may be started again.
		cancel()
		<-done
		l.unstart()
		return fmt.Errorf("leader latch %s: waiting for the latch node: %w", l.path, ctx.Err())
	}
}

// unstart returns the latch to its state before Start, once its
// participation has ended.
func (l *Latch) unstart() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.started, l.cancel, l.node, l.term, l.stopErr = false, nil, "", nil, nil
	l.nodeCh, l.done = make(chan struct{}), make(chan struct{})
}

// stopped says why the participation ended: its error, else ErrClosed.
func (l *Latch) stopped() error {
	l.mu.Lock()
	err := l.stopErr
	l.mu.Unlock()
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("leader latch %s: %w", l.path, err)
	}
	return fmt.Errorf("leader latch %s: %w", l.path, ErrClosed)
}

func (l *Latch) onNode(p string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.node = p
	select {
	case <-l.nodeCh:
	default:
		close(l.nodeCh)
	}
}

func (l *Latch) onTerm(h *engine.Hold) {
	l.mu.Lock()
	l.term = newTerm(nodeHold{h}, l.id)
	close(l.changed)
	l.changed = make(chan struct{})
	notify := !l.silent
	if notify {
		l.listeners.Post(true)
	}
	l.mu.Unlock()
}

func (l *Latch) onTermEnd(*engine.Hold) {
	l.mu.Lock()
	l.term = nil
	close(l.changed)
	l.changed = make(chan struct{})
	if !l.silent {
		l.listeners.Post(false)
	}
	l.mu.Unlock()
}

// HasLeadership reports whether the latch leads now: a term is open and
// its Done not closed.
func (l *Latch) HasLeadership() bool {
	t := l.Term()
	return t != nil && !engine.IsClosed(t.Done())
}

// Term returns the current term, or nil when the latch does not lead.
func (l *Latch) Term() *Term {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.term
}

// Await blocks until the latch leads and returns the term, or returns an
// error wrapping ctx.Err() when ctx ends first (a timed wait is a ctx with
// a deadline), ErrNotStarted before Start and ErrClosed after Close.
func (l *Latch) Await(ctx context.Context) (*Term, error) {
	if l == nil || l.c == nil {
		return nil, fmt.Errorf("%w: Latch not made by NewLatch", recipes.ErrInvalidArgument)
	}
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	for {
		l.mu.Lock()
		started, closed, t, ch, done := l.started, l.closed, l.term, l.changed, l.done
		l.mu.Unlock()
		switch {
		case closed:
			return nil, fmt.Errorf("leader latch %s: %w", l.path, ErrClosed)
		case !started:
			return nil, ErrNotStarted
		case t != nil && !engine.IsClosed(t.Done()):
			return t, nil
		}
		select {
		case <-ch: // a term started or ended: look again
		case <-done:
			return nil, l.stopped()
		case <-ctx.Done():
			return nil, fmt.Errorf("leader latch %s: %w", l.path, ctx.Err())
		}
	}
}

// Listen calls fn(true) when the latch starts leading and fn(false) when
// it stops, in order, on a goroutine of its own (Curator's
// LeaderLatchListener isLeader/notLeader). The returned function removes
// the listener.
func (l *Latch) Listen(fn func(isLeader bool)) (remove func()) { return l.listeners.Listen(fn) }

// Participants returns the latch's participants in queue order; the first
// leads.
func (l *Latch) Participants(ctx context.Context) ([]Participant, error) {
	if l == nil || l.c == nil {
		return nil, fmt.Errorf("%w: Latch not made by NewLatch", recipes.ErrInvalidArgument)
	}
	return Participants(ctx, l.c, l.path)
}

// Leader returns the current leader's id and node (Curator's getLeader);
// ErrNoLeader when there is none.
func (l *Latch) Leader(ctx context.Context) (Participant, error) {
	ps, err := l.Participants(ctx)
	if err != nil {
		return Participant{}, err
	}
	if len(ps) == 0 {
		return Participant{}, fmt.Errorf("leader latch %s: %w", l.path, ErrNoLeader)
	}
	return ps[0], nil
}

// Node returns the server path of the latch's current node ("" before
// the first).
func (l *Latch) Node() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.node
}

// Close leaves the election: the term ends, the node is deleted, the
// background work stops (waiting for it within ctx), and, in
// CloseNotifyLeader mode, the listeners hear that leadership ended. It is
// safe to call more than once.
func (l *Latch) Close(ctx context.Context) error {
	if l == nil || l.c == nil {
		return fmt.Errorf("%w: Latch not made by NewLatch", recipes.ErrInvalidArgument)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.silent = l.opts.closeMode == CloseSilent
	started, cancel, done := l.started, l.cancel, l.done
	l.mu.Unlock()
	if started {
		cancel()
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("leader latch %s: close: %w", l.path, ctx.Err())
		}
	}
	l.listeners.Close()
	return nil
}
