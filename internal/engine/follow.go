package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// followEventKind says what a FollowEvent reports.
type followEventKind uint8

const (
	// followWatch: a watch one of the follower's reads left fired (Key,
	// Path, Type, Watch); the read runs again.
	followWatch followEventKind = iota + 1
	// followInitialised: every read added so far has read once. Reported
	// once per Run, the first time it holds.
	followInitialised
	// FollowState: the connection state (State), as the Client publishes
	// it: the current one when Run starts, then every change (SUSPENDED,
	// LOST, RECONNECTED, READ_ONLY). After a RECONNECTED every read runs
	// again; when it brings a new session, whose server has none of the
	// old watches, they are forgotten first and set anew.
	FollowState
)

// String names the kind.
func (k followEventKind) String() string {
	switch k {
	case followWatch:
		return "watch"
	case followInitialised:
		return "initialised"
	case FollowState:
		return "state"
	}
	return "unknown"
}

// FollowEvent is one thing a Follower reports to its user (the onEvent of
// NewFollower), and, for a watch, to the read that left it (Watches.Fired).
// A watch's event names the node and what happened to it, so a follower of
// a tree knows which node to read again.
type FollowEvent struct {
	Kind  followEventKind
	Key   string        // followWatch: the key of the read that left the watch
	Path  string        // followWatch: the server path of the watched node
	Type  zk.EventType  // followWatch: NodeCreated, NodeDeleted, NodeDataChanged, NodeChildrenChanged, or NotWatching (dropped with the session)
	Watch watchKind     // followWatch: which of the read's watches on Path fired
	State zkstate.State // FollowState: the state entered
}

// followItem is what a Follower's one queue carries: an event (reg: the
// watch it fired; session: the session a state is about), or a read added
// or removed.
type followItem struct {
	ev      FollowEvent
	reg     *watchReg
	session int64
	add     *followRead
	remove  bool // the read under key is removed
	key     string
}

// followRead is one read of a Follower; Run's goroutine owns it.
type followRead struct {
	key     string
	read    readFunc
	w       Watches
	dirty   bool // due to run (queued in Follower.dirty)
	ok      bool // has run well once (for followInitialised)
	removed bool // Remove'd: never run again
	retry   Backoff
	at      time.Time // after a failure: not before
}

// A Follower keeps what many reads see current, on one goroutine (Run's)
// and one queue: every watch a read leaves, and every connection state
// change, arrives there, named by the read it is for, so that only the
// read whose watch fired runs again; a thousand nodes followed cost a
// thousand reads and no goroutine each. After a reconnection every read
// runs again (go-zookeeper re-arms the session's watches with the zxid
// it last saw, so nothing changed meanwhile is missed either way); after
// a new session, whose server has none of the old watches, every read
// runs again and leaves them anew: what changed while the session was gone
// is seen by that first read. A failed read runs again under the client's
// retry policy (its backoff starts afresh after each success, and after it
// gives up), logged at warn; a read the server refuses (NoAuth) runs
// again only at the next reconnection or session, logged at error.
//
// Reads are added and removed from any goroutine, before Run or during it
// (a read may add others: a tree follower adds a read per child it finds).
// The reads due together run one after the other, or, under Pipeline,
// many in flight at once.
type Follower struct {
	c       *Client
	what    string
	onEvent func(FollowEvent)
	q       *notify.Queue[followItem]
	queued  atomic.Int64 // additions pushed and not yet taken by Run

	// Run's goroutine only.
	reads       map[string]*followRead
	dirty       []*followRead
	waiting     []*followRead // failed: due again at their .at
	pending     int           // reads not yet run well once
	inFlight    int           // Pipeline's: due reads run at once (≤ 1: one after the other)
	initialised bool
	watched     bool // a read left watches in this session (they go with it)
}

// NewFollower returns a Follower that reports to onEvent (nil: to
// nobody), on Run's goroutine: the current connection state first, as
// every state listener is told, then every state change, every watch that
// fires (before its read runs again), and followInitialised once.
// what names it in logs.
func (c *Client) NewFollower(what string, onEvent func(FollowEvent)) *Follower {
	return &Follower{c: c, what: what, onEvent: onEvent, q: notify.NewQueue[followItem](), reads: map[string]*followRead{}}
}

