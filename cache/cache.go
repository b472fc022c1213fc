package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/gid"
	"github.com/zkrecipes/zkrecipes/internal/lifecycle"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Unlimited is the maximum depth of a cache of a whole subtree (New's
// default).
const Unlimited = -1

// Option configures a Cache.
type Option func(*options) error

type options struct {
	maxDepth     int // math.MaxInt: unlimited
	noData       bool
	oneShot      bool
	childrenOnly bool
}

// WithMaxDepth limits the cache to the nodes at most depth levels below
// its root: 0 caches the root alone (NewNodeCache), 1 the root and its
// children (NewChildrenCache), Unlimited (the default) the whole subtree.
// A negative depth other than Unlimited is refused.
func WithMaxDepth(depth int) Option {
	return func(o *options) error {
		switch {
		case depth == Unlimited:
			o.maxDepth = math.MaxInt
		case depth < 0:
			return fmt.Errorf("%w: cache depth %d (0 or more, or Unlimited)", recipes.ErrInvalidArgument, depth)
		default:
			o.maxDepth = depth
		}
		return nil
	}
}

// WithoutData keeps no node data, only each node's path and Stat: for
// subtrees of large values whose changes matter but not their bytes. Node
// values then have a nil Data, in reads and in events alike (listeners
// do not get the bytes either: the cache never holds them); NodeChanged
// is still reported for every data change (its mzxid).
func WithoutData() Option {
	return func(o *options) error {
		o.noData = true
		return nil
	}
}

// WithOneShotWatches makes the cache keep itself current with one-shot
// watches, a data and a children watch per node (Curator's TreeCache
// algorithm), instead of one persistent recursive watch: what it does by
// itself on a server without persistent watches (ZooKeeper before 3.6).
// It costs one server watch or two per cached node and a read per change,
// and, as go-zookeeper cannot remove one-shot watches, those left when the
// cache closes stay on the server until they fire or the session ends.
// It cannot run where the same client holds a persistent watch on the
// cache's root (another cache, or a WatchPersistent): the client refuses
// a one-shot watch there (ZOOKEEPER-4466), and the cache retries, under
// the client's retry policy, without ever initialising. Use another
// client.
func WithOneShotWatches() Option {
	return func(o *options) error {
		o.oneShot = true
		return nil
	}
}

// Cache is a local mirror of a ZooKeeper subtree, of one node, or of one
// node's children, kept current by watches (see the package doc). Make it
// with New, NewNodeCache, NewChildrenCache or NewTreeCache; Start it; read
// it from memory; Close it.
type Cache struct {
	c    *recipes.Client
	e    *engine.Client
	path string // as given (namespace-relative)
	full string // on the server
	o    options

	life        lifecycle.State // and its goroutine, run
	mu          sync.RWMutex
	st          *store // the nodes (store.go)
	initialized bool
	initCh      chan struct{} // closed at Initialized
	listeners   notify.Listeners[[]Event]
	subs        map[*subscription]struct{} // Subscribe's channels

	persistent atomic.Bool // running on a persistent watch
	resyncs    atomic.Int64
	noMulti    atomic.Bool             // the server has no multiRead (before 3.6): loads read node by node
	listenerGs sync.Map                // goroutine ids of the listeners (Close from a listener does not wait for itself)
	watch      *engine.PersistentWatch // set with the goroutine, under mu

	// Owned by the persistent watch's goroutine (runPersistent): which
	// deletion events may be older than the node the cache holds, and so
	// must be checked against a read (see stream.go).
	verifyTo  uint64            // every event up to this Seq (after a load)
	ahead     map[string]uint64 // a node's, up to this Seq (after its read)
	readFloor uint64            // a read of Order at most this may be older than what was applied (stream.go)
}

// New returns a cache of the subtree at path (Curator's CuratorCache;
// TreeCache's view): the node and all its descendants, down to
// WithMaxDepth. The node need not exist. It touches nothing in ZooKeeper
// (Start does), and the cache never creates anything there, not even its
// root.
func New(c *recipes.Client, path string, opts ...Option) (*Cache, error) {
	full, err := recipeargs.Path(c, path, "a cache root")
	if err != nil {
		return nil, err
	}
	o := options{maxDepth: math.MaxInt}
	if err := recipeargs.Options(&o, opts); err != nil {
		return nil, err
	}
	return &Cache{
		c: c, e: (*engine.Client)(c), path: path, full: full, o: o,
		st:     newStore(),
		initCh: make(chan struct{}),
	}, nil
}

// NewTreeCache is New: the whole subtree (Curator's TreeCache view).
func NewTreeCache(c *recipes.Client, path string, opts ...Option) (*Cache, error) {
	return New(c, path, opts...)
}

// NewNodeCache returns a cache of the node at path alone (Curator's
// NodeCache view): New with WithMaxDepth(0), on a persistent watch that
// is not recursive (or on the recursive one a deeper cache of the same
// client holds on the path: one server watch per path and connection).
// Get(path) reads it. A client's deeper cache cannot start on a path
// where its node cache (or a WatchPersistent that is not recursive)
// already holds a watch: Start fails with ErrInvalidArgument; start the
// deeper cache first, or use another client.
func NewNodeCache(c *recipes.Client, path string, opts ...Option) (*Cache, error) {
	return New(c, path, append(slices.Clone(opts), WithMaxDepth(0))...)
}

// NewChildrenCache returns a cache of the children of the node at path
// (Curator's PathChildrenCache view): New with WithMaxDepth(1), except
// that the parent itself is never reported, neither in events nor in
// Get, Size, Snapshot and Walk (CURATOR-574: Curator's bridge reported
// it); Children(path) lists the children.
func NewChildrenCache(c *recipes.Client, path string, opts ...Option) (*Cache, error) {
	opts = append(slices.Clone(opts), WithMaxDepth(1), func(o *options) error {
		o.childrenOnly = true
		return nil
	})
	return New(c, path, opts...)
}

// Path returns the cache's root path as given.
func (c *Cache) Path() string {
	if c == nil {
		return ""
	}
	return c.path
}

// Persistent reports whether the cache keeps itself current with a
// persistent watch now (false: one-shot watches, WithOneShotWatches or a
// server before ZooKeeper 3.6).
func (c *Cache) Persistent() bool { return c != nil && c.persistent.Load() }

func (c *Cache) name() string { return "cache " + c.path }

func (c *Cache) ok() bool { return c != nil && c.c != nil }

func notMade() error { return zkerr.NotMade("Cache", "New") }

// Start sets the cache's watch and starts loading it: one persistent
// recursive watch on the root (a persistent one for a NodeCache), or,
// with WithOneShotWatches or on a server without persistent watches, the
// one-shot watches of the first reads. It returns once the watch is set
// (retrying connection errors under the client's retry policy until ctx
// ends); the load goes on in the background: WaitReady waits for
// it, and listeners hear Initialized. It returns ErrAlreadyStarted when
// started, ErrClosed after Close. A failed Start leaves nothing, on the
// server or in the process.
func (c *Cache) Start(ctx context.Context) error {
	if !c.ok() {
		return notMade()
	}
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	if err := c.e.Check(); err != nil {
		return zkerr.Named(c.name(), err)
	}
	if err := c.life.Start(c.name()); err != nil {
		return err
	}
	w, err := c.setWatch(ctx)
	if err != nil {
		c.life.Abort()
		return zkerr.Named(c.name(), err)
	}
	c.mu.Lock() // Close reads the watch under it
	c.watch = w
	c.persistent.Store(w != nil)
	err = c.life.Go(context.Background(), c.name(), func(ctx context.Context) { c.run(ctx, w) })
	if err != nil { // Close came while the watch was being set
		c.watch = nil
		c.persistent.Store(false)
	}
	c.mu.Unlock()
	if err != nil && w != nil {
		_ = w.Remove(ctx)
	}
	return err
}

// setWatch sets the cache's persistent watch: nil without an error
// under WithOneShotWatches or on a server without persistent watches.
func (c *Cache) setWatch(ctx context.Context) (*engine.PersistentWatch, error) {
	if c.o.oneShot {
		return nil, nil
	}
	w, err := c.e.AddWatch(ctx, c.full, c.o.maxDepth > 0)
	if c.o.maxDepth == 0 && errors.Is(err, recipes.ErrInvalidArgument) {
		// A recursive watch of the client's holds the path (a deeper
		// cache): it serves a node cache too.
		w, err = c.e.AddWatch(ctx, c.full, true)
	}
	if errors.Is(err, recipes.ErrUnimplemented) {
		c.e.Logger().Info("zkrecipes: the server has no persistent watches; the cache uses one-shot watches", "cache", c.path)
		return nil, nil
	}
	return w, err
}

// run keeps the cache current until ctx ends.
func (c *Cache) run(ctx context.Context, w *engine.PersistentWatch) {
	if w != nil {
		if !c.runPersistent(ctx, w) {
			return
		}
		// The client reached a server without persistent watches.
		c.persistent.Store(false)
		_ = w.Remove(ctx)
		c.e.Logger().Warn("zkrecipes: the server has no persistent watches; the cache goes on with one-shot watches", "cache", c.path)
	}
	c.runFallback(ctx)
}

// Close stops the cache: it removes its watch (from the server too; see
// recipes.PersistentWatch), stops its goroutine, and delivers the events
// already queued to each listener before removing it (waiting up to 5s
// for each). The cache's contents stay readable. Closing twice, or a cache never started, is fine. It
// returns an error wrapping ctx.Err() when ctx ends first.
func (c *Cache) Close(ctx context.Context) error {
	if !c.ok() {
		return notMade()
	}
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	if first, _ := c.life.Close(); !first {
		return nil
	}
	c.life.Cancel()
	c.mu.Lock()
	w := c.watch
	c.mu.Unlock()
	var err error
	if w != nil {
		if rerr := w.Remove(ctx); rerr != nil {
			err = zkerr.Namedf(c.name(), "close: %w", rerr)
		}
	}
	if serr := c.life.Stop(ctx, c.name()); err == nil {
		err = serr
	}
	c.persistent.Store(false)
	c.mu.Lock()
	subs := c.subs
	c.subs = nil
	c.mu.Unlock()
	for s := range subs {
		s.end() // nobody may be reading: stop sending before the listeners close
	}
	finish := func() {
		c.listeners.Close()
		for s := range subs { // their listeners are gone: nothing sends now
			s.closed.Do(func() { close(s.ch) })
		}
	}
	if id := gid.GoroutineID(); id != 0 {
		if _, mine := c.listenerGs.Load(id); mine {
			go finish() // ends once this listener call returns
			return err
		}
	}
	finish()
	return err
}

// Initialized returns a channel closed once the first full load is done
// (Initialized).
func (c *Cache) Initialized() <-chan struct{} {
	if !c.ok() {
		ch := make(chan struct{})
		return ch
	}
	return c.initCh
}

// WaitReady waits until the first full load is done. It returns
// ErrNotStarted before Start, ErrClosed when the cache closes first, and
// an error wrapping ctx.Err() when ctx ends first.
func (c *Cache) WaitReady(ctx context.Context) error {
	if !c.ok() {
		return notMade()
	}
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	done := c.life.Ended()
	if done == nil {
		if err := c.life.Running(c.name(), ""); err != nil {
			return err // not started, or closed before it was
		}
	}
	select {
	case <-c.initCh:
		return nil
	default:
	}
	select {
	case <-c.initCh:
		return nil
	case <-done:
		if c.e.Check() != nil {
			return zkerr.Named(c.name(), recipes.ErrClientClosed)
		}
		return zkerr.Named(c.name(), recipes.ErrClosed)
	case <-c.e.Done():
		return zkerr.Named(c.name(), recipes.ErrClientClosed)
	case <-ctx.Done():
		return zkerr.Namedf(c.name(), "waiting for the first load: %w", ctx.Err())
	}
}

// depth returns how many levels full is below the root (0: the root);
// -1 when it is not in the root's subtree.
func (c *Cache) depth(full string) int {
	switch {
	case full == c.full:
		return 0
	case c.full == "/":
		return strings.Count(full, "/")
	case strings.HasPrefix(full, c.full+"/"):
		return strings.Count(full[len(c.full):], "/")
	}
	return -1
}

// inScope reports whether full is a node the cache holds.
func (c *Cache) inScope(full string) bool {
	d := c.depth(full)
	return d >= 0 && d <= c.o.maxDepth
}

// upsertLocked puts a node read from the server into the cache and
// returns what that changed: nothing when the cache holds the same node
// at the same or a later change (mzxid); NodeDeleted for the old node and
// its subtree and NodeCreated when the node was deleted and created again
// (czxid); NodeCreated for a new node, unless its parent is not cached
// (then it is gone already: its deletion is reported later); NodeChanged
// when its mzxid moved.
func (c *Cache) upsertLocked(evs []Event, full string, data []byte, st *zk.Stat) []Event {
	slot, parent := c.findLocked(full)
	if slot >= 0 {
		_, cur := c.st.node(slot)
		if cur.Czxid == st.Czxid && st.Mzxid <= cur.Mzxid {
			return evs
		}
		if cur.Czxid != st.Czxid {
			evs = c.removeLocked(evs, full)
			slot, parent = c.findLocked(full)
		}
	}
	if c.o.noData {
		data = nil
	}
	if slot >= 0 {
		prev := c.nodeLocked(slot, full)
		c.st.replace(slot, data, st)
		n := c.nodeLocked(slot, full)
		return c.emit(evs, Event{Type: NodeChanged, Path: n.Path, Old: &prev, New: &n})
	}
	switch {
	case full == c.full:
		slot = c.st.setRoot(data, st)
	case parent < 0:
		return evs // the parent is not cached: gone already
	default:
		_, name := zkpath.SplitPath(full)
		slot = c.st.insert(parent, name, data, st)
	}
	n := c.nodeLocked(slot, full)
	return c.emit(evs, Event{Type: NodeCreated, Path: n.Path, New: &n})
}

// removeLocked drops the node at full and its subtree, reporting each
// node deepest first.
func (c *Cache) removeLocked(evs []Event, full string) []Event {
	slot, parent := c.findLocked(full)
	if slot < 0 {
		return evs
	}
	if parent >= 0 {
		c.st.unlink(parent, slot)
	}
	return c.dropLocked(evs, slot, full)
}

// dropLocked frees slot (at full) and its subtree, reporting each node
// deepest first, siblings in order; its parent's list is left as it is.
func (c *Cache) dropLocked(evs []Event, slot int32, full string) []Event {
	for _, k := range c.st.children(slot) {
		evs = c.dropLocked(evs, k, joinName(full, c.st.name(k)))
	}
	prev := c.nodeLocked(slot, full)
	c.st.free(slot)
	return c.emit(evs, Event{Type: NodeDeleted, Path: prev.Path, Old: &prev})
}

// emit appends ev unless it is about a node outside the public view.
func (c *Cache) emit(evs []Event, ev Event) []Event {
	if c.o.childrenOnly && ev.Path != "" && ev.Path == c.e.Namespace().Strip(c.full) {
		return evs
	}
	return append(evs, ev)
}

// publishLocked posts evs to the listeners, with Initialized after them
// the first time done is set, or Resynced after a later resync; c.mu is
// held (Listen registers under it too: nothing comes between a new
// listener's first batch and what follows).
func (c *Cache) publishLocked(evs []Event, loaded bool) {
	if loaded {
		if !c.initialized {
			c.initialized = true
			close(c.initCh)
			evs = append(evs, Event{Type: Initialized})
		} else {
			c.resyncs.Add(1)
			evs = append(evs, Event{Type: Resynced})
		}
	}
	if len(evs) > 0 {
		c.listeners.Post(evs)
	}
}
