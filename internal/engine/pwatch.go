package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Persistent watches (ZooKeeper 3.6 and later).
//
// A persistent watch stays on its node after it fires; a recursive one
// covers the node's whole subtree and reports NodeCreated, NodeDeleted
// and NodeDataChanged with the path of the node that changed (never
// NodeChildrenChanged). go-zookeeper v1.0.4 cannot send addWatch (opcode
// 106) or removeWatches (18), so the Wire sends them itself (wirecall.go);
// their events are watch notifications like any other, which
// go-zookeeper hands to the client's event callback, where the client
// routes them to the watch's owner.
//
// The server keeps a watch only as long as the connection it came on:
// after every new connection (the same session or a new one) the Wire
// adds every registered watch again, once go-zookeeper has re-sent its
// credentials, and each owner is told (PersistentResync) before any event
// that follows the new watch. What changed while the watch was away is
// not replayed: an owner that mirrors the subtree reads it again then.
//
// What the servers allow:
//   - Below 3.6 addWatch is answered UNIMPLEMENTED and the connection
//     closed; servers configured with WatchManagerOptimized answer
//     MARSHALLINGERROR. The client remembers it and AddWatch returns
//     ErrUnimplemented from then on (nothing is tried again in a loop):
//     the caller falls back to one-shot watches.
//   - Remove takes the server's watch off with the last of its owners,
//     with removeWatches of type Any, which every server with persistent
//     watches takes (see pwremove.go; the persistent types are 3.9's).
//   - 3.6 to 3.8 keep one watch mode per connection and path: a one-shot
//     watch set on the exact root of a persistent watch silently turns it
//     into a one-shot one (ZOOKEEPER-4466, fixed in 3.9.0). So the
//     client's watched reads (GetW, ExistsW, ChildrenW) refuse the root of
//     one of its persistent watches, and AddWatch refuses a path one of
//     the client's followers holds a one-shot watch on. A one-shot watch
//     set there through the raw connection is not seen: do not.
//   - Since 3.8.4 and 3.9.2 events are filtered by ACL: a node the
//     session may not read is not reported.

// noPersistentWatches says what a refused addWatch needs.
const noPersistentWatches = "persistent watches need ZooKeeper 3.6 or later"

// Server errors the Wire's own requests may get, which go-zookeeper does
// not name.
var (
	errMarshalling     = errors.New("marshalling error")
	errUnimplementedOp = errors.New("unimplemented")
	errNoWatcher       = errors.New("no watcher")
)

// addWatch modes.
const (
	addWatchPersistent          = 0
	addWatchPersistentRecursive = 1
)

// PersistentEventKind says what a PersistentEvent reports.
type PersistentEventKind uint8

const (
	// PersistentResync: the watch is set on the server (first, and again
	// on each new connection). Events follow from here; what changed
	// before is not reported: read what you mirror again.
	PersistentResync PersistentEventKind = iota + 1
	// PersistentNode: a node changed (Path, Type).
	PersistentNode
	// PersistentFailed: setting the watch again on a new connection failed
	// (Err). It is tried again under the client's retry policy, unless Err
	// wraps ErrUnimplemented (a server without persistent watches): then
	// no events come until a later connection reaches one that has them.
	PersistentFailed
)

// String names the kind.
func (k PersistentEventKind) String() string {
	switch k {
	case PersistentResync:
		return "resync"
	case PersistentNode:
		return "node"
	case PersistentFailed:
		return "failed"
	}
	return "unknown"
}

// PersistentEvent is one thing a PersistentWatch reports.
type PersistentEvent struct {
	Kind PersistentEventKind
	Path string       // PersistentNode: the server path of the node that changed
	Type zk.EventType // PersistentNode: NodeCreated, NodeDeleted, NodeDataChanged (and NodeChildrenChanged, not recursive)
	Err  error        // PersistentFailed
	// Seq is a PersistentNode event's place in the client's watch events
	// (1, 2, ...), in the connection's order: see Routed.
	Seq uint64
	// Read is the read of the node started as the event came, when the
	// watch's ReadEach asked for one (nil otherwise).
	Read *AsyncRead
}

