package election

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/lifecycle"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
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

// Option configures a Latch or a Selector: each With… says which
// constructor takes it, and the other refuses it
// (recipes.ErrInvalidArgument).
type Option func(*options) error

type options struct {
	recipe      string // "Latch" or "Selector", set by the constructor
	closeMode   CloseMode
	autoRequeue bool
}

// only refuses an option given to a recipe other than recipe.
func only(o *options, option, recipe string) error {
	if o.recipe != recipe {
		return fmt.Errorf("%w: %s is an option of %s, not of %s", recipes.ErrInvalidArgument, option, recipe, o.recipe)
	}
	return nil
}

// WithCloseMode sets a Latch's close mode.
func WithCloseMode(m CloseMode) Option {
	return func(o *options) error {
		if err := only(o, "WithCloseMode", "Latch"); err != nil {
			return err
		}
		if m != CloseSilent && m != CloseNotifyLeader {
			return fmt.Errorf("%w: close mode %d", recipes.ErrInvalidArgument, m)
		}
		o.closeMode = m
		return nil
	}
}

// Latch is Curator's LeaderLatch: a participant that, once started, stays
// in the election at its path until it resigns or closes, leading whenever
// its node is first and belongs to its current session. Leadership comes
// in terms (see Term); listeners hear of each start and end, in order.
//
// On SUSPENDED (Standard policy) or LOST the term ends. When the
// connection comes back the latch checks again: with the same session and
// its node still there it keeps its place (and leads again if first);
// when the node is gone (deleted by someone, with the latch path, or with
// a lost session) it makes a new one at the back of the queue.
//
// Resign steps down and leaves the election but keeps the latch usable
// (etcd's Resign): a later Start joins again, at the back of the queue.
// Close is final.
type Latch struct {
	c    *recipes.Client
	path string
	full string
	id   string
	opts options

	mu        sync.Mutex
	life      lifecycle.State // started from Start to Resign; changed under mu, with run
	run       *latchRun       // the participation since Start; nil when not started
	leaving   <-chan struct{} // the done of the participation Resign ended, which Start waits for
	term      *Term
	changed   chan struct{} // closed when a term starts or ends, or the latch resigns or closes, then replaced
	node      string
	listeners notify.Listeners[bool]
}

// latchRun is one participation in the election, from Start to Resign or
// Close.
type latchRun struct {
	cancel context.CancelFunc
	nodeCh chan struct{} // closed when its first node is made
	done   chan struct{} // closed when it has ended: its term over, its node deleted
	err    error         // why it ended, set before done closes
	silent bool          // closing silently: no more notifications
}

// NewLatch returns a latch at path for the participant id (its node's
// data). It does not touch ZooKeeper until Start.
func NewLatch(c *recipes.Client, path, id string, opts ...Option) (*Latch, error) {
	full, err := recipeargs.Path(c, path, "a latch path")
	if err != nil {
		return nil, err
	}
	if id == "" {
		return nil, zkerr.Namedf("leader latch "+path, "%w: empty participant id (the id is what Participants and Leader report)", recipes.ErrInvalidArgument)
	}
	o := options{recipe: "Latch"}
	if err := recipeargs.Options(&o, opts); err != nil {
		return nil, err
	}
	return &Latch{c: c, path: path, full: full, id: id, opts: o, changed: make(chan struct{})}, nil
}

// ID returns the participant id.
func (l *Latch) ID() string { return l.id }

// Path returns the latch path as given to NewLatch.
func (l *Latch) Path() string { return l.path }

var latchDriver = &contend.Driver{Names: []string{LatchName}, Recipe: "latch"}