// Add adds a read under key (replacing the read under that key, if any);
// it runs at once once Run runs.
func (f *Follower) Add(key string, read readFunc) {
	f.queued.Add(1)
	if !f.q.Push(followItem{add: &followRead{key: key, read: read}}) {
		f.queued.Add(-1)
	}
}

// Remove removes the read under key: it does not run again once Run has
// taken the removal (a run in progress completes), and its watches are
// forgotten (the server's fire later to nobody).
func (f *Follower) Remove(key string) {
	f.q.Push(followItem{remove: true, key: key})
}

// AddNode follows path's data under key: fn gets the first view, then
// every view that differs from the one before (created, deleted, data
// written). A missing node is watched for its creation.
func (f *Follower) AddNode(key, path string, fn func(NodeView)) {
	var (
		last  NodeView
		first = true
	)
	f.Add(key, func(ctx context.Context, w *Watches) error {
		v, err := f.c.ReadData(ctx, path, w, true)
		if err != nil {
			return err
		}
		if first || nodeChanged(last, v) {
			first, last = false, v
			fn(v)
		}
		return nil
	})
}

// addChildren follows path's children under key: fn gets the first view,
// then every view that differs from the one before. A missing node is
// watched for its creation.
func (f *Follower) addChildren(key, path string, fn func(ChildrenView)) {
	var (
		last  ChildrenView
		first = true
	)
	f.Add(key, func(ctx context.Context, w *Watches) error {
		v, err := f.c.ReadChildren(ctx, path, w, true)
		if err != nil {
			return err
		}
		if first || childrenChanged(last, v) {
			first, last = false, v
			fn(v)
		}
		return nil
	})
}