// PersistentWatch is one persistent watch of a Client, from AddWatch
// until Remove (or the client's Close).
type PersistentWatch struct {
	c         *Client
	path      string
	recursive bool
	q         *notify.Queue[PersistentEvent]
	removed   bool      // under c.pw.mu
	synced    *wireConn // the connection it was last told of (PersistentResync), under c.pw.mu
	resyncs   uint64    // the PersistentResync events pushed, under c.pw.mu
	reader    *eachRead // ReadEach's, under c.pw.mu
}

// Routed returns the Seq of the last watch event the client has routed
// (to any watch). go-zookeeper's receive goroutine routes events and hands
// out replies in the order the connection brought them, so every event
// that came before the reply to one of the client's requests has a Seq at
// most Routed() read after the request returned. A read's result is
// therefore no newer than an event with a larger Seq. Not for the Wire's
// own requests (MultiRead): their replies can overtake events go-zookeeper
// has yet to route; a go-zookeeper request sent after them (say an
// Exists) is a barrier.
func (w *PersistentWatch) Routed() uint64 { return w.c.pw.seq.Load() }

// Events blocks until the watch has events and returns them all, in
// order: a PersistentResync first, then every event. ok is false once the
// watch is removed, the client closed, or done closed.
func (w *PersistentWatch) Events(done <-chan struct{}) (events []PersistentEvent, ok bool) {
	return w.q.Take(done)
}

// Synced returns how many PersistentResync events the watch has had
// (one per connection it was set on), and whether it is set on the
// connection the client uses now. Reads made between two calls that both
// return the same (n, true) went over one connection, after the watch was
// set on it: they are no older than any event before the n-th
// PersistentResync, and every later change comes as an event. Reads made
// otherwise (a different n, or false: the connection the client uses has
// no watch yet) prove nothing: unless the watch was removed, a
// PersistentResync is on its way, from the connection that will hold it.
func (w *PersistentWatch) Synced() (n uint64, ok bool) {
	wc := w.c.wire.usableConn()
	w.c.pw.mu.Lock()
	defer w.c.pw.mu.Unlock()
	return w.resyncs, wc != nil && w.synced == wc && !w.removed
}

// resynced tells w that its watch is set on wc, once per connection
// (AddWatch and the re-adding goroutine may both set it); c.pw.mu is held.
func (w *PersistentWatch) resynced(wc *wireConn) {
	if w.synced != wc {
		w.synced = wc
		w.resyncs++
		w.q.Push(PersistentEvent{Kind: PersistentResync})
	}
}

// pwEntry is a watched path: one server watch, shared by its owners.
type pwEntry struct {
	path      string
	recursive bool
	owners    map[*PersistentWatch]struct{}
	on        *wireConn // the connection the server holds it on; nil: none yet
}

// pwatches are a client's persistent watches.
type pwatches struct {
	mu          sync.Mutex
	entries     map[string]*pwEntry
	n           atomic.Int32             // len(entries), read without mu on every event
	seq         atomic.Uint64            // node events routed (PersistentEvent.Seq)
	unsupported atomic.Bool              // the server answered UNIMPLEMENTED or MARSHALLINGERROR to addWatch
	noRemove    atomic.Bool              // the server refused removeWatches of type Any (none known does)
	leaving     map[string]chan struct{} // path → closed once its removeWatches is answered (mu)
	nLeaving    atomic.Int32             // len(leaving), read without mu by guardOneShot
	op          chan struct{}            // one addWatch or removeWatches exchange at a time
	kick        chan struct{}            // a connection became usable
	readding    sync.Once                // starts the re-adding goroutine
	c           *Client
}

func (p *pwatches) init(c *Client) {
	p.c = c
	p.op = make(chan struct{}, 1)
	p.kick = make(chan struct{}, 1)
}