// Start joins the election: it creates the latch node (waiting for that
// within ctx) and keeps taking part in the background until Resign or
// Close. After Resign it joins again with a new node, at the back of the
// queue (first waiting, within ctx, for the resigned participation to
// end if it has not yet). After Close it returns recipes.ErrClosed.
func (l *Latch) Start(ctx context.Context) error {
	if l == nil || l.c == nil {
		return zkerr.NotMade("Latch", "NewLatch")
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	if err := (*engine.Client)(l.c).Check(); err != nil {
		return zkerr.Named("leader latch "+l.path, err)
	}
	l.mu.Lock()
	for {
		if l.life.Closed() || l.life.Started() {
			l.mu.Unlock()
			return l.life.Start("leader latch " + l.path) // the error it would be
		}
		leaving := l.leaving
		if leaving == nil || notify.IsClosed(leaving) {
			break
		}
		l.mu.Unlock()
		select {
		case <-leaving:
		case <-ctx.Done():
			return zkerr.Namedf("leader latch "+l.path, "waiting for the resigned participation to end: %w", ctx.Err())
		}
		l.mu.Lock()
	}
	if err := l.life.Start("leader latch " + l.path); err != nil {
		l.mu.Unlock()
		return err
	}
	pctx, cancel := context.WithCancel(context.Background())
	r := &latchRun{cancel: cancel, nodeCh: make(chan struct{}), done: make(chan struct{})}
	l.run, l.leaving = r, nil
	l.mu.Unlock()

	go l.participate(pctx, r)
	select {
	case <-r.nodeCh:
		return nil
	case <-r.done:
		err := l.stopped(r)
		l.unstart(r)
		return err
	case <-ctx.Done():
		// A failed Start leaves nothing behind: the participation ends
		// (its requests honour their ctx, so at once), its node, if made,
		// is deleted, and the latch may be started again.
		cancel()
		<-r.done
		l.unstart(r)
		return zkerr.Namedf("leader latch "+l.path, "waiting for the latch node: %w", ctx.Err())
	}
}

// participate runs r until its ctx ends (Resign, Close, a failed Start)
// or the client closes; when it returns, r's term is over and its node
// deleted (or handed to the engine's guaranteed delete).
func (l *Latch) participate(ctx context.Context, r *latchRun) {
	defer close(r.done)
	err := (*engine.Client)(l.c).Participate(ctx, engine.Participation{
		Parent:    l.full,
		LockName:  LatchName,
		Data:      []byte(l.id),
		Driver:    latchDriver,
		Options:   []engine.EnterOption{engine.EnterVerifyOwner()},
		OnNode:    func(p string) { l.onNode(r, p) },
		OnTerm:    func(h *engine.Hold) { l.onTerm(r, h) },
		OnTermEnd: func(*engine.Hold) { l.onTermEnd(r) },
	})
	if err != nil && ctx.Err() == nil && !errors.Is(err, recipes.ErrClosed) {
		l.c.Logger().Error("zkrecipes: leader latch stopped", "path", l.path, "err", err)
	}
	l.mu.Lock()
	r.err = err
	l.mu.Unlock()
}

// unstart returns the latch to its state before Start, once r, its
// participation, has ended.
func (l *Latch) unstart(r *latchRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.run == r {
		l.run, l.node = nil, ""
		l.life.Abort()
	}
}

// stopped says why r ended: recipes.ErrClosed after Close, recipes.ErrNotStarted after
// Resign, else its error, else recipes.ErrClosed.
func (l *Latch) stopped(r *latchRun) error {
	l.mu.Lock()
	closed, current, err := l.life.Closed(), l.run == r, r.err
	l.mu.Unlock()
	switch {
	case closed:
		return zkerr.Namedf("leader latch "+l.path, "%w", recipes.ErrClosed)
	case !current:
		return zkerr.Namedf("leader latch "+l.path, "resigned: %w", recipes.ErrNotStarted)
	case err != nil && !errors.Is(err, context.Canceled):
		return zkerr.Namedf("leader latch "+l.path, "%w", err)
	}
	return zkerr.Namedf("leader latch "+l.path, "%w", recipes.ErrClosed)
}

// broadcast wakes every Await; l.mu is held.
func (l *Latch) broadcast() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *Latch) onNode(r *latchRun, p string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.run == r {
		l.node = p
	}
	select {
	case <-r.nodeCh:
	default:
		close(r.nodeCh)
	}
}

func (l *Latch) onTerm(r *latchRun, h *engine.Hold) {
	l.mu.Lock()
	t := newTerm(nodeHold{h.Named("leader latch " + l.path)}, l.id, nil)
	t.end = func(ctx context.Context) error { return l.releaseTerm(ctx, t) }
	l.term = t
	l.broadcast()
	if !r.silent {
		l.listeners.Post(true)
	}
	l.mu.Unlock()
}

func (l *Latch) onTermEnd(r *latchRun) {
	l.mu.Lock()
	l.term = nil
	l.broadcast()
	if !r.silent {
		l.listeners.Post(false)
	}
	l.mu.Unlock()
}

