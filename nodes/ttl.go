package nodes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/lifecycle"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// DefaultTouchNode is the name of a PersistentTTLNode's child, as Curator
// names it.
const DefaultTouchNode = "touch"

// WithTouchNode sets the name of a PersistentTTLNode's child that is
// touched (default DefaultTouchNode, Curator's childNodeName).
func WithTouchNode(name string) Option {
	return func(o *options) error {
		if err := only(o, "WithTouchNode", ttlNode); err != nil {
			return err
		}
		if name == "" || strings.Contains(name, "/") || zkpath.ValidatePath("/"+name) != nil {
			return fmt.Errorf("%w: touch node name %q", recipes.ErrInvalidArgument, name)
		}
		o.child = name
		return nil
	}
}

// WithTouchFactor sets how many touches a PersistentTTLNode's TTL sees:
// the child is touched every ttl/factor (default 2, Curator's
// touchScheduleFactor; at least 2).
func WithTouchFactor(factor int) Option {
	return func(o *options) error {
		if err := only(o, "WithTouchFactor", ttlNode); err != nil {
			return err
		}
		if factor < 2 {
			return fmt.Errorf("%w: touch factor %d (at least 2)", recipes.ErrInvalidArgument, factor)
		}
		o.factor = factor
		return nil
	}
}

// PersistentTTLNode is Curator's PersistentTtlNode in the layout of
// Curator 5.9: a node at path in mode PERSISTENT_WITH_TTL holding the
// data, and a child path/touch, PERSISTENT_WITH_TTL with the same TTL,
// whose data is set (touched) every ttl/2 and which is made again when it
// is gone. While the process runs, the child keeps the parent; once it
// stops (Close, or a crash) the server deletes the child a TTL after its
// last touch and the parent a TTL after that at most. Close deletes
// nothing. A parent already at path (a CONTAINER, as Curator 5.4 to 5.8
// make it, or a TTL node) is adopted.
//
// A PersistentTTLNode is safe for concurrent use.
type PersistentTTLNode struct {
	e      *engine.Client
	path   string
	full   string
	child  string // server path
	ttl    time.Duration
	period time.Duration
	node   *PersistentNode

	life      lifecycle.State // and its goroutine, loop
	mu        sync.Mutex
	lastTouch time.Time
	again     chan struct{} // the parent was made again: touch now (buffered 1)
	remove    func()
}

// NewPersistentTTLNode returns a PersistentTTLNode at path with ttl and
// data. It does not touch ZooKeeper. The server must run with
// -Dzookeeper.extendedTypesEnabled=true (WaitReady says so
// when it does not).
func NewPersistentTTLNode(c *recipes.Client, path string, ttl time.Duration, data []byte, opts ...Option) (*PersistentTTLNode, error) {
	full, err := recipeargs.Path(c, path, "a TTL node's path")
	if err != nil {
		return nil, err
	}
	o := options{recipe: ttlNode, child: DefaultTouchNode, factor: 2}
	if err := recipeargs.Options(&o, opts); err != nil {
		return nil, err
	}
	if ttl < time.Duration(o.factor)*time.Millisecond || ttl > engine.MaxTTL {
		return nil, fmt.Errorf("%w: TTL %v (%d ms to %v)", recipes.ErrInvalidArgument, ttl, o.factor, engine.MaxTTL)
	}
	n, err := NewPersistentNode(c, path, PersistentWithTTL, data, WithTTL(ttl))
	if err != nil {
		return nil, err
	}
	n.o.keep = true
	return &PersistentTTLNode{
		e: (*engine.Client)(c), path: path, full: full, child: zkpath.JoinPath(full, o.child),
		ttl: ttl, period: ttl / time.Duration(o.factor), node: n,
		again: make(chan struct{}, 1),
	}, nil
}

// Path returns the path as given.
func (n *PersistentTTLNode) Path() string {
	if !n.made() {
		return ""
	}
	return n.path
}

// TTL returns the time to live of the parent and the child.
func (n *PersistentTTLNode) TTL() time.Duration {
	if !n.made() {
		return 0
	}
	return n.ttl
}

// TouchPath returns the child's path (namespace-relative).
func (n *PersistentTTLNode) TouchPath() string {
	if !n.made() {
		return ""
	}
	return n.e.Namespace().Strip(n.child)
}

func (n *PersistentTTLNode) made() bool { return n != nil && n.node != nil }

func notMadeTTL() error { return zkerr.NotMade("PersistentTTLNode", "NewPersistentTTLNode") }

// Start makes the parent in the background and starts touching the child:
// the first touch is made as soon as the parent exists (Curator waits a
// period first, GH-1258), then every period. ErrAlreadyStarted when
// called again, ErrClosed after Close.
func (n *PersistentTTLNode) Start(ctx context.Context) error {
	if !n.made() {
		return notMadeTTL()
	}
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	n.mu.Lock() // held until the loop runs: Close reads it under mu
	defer n.mu.Unlock()
	if err := n.life.Start(n.what()); err != nil {
		return err
	}
	if err := n.node.Start(ctx); err != nil {
		n.life.Abort()
		return err
	}
	n.remove = n.node.Listen(func(Event) {
		select {
		case n.again <- struct{}{}:
		default:
		}
	})
	return n.life.Go(context.Background(), n.what(), n.loop) // refused if Close came while the parent was started: it closes the node
}