// Run runs the reads until ctx ends (nil) or the client closes
// (ErrClosed), or a read returns an error wrapping ErrClosed. A Follower
// runs once.
func (f *Follower) Run(ctx context.Context) error {
	c := f.c
	if err := c.Check(); err != nil {
		return err
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	c.sm.mu.Lock()
	state, sid := c.sm.state, c.sm.sessionID
	c.hub.join(f)
	c.sm.mu.Unlock()
	defer func() {
		c.hub.leave(f)
		f.q.Close()
		for _, rd := range f.reads {
			rd.w.forget()
		}
	}()
	if state != zkstate.StateLatent {
		f.report(FollowEvent{Kind: FollowState, State: state}) // the current state first
	}
	r := &followRun{f: f, connected: state.IsConnected(), sid: sid}
	defer r.stop()
	for {
		items, ok := f.q.Poll()
		if !ok {
			return nil
		}
		for _, it := range items {
			r.take(it)
		}
		if ctx.Err() != nil {
			return nil
		}
		now := time.Now()
		f.due(now)
		if r.connected {
			if err := f.runDirty(ctx); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
		}
		// Not while additions wait in the queue: a read may have added
		// others (a tree's children) that have not run yet.
		if !f.initialised && f.pending == 0 && len(f.reads) > 0 && f.queued.Load() == 0 {
			f.initialised = true
			f.report(FollowEvent{Kind: followInitialised})
		}
		if stop, err := r.wait(ctx); stop {
			return err
		}
	}
}

// followRun is the state of Run's loop.
type followRun struct {
	f         *Follower
	connected bool        // the last state taken is a connected one
	sid       int64       // the session the reads run in (a new one: read anew)
	pause     *time.Timer // the failed reads' pause (made on first use)
}

// take takes one item of the queue: a read added or removed, a watch
// fired, or a state (a reconnection or a new session reads again).
func (r *followRun) take(it followItem) {
	f := r.f
	switch {
	case it.add != nil:
		f.queued.Add(-1)
		f.added(it.add)
	case it.remove:
		f.removed(it.key)
	case it.ev.Kind == followWatch:
		f.fired(it)
	case it.ev.Kind == FollowState:
		r.connected = it.ev.State.IsConnected()
		if r.connected && it.session != r.sid {
			f.newSession(r.sid != 0)
			r.sid = it.session
		} else if r.connected {
			f.all() // reconnected: read again (see Follower)
		}
		f.report(it.ev)
	}
}

// wait waits for the next thing: an item in the queue, or the end of the
// pause of the first failed read due again. It stops the loop (stop) when
// ctx ends (nil) or the client closes (ErrClientClosed).
func (r *followRun) wait(ctx context.Context) (stop bool, _ error) {
	var paused <-chan time.Time
	if next, ok := r.f.nextRetry(); ok {
		if r.pause == nil {
			r.pause = time.NewTimer(time.Until(next))
		} else {
			r.pause.Reset(time.Until(next))
		}
		paused = r.pause.C
	}
	select {
	case <-r.f.q.Wake():
	case <-paused:
	case <-ctx.Done():
		return true, nil
	case <-r.f.c.closeCh:
		return true, zkerr.ErrClientClosed
	}
	if paused != nil && !r.pause.Stop() {
		select {
		case <-r.pause.C:
		default:
		}
	}
	return false, nil
}

// stop stops the pause's timer, if any.
func (r *followRun) stop() {
	if r.pause != nil {
		r.pause.Stop()
	}
}

func (f *Follower) report(ev FollowEvent) {
	if f.onEvent != nil {
		f.onEvent(ev)
	}
}

func (f *Follower) added(rd *followRead) {
	if old := f.reads[rd.key]; old != nil {
		f.removed(rd.key)
	}
	rd.w = Watches{c: f.c, f: f, key: rd.key}
	rd.retry = f.c.Backoff()
	f.reads[rd.key] = rd
	f.pending++
	f.mark(rd)
}

func (f *Follower) removed(key string) {
	rd := f.reads[key]
	if rd == nil {
		return
	}
	rd.removed = true
	rd.w.forget()
	if !rd.ok {
		f.pending--
	}
	delete(f.reads, key)
}

// fired takes a watch's event to its read, which runs again.
func (f *Follower) fired(it followItem) {
	rd := f.reads[it.ev.Key]
	if rd == nil || rd.w.armed[it.reg.id] != it.reg {
		return // a read removed, or a watch it forgot
	}
	delete(rd.w.armed, it.reg.id)
	rd.w.fired = append(rd.w.fired, it.ev)
	f.report(it.ev)
	f.mark(rd)
}

// newSession forgets every watch and reads everything again.
func (f *Follower) newSession(had bool) {
	for _, rd := range f.reads {
		rd.w.forget()
	}
	if had && f.watched {
		// What changed between the old session's watches and the next
		// reads was not seen as it happened; those reads see the result.
		f.c.log.Warn("zkrecipes: watches dropped with the session; reading again", "what", f.what)
	}
	f.watched = false
	f.all()
}

// all makes every read due at once, its backoff reset.
func (f *Follower) all() {
	for _, rd := range f.reads {
		rd.retry.Reset()
		rd.at = time.Time{}
		f.mark(rd)
	}
	f.waiting = f.waiting[:0]
}

func (f *Follower) mark(rd *followRead) {
	if !rd.dirty {
		rd.dirty = true
		f.dirty = append(f.dirty, rd)
	}
}

// due moves the failed reads whose pause is over back to the due ones.
func (f *Follower) due(now time.Time) {
	keep := f.waiting[:0]
	for _, rd := range f.waiting {
		switch {
		case rd.removed:
		case !rd.at.After(now):
			rd.at = time.Time{}
			f.mark(rd)
		default:
			keep = append(keep, rd)
		}
	}
	clear(f.waiting[len(keep):])
	f.waiting = keep
}

func (f *Follower) nextRetry() (time.Time, bool) {
	var next time.Time
	for _, rd := range f.waiting {
		if next.IsZero() || rd.at.Before(next) {
			next = rd.at
		}
	}
	return next, !next.IsZero()
}
