package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// FollowEventKind says what a FollowEvent reports.
type FollowEventKind uint8

const (
	// FollowWatch: a watch one of the follower's reads left fired (Key,
	// Path, Type, Watch); the read runs again.
	FollowWatch FollowEventKind = iota + 1
	// FollowInitialised: every read added so far has read once. Reported
	// once per Run, the first time it holds.
	FollowInitialised
	// FollowState: the connection state (State), as the Client publishes
	// it: the current one when Run starts, then every change (SUSPENDED,
	// LOST, RECONNECTED, READ_ONLY). After a RECONNECTED every read runs
	// again; when it brings a new session, whose server has none of the
	// old watches, they are forgotten first and set anew.
	FollowState
)

// String names the kind.
func (k FollowEventKind) String() string {
	switch k {
	case FollowWatch:
		return "watch"
	case FollowInitialised:
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
	Kind  FollowEventKind
	Key   string       // FollowWatch: the key of the read that left the watch
	Path  string       // FollowWatch: the server path of the watched node
	Type  zk.EventType // FollowWatch: NodeCreated, NodeDeleted, NodeDataChanged, NodeChildrenChanged, or NotWatching (dropped with the session)
	Watch WatchKind    // FollowWatch: which of the read's watches on Path fired
	State State        // FollowState: the state entered
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

// ReadFunc is one read of a Follower: it reads what it follows, leaving
// its watches through w (ReadData, ReadChildren, ReadExists with w), and
// acts on what it saw. It runs on the Follower's goroutine: at once, again
// each time one of its watches fires, after every reconnection, and, after
// it failed, under the client's retry policy.
type ReadFunc func(ctx context.Context, w *Watches) error

// Watches are the watches one read of a Follower left that have not fired
// yet. The watched reads (Client.ReadData, ReadChildren, ReadExists) leave
// a watch only where none of theirs is still armed, so that each node
// carries one watch of each kind however often it is read, and tell the
// Follower which read to run again when it fires.
type Watches struct {
	c     *Client
	f     *Follower
	key   string
	armed map[watchID]*watchReg
	fired []FollowEvent
	again time.Duration // RunAfter's, for the run in progress
}

// Armed reports whether the read's watch of kind on path is still armed.
func (w *Watches) Armed(kind WatchKind, path string) bool {
	if w == nil {
		return false
	}
	r := w.armed[watchID{path, kind}]
	if r == nil {
		return false
	}
	if r.dead.Load() {
		delete(w.armed, r.id)
		return false
	}
	return true
}

// Len returns how many of the read's watches are armed.
func (w *Watches) Len() int {
	n := 0
	for id := range w.armed {
		if w.Armed(id.kind, id.path) {
			n++
		}
	}
	return n
}

// Fired returns the events of the read's watches that fired since its
// last successful run (empty on the first run, and when the read runs for
// a reconnection or a retry): which node changed, and how.
func (w *Watches) Fired() []FollowEvent { return w.fired }

// RunAfter asks, from a read, that the read run again d after this run,
// and not before: a watch that fires meanwhile makes it run then, not at
// once. A read that must not run too often (a list of a busy parent, say)
// returns at once with RunAfter instead of waiting on the Follower's
// goroutine, which every read shares.
func (w *Watches) RunAfter(d time.Duration) { w.again = d }

// Key returns the key the read was added under.
func (w *Watches) Key() string { return w.key }

// watch makes a request of c's that leaves a watch of kind on path (req
// returns the watch's channel), registered with c's hub before it is sent
// (its event cannot come first) and dropped again when the request fails.
// A Watches of no Follower (the zero value) keeps the same account of what
// is armed, for a caller that reads with watches of its own.
func (w *Watches) watch(c *Client, kind WatchKind, path string, req func() (<-chan zk.Event, error)) error {
	if w.c == nil {
		w.c = c
	}
	id := watchID{path, kind}
	r := w.c.hub.register(w.f, w.key, id)
	ch, err := req()
	if err != nil {
		w.c.hub.unregister(r)
		return err
	}
	w.c.backstop(r, ch)
	if old := w.armed[id]; old != nil && old != r {
		w.c.hub.unregister(old)
	}
	if w.armed == nil {
		w.armed = map[watchID]*watchReg{}
	}
	w.armed[id] = r
	return nil
}

// forget drops every watch of the read: a new session has none of them,
// or the read is gone.
func (w *Watches) forget() {
	for id, r := range w.armed {
		w.c.hub.unregister(r)
		delete(w.armed, id)
	}
}

// NodeView is what a read of a node's data sees.
type NodeView struct {
	Exists bool
	Data   []byte
	Stat   *zk.Stat // nil when the node does not exist
}

// ReadData is the watched read of a node's data, the one every recipe
// uses. With w nil it reads plainly. With w it reads with a getData
// watch, unless a data or exists watch of w's is still armed there (then
// plainly: that one fires on the next change). When the node does not
// exist getData leaves no watch, and with creation set ReadData leaves an
// exists watch instead, for the node's creation: no watch is ever left on
// a missing node but that one (none at all without creation, for a node
// that is gone for good, such as a sequential one).
func (c *Client) ReadData(ctx context.Context, path string, w *Watches, creation bool) (NodeView, error) {
	for {
		var (
			data []byte
			st   *zk.Stat
			err  error
		)
		if w == nil || w.Armed(WatchData, path) || w.Armed(WatchExists, path) {
			data, st, err = c.Get(ctx, path)
		} else {
			err = w.watch(c, WatchData, path, func() (ch <-chan zk.Event, err error) {
				data, st, ch, err = c.GetW(ctx, path)
				return ch, err
			})
		}
		switch {
		case err == nil:
			return NodeView{Exists: true, Data: data, Stat: st}, nil
		case !errors.Is(err, zk.ErrNoNode):
			return NodeView{}, err
		case w == nil || !creation || w.Armed(WatchExists, path):
			return NodeView{}, nil
		}
		ok, _, err := c.ReadExists(ctx, path, w)
		if err != nil || !ok {
			return NodeView{}, err
		}
		// created meanwhile: the exists watch is armed, read it plainly
	}
}

// ChildrenView is what a read of a node's children sees.
type ChildrenView struct {
	Exists   bool
	Children []string
	Stat     *zk.Stat // the parent's; nil when it does not exist
}

// ReadChildren is the watched read of a node's children: with w it lists
// them with a children watch unless one of w's is still armed there; when
// the node does not exist, with creation set, it leaves an exists watch
// for its creation instead (a children watch is never left on a missing
// node). With w nil it lists plainly.
func (c *Client) ReadChildren(ctx context.Context, path string, w *Watches, creation bool) (ChildrenView, error) {
	for {
		var (
			kids []string
			st   *zk.Stat
			err  error
		)
		if w == nil || w.Armed(WatchChildren, path) {
			kids, st, err = c.Children(ctx, path)
		} else {
			err = w.watch(c, WatchChildren, path, func() (ch <-chan zk.Event, err error) {
				kids, st, ch, err = c.ChildrenW(ctx, path)
				return ch, err
			})
		}
		switch {
		case err == nil:
			return ChildrenView{Exists: true, Children: kids, Stat: st}, nil
		case !errors.Is(err, zk.ErrNoNode):
			return ChildrenView{}, err
		case w == nil || !creation || w.Armed(WatchExists, path):
			return ChildrenView{}, nil
		}
		ok, _, err := c.ReadExists(ctx, path, w)
		if err != nil || !ok {
			return ChildrenView{}, err
		}
		// created meanwhile: list it with a children watch
	}
}

// ReadExists reports whether path exists, leaving an exists watch of w's
// there unless one is still armed (plainly with w nil).
func (c *Client) ReadExists(ctx context.Context, path string, w *Watches) (bool, *zk.Stat, error) {
	if w == nil || w.Armed(WatchExists, path) {
		return c.Exists(ctx, path)
	}
	var (
		ok bool
		st *zk.Stat
	)
	err := w.watch(c, WatchExists, path, func() (ch <-chan zk.Event, err error) {
		ok, st, ch, err = c.ExistsW(ctx, path)
		return ch, err
	})
	return ok, st, err
}

// followRead is one read of a Follower; Run's goroutine owns it.
type followRead struct {
	key     string
	read    ReadFunc
	w       Watches
	dirty   bool // due to run (queued in Follower.dirty)
	ok      bool // has run well once (for FollowInitialised)
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
// gives up), logged at warn.
//
// Reads are added and removed from any goroutine, before Run or during it
// (a read may add others: a tree follower adds a read per child it finds).
type Follower struct {
	c       *Client
	what    string
	onEvent func(FollowEvent)
	q       *queue[followItem]
	queued  atomic.Int64 // additions pushed and not yet taken by Run

	// Run's goroutine only.
	reads       map[string]*followRead
	dirty       []*followRead
	waiting     []*followRead // failed: due again at their .at
	pending     int           // reads not yet run well once
	initialised bool
	watched     bool // a read left watches in this session (they go with it)
}

// NewFollower returns a Follower that reports to onEvent (nil: to
// nobody), on Run's goroutine: the current connection state first, as
// every state listener is told, then every state change, every watch that
// fires (before its read runs again), and FollowInitialised once.
// what names it in logs.
func (c *Client) NewFollower(what string, onEvent func(FollowEvent)) *Follower {
	return &Follower{c: c, what: what, onEvent: onEvent, q: newQueue[followItem](), reads: map[string]*followRead{}}
}

// Add adds a read under key (replacing the read under that key, if any);
// it runs at once once Run runs.
func (f *Follower) Add(key string, read ReadFunc) {
	f.queued.Add(1)
	if !f.q.push(followItem{add: &followRead{key: key, read: read}}) {
		f.queued.Add(-1)
	}
}

// Remove removes the read under key: it does not run again once Run has
// taken the removal (a run in progress completes), and its watches are
// forgotten (the server's fire later to nobody).
func (f *Follower) Remove(key string) {
	f.q.push(followItem{remove: true, key: key})
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

// AddChildren follows path's children under key: fn gets the first view,
// then every view that differs from the one before. A missing node is
// watched for its creation.
func (f *Follower) AddChildren(key, path string, fn func(ChildrenView)) {
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
	if err := c.check(); err != nil {
		return err
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	c.mu.Lock()
	state, sid := c.state, c.sessionID
	c.hub.join(f)
	c.mu.Unlock()
	defer func() {
		c.hub.leave(f)
		f.q.close()
		for _, rd := range f.reads {
			rd.w.forget()
		}
	}()
	if state != StateLatent {
		f.report(FollowEvent{Kind: FollowState, State: state}) // the current state first
	}
	connected := state.IsConnected()
	var pause *time.Timer
	defer func() {
		if pause != nil {
			pause.Stop()
		}
	}()
	for {
		items, ok := f.q.poll()
		if !ok {
			return nil
		}
		for _, it := range items {
			switch {
			case it.add != nil:
				f.queued.Add(-1)
				f.added(it.add)
			case it.remove:
				f.removed(it.key)
			case it.ev.Kind == FollowWatch:
				f.fired(it)
			case it.ev.Kind == FollowState:
				connected = it.ev.State.IsConnected()
				if connected && it.session != sid {
					f.newSession(sid != 0)
					sid = it.session
				} else if connected {
					f.all() // reconnected: read again (see Follower)
				}
				f.report(it.ev)
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		now := time.Now()
		f.due(now)
		if connected {
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
			f.report(FollowEvent{Kind: FollowInitialised})
		}
		var paused <-chan time.Time
		if next, ok := f.nextRetry(); ok {
			if pause == nil {
				pause = time.NewTimer(time.Until(next))
			} else {
				pause.Reset(time.Until(next))
			}
			paused = pause.C
		}
		select {
		case <-f.q.wake:
		case <-paused:
		case <-ctx.Done():
			return nil
		case <-c.closeCh:
			return ErrClientClosed
		}
		if paused != nil && !pause.Stop() {
			select {
			case <-pause.C:
			default:
			}
		}
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

// runDirty runs every due read, in the order they became due; reads made
// due meanwhile (by a read that adds one) wait for the next round.
func (f *Follower) runDirty(ctx context.Context) error {
	batch := f.dirty
	f.dirty = nil
	for i, rd := range batch {
		rd.dirty = false
		if rd.removed || !rd.at.IsZero() {
			continue // gone, or pausing after a failure (in f.waiting)
		}
		rd.w.again = 0
		err := rd.read(ctx, &rd.w)
		switch {
		case ctx.Err() != nil:
			f.requeue(batch[i+1:])
			return nil
		case err == nil:
			rd.w.fired = nil
			rd.retry.Reset()
			if len(rd.w.armed) > 0 {
				f.watched = true
			}
			if !rd.ok && !rd.removed {
				rd.ok = true
				f.pending--
			}
			if rd.w.again > 0 && !rd.removed {
				rd.at = time.Now().Add(rd.w.again)
				f.waiting = append(f.waiting, rd)
			}
		case errors.Is(err, ErrClosed):
			return err
		default:
			f.c.log.Warn("zkrecipes: reading failed; trying again", "what", f.what, "key", rd.key, "err", err)
			rd.at = time.Now().Add(rd.retry.Pace())
			f.waiting = append(f.waiting, rd)
		}
	}
	return nil
}

func (f *Follower) requeue(rds []*followRead) {
	for _, rd := range rds {
		rd.dirty = false
		f.mark(rd)
	}
}

// Follow is the one way a recipe keeps what it reads current: a Follower
// with the one read. It calls read at once, then again each time a watch
// the read left fires, after every reconnection, after a new session, and
// after a failed read, under the client's retry policy. It returns nil
// when ctx ends and ErrClosed when the client closes.
func (c *Client) Follow(ctx context.Context, what string, read ReadFunc) error {
	if err := c.check(); err != nil {
		return err
	}
	f := c.NewFollower(what, nil)
	f.Add(what, read)
	return f.Run(ctx)
}

// FollowNode keeps a node's data current: fn gets the first view, then
// every view that differs from the one before (created, deleted, data
// written), on Follow's goroutine. A missing node is watched for its
// creation. It returns as Follow does.
func (c *Client) FollowNode(ctx context.Context, path string, fn func(NodeView)) error {
	if err := c.check(); err != nil {
		return err
	}
	f := c.NewFollower(path, nil)
	f.AddNode(path, path, fn)
	return f.Run(ctx)
}

func nodeChanged(a, b NodeView) bool {
	if a.Exists != b.Exists {
		return true
	}
	return a.Exists && (a.Stat.Czxid != b.Stat.Czxid || a.Stat.Mzxid != b.Stat.Mzxid)
}

// FollowChildren keeps a node's children current: fn gets the first view,
// then every view that differs from the one before, on Follow's
// goroutine. A missing node is watched for its creation. It returns as
// Follow does.
func (c *Client) FollowChildren(ctx context.Context, path string, fn func(ChildrenView)) error {
	if err := c.check(); err != nil {
		return err
	}
	f := c.NewFollower(path, nil)
	f.AddChildren(path, path, fn)
	return f.Run(ctx)
}

func childrenChanged(a, b ChildrenView) bool {
	if a.Exists != b.Exists {
		return true
	}
	return a.Exists && (a.Stat.Czxid != b.Stat.Czxid || a.Stat.Pzxid != b.Stat.Pzxid || a.Stat.Cversion != b.Stat.Cversion)
}

// SharedFollower returns the client's own Follower, run on one goroutine
// of the client's from the first call until Close: for recipes that
// follow nodes for as long as something of theirs lives, with no
// lifecycle of their own to run a Follower in (a revocable lease). Its
// reads must not block: hand slow work to a goroutine.
func (c *Client) SharedFollower() (*Follower, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	c.sharedOnce.Do(func() {
		f := c.NewFollower("shared", nil)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return
		}
		c.shared = f
		c.wg.Add(1) // c.mu is held and the client is open
		go func() {
			defer c.wg.Done()
			_ = f.Run(context.Background()) // until Close
		}()
	})
	if c.shared == nil {
		return nil, ErrClientClosed
	}
	return c.shared, nil
}

// sharedFollower is the state behind SharedFollower.
type sharedFollower struct {
	sharedOnce sync.Once
	shared     *Follower
}

// Watching returns how many of the client's followers' watches are armed
// (registered and not yet fired), for tests.
func (c *Client) Watching() int { return c.hub.watching() }