// HasLeadership reports whether the latch leads now: a term is open and
// its Done not closed.
func (l *Latch) HasLeadership() bool {
	t := l.Term()
	return t != nil && !notify.IsClosed(t.Done())
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
// a deadline), recipes.ErrNotStarted before Start and after Resign, and recipes.ErrClosed
// after Close.
func (l *Latch) Await(ctx context.Context) (*Term, error) {
	if l == nil || l.c == nil {
		return nil, zkerr.NotMade("Latch", "NewLatch")
	}
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	for {
		l.mu.Lock()
		closed, r, t, ch := l.life.Closed(), l.run, l.term, l.changed
		l.mu.Unlock()
		switch {
		case closed:
			return nil, zkerr.Namedf("leader latch "+l.path, "%w", recipes.ErrClosed)
		case r == nil:
			return nil, zkerr.Named("leader latch "+l.path, recipes.ErrNotStarted)
		case t != nil && !notify.IsClosed(t.Done()):
			return t, nil
		}
		select {
		case <-ch: // a term started or ended, or the latch resigned or closed: look again
		case <-r.done:
			return nil, l.stopped(r)
		case <-ctx.Done():
			return nil, zkerr.Namedf("leader latch "+l.path, "%w", ctx.Err())
		}
	}
}

// Listen calls fn with the latch's current leadership first, when it is
// started (false while it does not lead), then fn(true) when the latch starts leading and fn(false) when it stops,
// in order, on a goroutine of its own (Curator's LeaderLatchListener
// isLeader/notLeader; the listener rule of package recipes). The returned
// function removes the listener.
func (l *Latch) Listen(fn func(isLeader bool)) (remove func()) {
	if l == nil {
		return func() {}
	}
	l.mu.Lock() // leadership is posted under l.mu: nothing comes between
	defer l.mu.Unlock()
	if l.run == nil { // not started: no current state yet
		return l.listeners.Listen(fn)
	}
	return l.listeners.ListenFirst(fn, l.term != nil && !notify.IsClosed(l.term.Done()))
}

// Subscribe is Listen for a channel (the current leadership first, when
// started, then each change), queued without bound while the reader is
// slow. The returned function, or Close, closes the channel.
func (l *Latch) Subscribe() (<-chan bool, func()) {
	if l == nil {
		ch := make(chan bool)
		close(ch)
		return ch, func() {}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.run == nil {
		return l.listeners.Subscribe()
	}
	return l.listeners.SubscribeFirst(l.term != nil && !notify.IsClosed(l.term.Done()))
}

// Participants returns the latch's participants in queue order; the first
// leads.
func (l *Latch) Participants(ctx context.Context) ([]recipes.Participant, error) {
	if l == nil || l.c == nil {
		return nil, zkerr.NotMade("Latch", "NewLatch")
	}
	return Participants(ctx, l.c, l.path)
}

// Leader returns the current leader's id and node (Curator's getLeader);
// recipes.ErrNoLeader when there is none.
func (l *Latch) Leader(ctx context.Context) (recipes.Participant, error) {
	ps, err := l.Participants(ctx)
	if err != nil {
		return recipes.Participant{}, err
	}
	if len(ps) == 0 {
		return recipes.Participant{}, zkerr.Namedf("leader latch "+l.path, "%w", recipes.ErrNoLeader)
	}
	return ps[0], nil
}

// Node returns the path of the latch's current node, inside the client's
// namespace ("" before the first, and after Resign).
func (l *Latch) Node() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.node == "" {
		return ""
	}
	return (*engine.Client)(l.c).Namespace().Strip(l.node)
}

// releaseTerm is Term.Release for the latch's terms: Resign, while t is
// the open term.
func (l *Latch) releaseTerm(ctx context.Context, t *Term) error {
	l.mu.Lock()
	cur := l.term
	l.mu.Unlock()
	if cur != t || notify.IsClosed(t.Done()) {
		return zkerr.Namedf("leader latch "+l.path, "%w: the term is over", recipes.ErrNotHeld)
	}
	return l.Resign(ctx)
}

// Resign steps down and leaves the election, keeping the latch usable:
// the term ends (its Done closes), the listeners hear that leadership
// ended, and the node is deleted with the engine's guaranteed delete (so
// another participant leads at once), waiting for that within ctx. A later
// Start joins again with a new node at the back of the queue. Resign
// returns recipes.ErrNotStarted when the latch is not started and recipes.ErrClosed after
// Close. If ctx ends first it returns an error wrapping ctx.Err() and the
// leaving completes in the background (a later Start waits for it).
func (l *Latch) Resign(ctx context.Context) error {
	if l == nil || l.c == nil {
		return zkerr.NotMade("Latch", "NewLatch")
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	l.mu.Lock()
	r := l.run
	if !l.life.Abort() { // started → latent: a later Start joins again
		l.mu.Unlock()
		return l.life.Running("leader latch "+l.path, "")
	}
	l.run, l.node, l.leaving = nil, "", r.done
	l.broadcast()
	l.mu.Unlock()
	r.cancel()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return zkerr.Namedf("leader latch "+l.path, "resign: %w", ctx.Err())
	}
}

// Close leaves the election for good: the term ends, the node is deleted,
// the background work stops (waiting for it within ctx), and, in
// CloseNotifyLeader mode, the listeners hear that leadership ended. A
// closed latch cannot be started again (see Resign to step down and stay
// usable). It is safe to call more than once.
func (l *Latch) Close(ctx context.Context) error {
	if l == nil || l.c == nil {
		return zkerr.NotMade("Latch", "NewLatch")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	l.mu.Lock()
	if first, _ := l.life.Close(); !first {
		l.mu.Unlock()
		return nil
	}
	r, leaving := l.run, l.leaving
	if r != nil {
		r.silent = l.opts.closeMode == CloseSilent
	}
	l.broadcast()
	l.mu.Unlock()
	if r != nil {
		r.cancel()
	}
	for _, done := range []<-chan struct{}{runDone(r), leaving} {
		if done == nil {
			continue
		}
		select {
		case <-done:
		case <-ctx.Done():
			return zkerr.Namedf("leader latch "+l.path, "close: %w", ctx.Err())
		}
	}
	l.listeners.Close()
	return nil
}

// runDone returns r's done, nil for no run.
func runDone(r *latchRun) <-chan struct{} {
	if r == nil {
		return nil
	}
	return r.done
}
