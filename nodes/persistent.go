package nodes

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/lifecycle"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Option configures a recipe of this package: each With… says which
// constructor takes it, and the others refuse it
// (recipes.ErrInvalidArgument).
type Option func(*options) error

type options struct {
	recipe    string // the constructor's recipe: persistentNode, ttlNode or groupMember
	ttl       time.Duration
	protected bool
	keep      bool
	child     string // a TTL node's touch node
	factor    int    // a TTL node's touches per TTL
}

const (
	persistentNode = "PersistentNode"
	ttlNode        = "PersistentTTLNode"
	groupMember    = "GroupMember"
)

// only refuses an option given to a recipe other than for.
func only(o *options, option, recipe string) error {
	if o.recipe != recipe {
		return fmt.Errorf("%w: %s is an option of %s, not of %s", recipes.ErrInvalidArgument, option, recipe, o.recipe)
	}
	return nil
}

// WithTTL sets a PersistentNode's time to live in a TTL mode (required
// with PersistentWithTTL and PersistentSequentialWithTTL, refused with
// the other modes): the server deletes the node once it has had no
// children and no change for ttl.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) error {
		if err := only(o, "WithTTL", persistentNode); err != nil {
			return err
		}
		if ttl <= 0 || ttl > engine.MaxTTL {
			return fmt.Errorf("%w: TTL %v (1 ms to %v)", recipes.ErrInvalidArgument, ttl, engine.MaxTTL)
		}
		o.ttl = ttl
		return nil
	}
}

// WithProtection makes each create of a PersistentNode a protected
// create, in any mode: the node is named _c_<uuid>-<name> under the
// path's parent, and a create whose reply is lost is found again by its
// uuid instead of being made twice. Each node made again gets a new name.
func WithProtection() Option {
	return func(o *options) error {
		if err := only(o, "WithProtection", persistentNode); err != nil {
			return err
		}
		o.protected = true
		return nil
	}
}

// Event tells a listener of a PersistentNode about a node made for it.
type Event struct {
	// Path is the node's actual path (namespace-relative): the path given,
	// or with a protected or sequential mode the name the server made.
	Path string
	// Gen counts the nodes made: 1 for the first, then one more for each
	// node made again after a deletion or a lost session.
	Gen uint64
	// Recreated reports a node made again (Gen > 1).
	Recreated bool
	// Foreign reports that the path is held by an ephemeral node of
	// another session: it is not ours, its data is left alone, and ours
	// is made once it goes.
	Foreign bool
	// Session is the session that owns an ephemeral node (another one's
	// when Foreign), 0 for the other modes.
	Session int64
}

// PersistentNode is Curator's PersistentNode: a node of ours that exists
// while the PersistentNode runs, in any create mode. Start creates it in
// the background; when it goes (deleted by someone, reaped, or with a
// lost session) it is created again at the same path with the latest
// data; Close deletes it. See the package documentation for the
// guarantees.
//
// A PersistentNode is safe for concurrent use.
type PersistentNode struct {
	c    *recipes.Client
	e    *engine.Client
	path string // as given
	full string
	mode Mode
	o    options

	life lifecycle.State
	mu   sync.Mutex
	data []byte
	own  *engine.OwnedNode
}

// NewPersistentNode returns a PersistentNode at path in mode with data. It
// does not touch ZooKeeper. The TTL modes need WithTTL.
func NewPersistentNode(c *recipes.Client, path string, mode Mode, data []byte, opts ...Option) (*PersistentNode, error) {
	full, err := recipeargs.Path(c, path, "a persistent node's path")
	if err != nil {
		return nil, err
	}
	if !mode.valid() {
		return nil, fmt.Errorf("%w: create mode %d", recipes.ErrInvalidArgument, int32(mode))
	}
	o := options{recipe: persistentNode}
	if err := recipeargs.Options(&o, opts); err != nil {
		return nil, err
	}
	if mode.IsTTL() != (o.ttl > 0) {
		if mode.IsTTL() {
			return nil, fmt.Errorf("%w: mode %v needs WithTTL", recipes.ErrInvalidArgument, mode)
		}
		return nil, fmt.Errorf("%w: WithTTL goes with a TTL mode, not %v", recipes.ErrInvalidArgument, mode)
	}
	return &PersistentNode{c: c, e: (*engine.Client)(c), path: path, full: full, mode: mode, o: o,
		data: append([]byte(nil), data...)}, nil
}

// Path returns the path as given to NewPersistentNode.
func (n *PersistentNode) Path() string {
	if !n.made() {
		return ""
	}
	return n.path
}

// Mode returns the create mode.
func (n *PersistentNode) Mode() Mode {
	if !n.made() {
		return 0
	}
	return n.mode
}

func (n *PersistentNode) made() bool { return n != nil && n.e != nil }

func notMadeNode() error { return zkerr.NotMade("PersistentNode", "NewPersistentNode") }