func (n *PersistentTTLNode) what() string { return "TTL node " + n.path }

// loop touches the child every period, and at once when the parent is made.
func (n *PersistentTTLNode) loop(ctx context.Context) {
	t := time.NewTicker(n.period)
	defer t.Stop()
	for {
		select {
		case <-n.again:
			n.touch(ctx)
		case <-t.C:
			n.touch(ctx)
		case <-ctx.Done():
			return
		}
	}
}

// touch sets the child's data, making it when it is missing.
func (n *PersistentTTLNode) touch(ctx context.Context) {
	if n.node.ActualPath() == "" {
		return // no parent yet: the parent's event brings a touch
	}
	ctx, cancel := context.WithTimeout(ctx, n.period)
	defer cancel()
	data := []byte(recipeargs.LocalIP()) // Curator's default data
	_, err := n.e.Set(ctx, n.child, data, -1)
	if errors.Is(err, zk.ErrNoNode) {
		_, err = n.e.CreateModeTTL(ctx, n.child, data, zk.FlagTTL, n.ttl)
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = n.e.Set(ctx, n.child, data, -1)
		}
	}
	switch {
	case err == nil:
		n.mu.Lock()
		n.lastTouch = time.Now()
		n.mu.Unlock()
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
	default:
		n.e.Logger().Warn("zkrecipes: touching a TTL node failed; trying again at the next touch",
			"what", n.what(), "node", n.TouchPath(), "err", err)
	}
}

// LastTouch returns when this process last touched the child (zero before
// the first touch).
func (n *PersistentTTLNode) LastTouch() time.Time {
	if !n.made() {
		return time.Time{}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lastTouch
}

// WaitReady waits until the parent exists (see
// PersistentNode.WaitReady).
func (n *PersistentTTLNode) WaitReady(ctx context.Context) error {
	if !n.made() {
		return notMadeTTL()
	}
	return n.node.WaitReady(ctx)
}

// SetData sets the parent's data (see PersistentNode.SetData).
func (n *PersistentTTLNode) SetData(ctx context.Context, data []byte) error {
	if !n.made() {
		return notMadeTTL()
	}
	return n.node.SetData(ctx, data)
}

// Data returns the latest data set.
func (n *PersistentTTLNode) Data() []byte {
	if !n.made() {
		return nil
	}
	return n.node.Data()
}

// Close stops touching and keeping the node. It deletes nothing: the
// server deletes the child a TTL after its last touch, then the parent. It
// is safe to call more than once.
func (n *PersistentTTLNode) Close(ctx context.Context) error {
	if !n.made() {
		return notMadeTTL()
	}
	if first, _ := n.life.Close(); !first {
		return nil
	}
	n.mu.Lock() // after Start
	remove := n.remove
	n.mu.Unlock()
	_ = n.life.Stop(context.Background(), n.what()) // a touch lasts a period at most
	if remove != nil {
		remove()
	}
	return n.node.Close(ctx)
}

// TTLNodeState is what ReadTTLNode finds at a PersistentTTLNode's path.
type TTLNodeState struct {
	// Exists reports that the parent exists.
	Exists bool
	// Data is the parent's data.
	Data []byte
	// Touched reports that the child exists.
	Touched bool
	// LastTouch is when the child was last touched (its mtime), by the
	// server's clock.
	LastTouch time.Time
	// TouchData is the child's data (Curator's: the toucher's local IP
	// address).
	TouchData []byte
}

// ReadTTLNode reads the PersistentTTLNode at path (touch node name
// DefaultTouchNode unless child is given), written by this package or by
// Curator (its 5.9 TTL parent, or the CONTAINER parent of 5.4 to 5.8:
// ZooKeeper shows both as persistent nodes to clients, and neither's TTL).
func ReadTTLNode(ctx context.Context, c *recipes.Client, path string, child ...string) (TTLNodeState, error) {
	full, err := recipeargs.ReadPath(ctx, c, path)
	if err != nil {
		return TTLNodeState{}, err
	}
	e := (*engine.Client)(c)
	name := DefaultTouchNode
	if len(child) > 0 && child[0] != "" {
		name = child[0]
	}
	var s TTLNodeState
	d, _, err := e.Get(ctx, full)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return s, nil
	case err != nil:
		return s, zkerr.Namedf("TTL node "+path, "read: %w", err)
	}
	s.Exists, s.Data = true, d
	td, st, err := e.Get(ctx, zkpath.JoinPath(full, name))
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return s, nil
	case err != nil:
		return s, zkerr.Namedf("TTL node "+path, "read: %w", err)
	}
	s.Touched, s.TouchData, s.LastTouch = true, td, time.UnixMilli(st.Mtime)
	return s, nil
}