func (p *pwatches) kickNow() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *pwatches) lock(ctx context.Context) error {
	select {
	case p.op <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pwatches) unlock() { <-p.op }

// AddWatch sets a persistent watch on path (a server path), recursive for
// the whole subtree, and returns it once the server holds it; its first
// event is a PersistentResync. Two watches of one client on one path share
// the server's watch, and must have the same mode. It fails with
// ErrUnimplemented on a server without persistent watches (see above),
// and retries connection errors under the client's retry policy until ctx
// ends.
func (c *Client) AddWatch(ctx context.Context, path string, recursive bool) (*PersistentWatch, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	what := "watch " + c.Namespace().Strip(path)
	if err := zkpath.ValidatePath(path); err != nil {
		return nil, err
	}
	if !wirePath(path) && path != "/" {
		return nil, zkerr.Namedf(what, "%w: only printable ASCII paths", zkerr.ErrInvalidPath)
	}
	if c.wire == nil || c.adopted {
		return nil, zkerr.Namedf(what, "%w: a client made by Connect is needed", zkerr.ErrUnimplemented)
	}
	if c.pw.unsupported.Load() {
		return nil, zkerr.Namedf(what, "%w: %s", zkerr.ErrUnimplemented, noPersistentWatches)
	}
	if c.hub.armedAt(path) {
		return nil, zkerr.Namedf(what, "%w: a one-shot watch of this client is set on the path; on ZooKeeper 3.6–3.8 it would replace the persistent one (ZOOKEEPER-4466)", zkerr.ErrInvalidArgument)
	}
	w := &PersistentWatch{c: c, path: path, recursive: recursive, q: notify.NewQueue[PersistentEvent]()}
	c.pw.mu.Lock()
	if c.pw.entries == nil {
		c.pw.entries = map[string]*pwEntry{}
	}
	e := c.pw.entries[path]
	if e == nil {
		e = &pwEntry{path: path, recursive: recursive, owners: map[*PersistentWatch]struct{}{}}
		c.pw.entries[path] = e
		c.pw.n.Add(1)
	} else if e.recursive != recursive {
		c.pw.mu.Unlock()
		return nil, zkerr.Namedf(what, "%w: a watch of the other mode is set on the path", zkerr.ErrInvalidArgument)
	}
	e.owners[w] = struct{}{}
	c.pw.mu.Unlock()
	c.startReadding()
	err := c.Retry(ctx, func() error { return c.pw.addWatchOnce(ctx, e, w) })
	if err != nil {
		c.pw.removeOwner(w)
		if errors.Is(err, zkerr.ErrUnimplemented) {
			return nil, zkerr.Named(what, err)
		}
		return nil, zkerr.Namedf(what, "add: %w", err)
	}
	return w, nil
}

// addWatchOnce sets e on the current connection, unless it is set there
// already (then only w is told).
func (p *pwatches) addWatchOnce(ctx context.Context, e *pwEntry, w *PersistentWatch) error {
	c := p.c
	if err := p.lock(ctx); err != nil {
		return err
	}
	defer p.unlock()
	wc := c.wire.usableConn()
	if wc == nil {
		return zkerr.ErrNotConnected
	}
	p.mu.Lock()
	if e.on == wc {
		w.resynced(wc)
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	r, err := p.sendAddWatch(ctx, wc, e)
	if err != nil {
		return err
	}
	return p.addWatchErr(p.waitWire(ctx, wc, r))
}

// sendAddWatch sends e's addWatch on wc. When the reply says the watch is
// set, every owner of e is told, before any later frame is read.
func (p *pwatches) sendAddWatch(ctx context.Context, wc *wireConn, e *pwEntry) (*wireCall, error) {
	c := p.c
	mode := int32(addWatchPersistent)
	if e.recursive {
		mode = addWatchPersistentRecursive
	}
	f := newFrame(8 + len(e.path)).str(e.path).int32(mode)
	then := func(r *wireCall) {
		if _, err := r.result(); err != nil {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.entries[e.path] != e {
			return // removed meanwhile
		}
		e.on = wc
		for o := range e.owners {
			o.resynced(wc)
		}
	}
	r, err := wc.callThen(ctx, zopAddWatch, f, nil, then)
	if errors.Is(err, errWireNotReady) {
		return nil, zkerr.ErrNotConnected
	}
	if err != nil {
		return nil, err
	}
	c.stats.watches.Add(1)
	return r, nil
}

// waitWire waits for r's reply (or ctx) and maps the server's answer.
func (p *pwatches) waitWire(ctx context.Context, wc *wireConn, r *wireCall) error {
	select {
	case <-r.done:
	case <-ctx.Done():
		if !wc.abandon(r) {
			return ctx.Err()
		}
	}
	_, err := r.result()
	return err
}

// addWatchErr maps an addWatch's error: UNIMPLEMENTED (before 3.6) or
// MARSHALLINGERROR (a server configured without persistent watches) is
// remembered, and becomes ErrUnimplemented.
func (p *pwatches) addWatchErr(err error) error {
	c := p.c
	if errors.Is(err, errUnimplementedOp) || errors.Is(err, errMarshalling) {
		if !p.unsupported.Swap(true) {
			c.log.Warn("zkrecipes: the server has no persistent watches (ZooKeeper 3.6 or later needed)", "err", err)
		}
		return fmt.Errorf("%w: %s; the server answered: %v", zkerr.ErrUnimplemented, noPersistentWatches, err)
	}
	return err
}

// usableConn returns the connection the Wire can send on now, once
// go-zookeeper has re-sent its credentials on it; nil otherwise.
func (w *wire) usableConn() *wireConn {
	c := w.ready()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || !c.active || (w.auths.Load() > 0 && !c.sendLoop) {
		return nil
	}
	return c
}

// route hands a watch event to the persistent watches it concerns: those
// on its path, and the recursive ones above it. It runs on go-zookeeper's
// receive goroutine, in the connection's order. The reads ReadEach asks
// for are started after p.mu is let go (a write that fails ends the
// connection's calls, whose callbacks may take p.mu), before the event is
// handed on.
func (p *pwatches) route(ev zk.Event) {
	switch ev.Type {
	case zk.EventNodeCreated, zk.EventNodeDeleted, zk.EventNodeDataChanged, zk.EventNodeChildrenChanged:
	default:
		return
	}
	if ev.Path == "" || ev.Path[0] != '/' {
		return
	}
	type told struct {
		o *PersistentWatch
		r *eachRead
	}
	var buf [4]told
	to := buf[:0]
	p.mu.Lock()
	seq := p.seq.Add(1)
	for at := ev.Path; ; {
		if e := p.entries[at]; e != nil {
			// A recursive watch is never told of children (the event came
			// from a one-shot watch on the same path); a plain one only of
			// its own node.
			if (e.recursive && ev.Type != zk.EventNodeChildrenChanged) || (!e.recursive && at == ev.Path) {
				for o := range e.owners {
					to = append(to, told{o, o.reader})
				}
			}
		}
		if at == "/" {
			break
		}
		if i := strings.LastIndexByte(at, '/'); i == 0 {
			at = "/"
		} else {
			at = at[:i]
		}
	}
	p.mu.Unlock()
	for _, t := range to {
		pe := PersistentEvent{Kind: PersistentNode, Path: ev.Path, Type: ev.Type, Seq: seq}
		if t.r != nil {
			t.r.start(t.o.c, &pe)
		}
		t.o.q.Push(pe)
	}
}

// closeWatches ends every persistent watch (the client closes).
func (p *pwatches) closeWatches() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for path, e := range p.entries {
		for o := range e.owners {
			o.removed = true
			o.q.Close()
		}
		delete(p.entries, path)
	}
	p.n.Store(0)
}