// Start begins creating the node, in the background, and returns at once:
// WaitReady waits for it. It returns ErrAlreadyStarted when
// called again, ErrClosed after Close.
func (n *PersistentNode) Start(ctx context.Context) error {
	if !n.made() {
		return notMadeNode()
	}
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	n.mu.Lock() // held until own is set: Close reads it under mu
	defer n.mu.Unlock()
	if err := n.life.Start(n.what()); err != nil {
		return err
	}
	own, err := n.e.Own(engine.OwnedSpec{
		Path:        n.full,
		Mode:        int32(n.mode),
		TTL:         n.o.ttl,
		Protected:   n.o.protected,
		Data:        n.data,
		Downgrade:   true,
		KeepOnClose: n.o.keep,
		What:        n.what(),
	})
	if err != nil {
		n.life.Abort()
		return n.errorf("start: %w", err)
	}
	n.own = own
	return nil
}

func (n *PersistentNode) what() string { return "persistent node " + n.path }

func (n *PersistentNode) errorf(format string, args ...any) error {
	return zkerr.Namedf(n.what(), format, args...)
}

// running returns the owned node, or the error of a node not started or
// closed.
func (n *PersistentNode) running(op string) (*engine.OwnedNode, error) {
	if !n.made() {
		return nil, notMadeNode()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.life.Running(n.what(), op); err != nil {
		return nil, err
	}
	return n.own, nil
}

// WaitReady waits until the node exists and is ours (the first one, or
// the current one; another session's node at its path is waited for
// until it goes): ActualPath returns its path after it. It returns an error
// wrapping ctx.Err() when ctx ends first, ErrNotStarted before Start,
// ErrClosed after Close, and the create's error when it cannot succeed by
// trying again (a TTL mode refused by a server without
// zookeeper.extendedTypesEnabled, NoAuth, ...: the background keeps
// trying all the same).
func (n *PersistentNode) WaitReady(ctx context.Context) error {
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	own, err := n.running("waiting for the node")
	if err != nil {
		return err
	}
	_, err = own.AwaitOurs(ctx)
	return err
}

// ActualPath returns the node's actual path (namespace-relative), "" while
// there is none: with a sequential or protected mode, the name the server
// made. A node made again after a sequential node went keeps its path.
func (n *PersistentNode) ActualPath() string {
	if !n.made() {
		return ""
	}
	n.mu.Lock()
	own := n.own
	n.mu.Unlock()
	if own == nil {
		return ""
	}
	cur := own.Node()
	if cur.Path == "" || cur.Foreign {
		return ""
	}
	return n.e.Namespace().Strip(cur.Path)
}

// SetData sets the node's data: at once as the data of every node made
// from now on (also before the first create succeeds, which Curator
// refuses: CURATOR-507), and on the current node, waiting within ctx
// until the node holds it. When ctx ends first the error wraps ctx.Err()
// and the data is still written in the background. Before Start it only
// records data. A change someone else makes to the node is not reverted.
func (n *PersistentNode) SetData(ctx context.Context, data []byte) error {
	if !n.made() {
		return notMadeNode()
	}
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	n.mu.Lock()
	if n.life.Closed() {
		n.mu.Unlock()
		return n.errorf("set data: %w", recipes.ErrClosed)
	}
	n.data = append([]byte(nil), data...)
	own := n.own
	n.mu.Unlock()
	if own == nil {
		return nil
	}
	return own.SetData(ctx, data)
}

// Data returns the latest data set.
func (n *PersistentNode) Data() []byte {
	if !n.made() {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.own != nil {
		return n.own.Data()
	}
	return append([]byte(nil), n.data...)
}

// Listen calls fn with the current node once there is one, then with each
// node made after it (a node made again, Event.Recreated), in order, on a
// goroutine of its own (the listener rule of package recipes). The
// returned function removes the listener; Close removes them all. Listen
// after Start: before it (or with a nil fn) it does nothing and returns a
// no-op.
func (n *PersistentNode) Listen(fn func(Event)) (remove func()) {
	if !n.made() {
		return func() {}
	}
	n.mu.Lock()
	own := n.own
	n.mu.Unlock()
	if own == nil || fn == nil {
		return func() {}
	}
	return own.Listen(func(o engine.Owned) {
		fn(Event{Path: n.e.Namespace().Strip(o.Path), Gen: o.Gen, Recreated: o.Recreated(), Foreign: o.Foreign, Session: o.Session})
	})
}

// Close stops keeping the node and deletes it with a guaranteed delete:
// when the delete cannot be made now (no connection) it goes on in the
// background until it succeeds or, for an ephemeral node, the session
// ends; Close waits for it within ctx. A node at our path that belongs to
// another session is left to it. It is safe to call more than once, and
// before Start.
func (n *PersistentNode) Close(ctx context.Context) error {
	if !n.made() {
		return notMadeNode()
	}
	if first, _ := n.life.Close(); !first {
		return nil
	}
	n.mu.Lock()
	own := n.own
	n.mu.Unlock()
	if own == nil {
		return nil
	}
	return own.Close(ctx)
}
