package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// OwnedSpec describes a node of ours that must exist: a leader latch's
// node, a persistent node, a group member, a registered service instance.
type OwnedSpec struct {
	// Path is the server path of the node. With Protected, the node is
	// made under Path's parent, named _c_<uuid>-<Path's last segment>;
	// with a sequential Mode the server appends its suffix.
	Path string
	// Mode is the create mode, one of go-zookeeper's: zk.FlagPersistent
	// (0), zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential,
	// zk.FlagContainer, zk.FlagTTL or zk.FlagPersistentSequentialWithTTL.
	Mode int32
	// TTL is the time to live of a TTL mode (required with one, refused
	// with the others).
	TTL time.Duration
	// Downgrade makes a sequential node that goes again at the path it
	// had, in the mode without its sequential flag (Curator's
	// PersistentNode: CURATOR-190/483), instead of as a new sequential
	// node. It has no effect with Protected (each create is a new
	// protected name).
	Downgrade bool
	// KeepOnClose leaves the node in place on Close (a TTL node the
	// server reaps, say) instead of deleting it.
	KeepOnClose bool
	// Protected makes each create a protected create (see
	// createProtected), in any Mode: a create whose reply is lost is found
	// again by its uuid, never made twice.
	Protected bool
	// Data is the node's first data (SetData changes it later).
	Data []byte
	// What names the node in logs ("leader latch /l", say); Path when
	// empty.
	What string
	// Hold marks an ephemeral node that stands for a hold (a
	// participant's place in a queue), which ends when the client
	// declares its session LOST: should that session come back, the node
	// is deleted (and made again), as a lock's is. Other owned nodes (a
	// PersistentNode, a group member, a service instance) are kept then:
	// the node is still there and still ours, and deleting and making it
	// again is churn every cache of it sees as a leave and a join.
	Hold bool
	// TakeOver makes the first create, when it meets an ephemeral node of
	// another session at our fixed path, delete that node and make ours
	// at once (Curator's service registration: the instance id is the
	// instance's identity, and the node is a crashed predecessor's).
	// Without it, and for a node met later, the other session's node is
	// waited for until it goes.
	TakeOver bool
}

// Owned is one incarnation of an owned node: each node made for it (the
// first, and each one made again after a deletion or a lost session) is
// a new one.
type Owned struct {
	// Path is the node's server path ("" for none).
	Path string
	// Session is the session that owns the node when it is ephemeral
	// (0 for a persistent node).
	Session int64
	// Gen counts the nodes made: 1 for the first, 2 for the one made
	// again after it, and so on.
	Gen uint64
	// Foreign reports an ephemeral node at our (fixed) path that belongs
	// to another session: not ours, waited for until it goes (then ours
	// is made).
	Foreign bool
}

// Recreated reports whether the node was made again after an earlier one
// went.
func (o Owned) Recreated() bool { return o.Gen > 1 }

// OwnedNode keeps a node of ours in existence until Close: it creates the
// node in the background, and when the node goes (deleted by someone,
// with its parent, or with a lost session) it creates it again, with the
// latest data, its missing parents as containers. A sequential node is
// made again as a new sequential node, with a new path (Owned.Path, and
// the listeners, say which). The node is checked each time the
// connection comes back and each time its watch fires: an ephemeral node
// must belong to the current session (the owner check a leader latch
// needs: CURATOR-696), or it is not ours and a new one is made (a node
// at a fixed path that another session owns is waited for instead: it is
// taken over once it is gone, as Curator's PersistentNode does).
//
// Failures away from the caller are logged at warn and retried with the
// client's retry policy (after it gives up, once a second: never a tight
// loop). Close deletes the node with a guaranteed delete.
//
// An OwnedNode is safe for concurrent use.
type OwnedNode struct {
	c          *Client
	spec       OwnedSpec
	parent     string
	name       string
	ephemeral  bool
	sequential bool

	mu      sync.Mutex
	cur     Owned
	mine    bool   // cur was made by us (not a node taken over)
	sweep   string // cur's protected prefix when a create reply was lost
	fixed   string // with Downgrade: the path a sequential node is made again at
	gen     uint64
	data    []byte
	dataGen uint64 // bumped by every SetData
	wrote   uint64 // the dataGen cur holds
	lastErr error  // the last create's failure, when it cannot be retried
	changed chan struct{}
	closed  bool
	making  bool // the loop is making the node (Close waits for that)

	kick      chan struct{}      // look again (buffered 1)
	stop      chan struct{}      // closed by Close
	cancel    context.CancelFunc // abandons the loop's request
	done      chan struct{}      // the background loop has ended
	listeners notify.Listeners[Owned]
}

// Own starts keeping the node spec describes in existence, in the
// background, and returns at once: Await waits for the node.
func (c *Client) Own(spec OwnedSpec) (*OwnedNode, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if err := zkpath.ValidatePath(spec.Path); err != nil {
		return nil, err
	}
	if spec.Path == "/" {
		return nil, fmt.Errorf("%w: the root cannot be owned", zkerr.ErrInvalidPath)
	}
	if spec.Mode < zk.FlagPersistent || spec.Mode > zk.FlagPersistentSequentialWithTTL {
		return nil, fmt.Errorf("%w: create mode %d", zkerr.ErrInvalidArgument, spec.Mode)
	}
	if isTTLMode(spec.Mode) != (spec.TTL > 0) {
		return nil, fmt.Errorf("%w: a TTL (%v) goes with a TTL create mode and only with one (mode %d)", zkerr.ErrInvalidArgument, spec.TTL, spec.Mode)
	}
	if spec.TTL > MaxTTL {
		return nil, fmt.Errorf("%w: TTL %v above the server's limit %v", zkerr.ErrInvalidArgument, spec.TTL, MaxTTL)
	}
	if spec.TTL > 0 && spec.TTL < time.Millisecond {
		return nil, fmt.Errorf("%w: TTL %v under a millisecond", zkerr.ErrInvalidArgument, spec.TTL)
	}
	o := &OwnedNode{
		c: c, spec: spec,
		ephemeral:  isEphemeralMode(spec.Mode),
		sequential: isSequentialMode(spec.Mode),
		data:       append([]byte(nil), spec.Data...),
		dataGen:    1, // the first data; a node taken over holds generation 0
		changed:    make(chan struct{}),
		kick:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	o.parent, o.name = zkpath.SplitPath(spec.Path)
	if o.spec.What == "" {
		o.spec.What = c.Namespace().Strip(spec.Path)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel = cancel
	go o.run(ctx)
	return o, nil
}

// Node returns the current node (Path "" while there is none).
func (o *OwnedNode) Node() Owned {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cur
}

// Data returns the latest data (what the node holds, or will hold once
// made or written).
func (o *OwnedNode) Data() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]byte(nil), o.data...)
}

// Await waits until the node exists and returns it. It returns an error
// wrapping ctx.Err() when ctx ends first, ErrClosed after Close, and the
// last create's error when that cannot be retried (NoAuth, say; the
// background keeps trying).
func (o *OwnedNode) Await(ctx context.Context) (Owned, error) {
	return o.waitFor(ctx, "waiting for the node", func() (Owned, bool, error) {
		if o.cur.Path != "" {
			return o.cur, true, nil
		}
		return Owned{}, false, o.lastErr
	})
}

// AwaitOurs is Await for a node that is ours: a node of another session
// at our path is waited for until it goes and ours is made.
func (o *OwnedNode) AwaitOurs(ctx context.Context) (Owned, error) {
	return o.waitFor(ctx, "waiting for the node to be ours", func() (Owned, bool, error) {
		if o.cur.Path != "" && !o.cur.Foreign {
			return o.cur, true, nil
		}
		return Owned{}, false, o.lastErr
	})
}

// Verify checks with the server that the current node is there and, when
// ephemeral, belongs to the current session (the owner check a leader
// latch makes before it leads), and returns it when it is. When it is
// not, it has the node made again (a node under our name that another
// session owns is not ours) and checks the new one; errors as Await.
func (o *OwnedNode) Verify(ctx context.Context) (Owned, error) {
	if ctx == nil {
		return Owned{}, fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	for {
		if err := o.usable(); err != nil {
			return Owned{}, err
		}
		if err := o.c.WaitConnected(ctx); err != nil {
			return Owned{}, zkerr.Namedf(o.spec.What, "verifying the node: %w", err)
		}
		snap := o.c.Snapshot()
		cur, err := o.Await(ctx)
		if err != nil {
			return Owned{}, err
		}
		ok, err := o.owns(ctx, cur, o.c.conn.SessionID())
		switch {
		case err != nil:
			return Owned{}, err
		case ok:
			return cur, nil
		}
		o.poke()
		o.mu.Lock()
		ch, same := o.changed, o.cur == cur
		o.mu.Unlock()
		if !same {
			continue
		}
		select {
		case <-ch: // the node changed: look again
		case <-snap.Changed: // so did the connection
		case <-ctx.Done():
			return Owned{}, zkerr.Namedf(o.spec.What, "verifying the node: %w", ctx.Err())
		case <-o.c.closeCh:
			return Owned{}, zkerr.ErrClientClosed
		}
	}
}

// owns asks the server whether n exists and, when ephemeral, belongs to
// session sid.
func (o *OwnedNode) owns(ctx context.Context, n Owned, sid int64) (bool, error) {
	var (
		ok bool
		st *zk.Stat
	)
	err := o.c.Retry(ctx, func() error {
		var err error
		ok, st, err = o.c.Exists(ctx, n.Path)
		return err
	})
	switch {
	case err != nil:
		return false, zkerr.Namedf(o.spec.What, "checking %s: %w", o.c.Namespace().Strip(n.Path), err)
	case !ok:
		return false, nil
	}
	return !o.ephemeral || st.EphemeralOwner == sid, nil
}

// SetData records data as the node's data, at once and whatever happens
// next (a node made later is made with it), and waits within ctx until
// the node holds it. It returns an error wrapping ctx.Err() when ctx ends
// first (the data is still written in the background), ErrClosed after
// Close.
func (o *OwnedNode) SetData(ctx context.Context, data []byte) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return zkerr.Namedf(o.spec.What, "set data: %w", zkerr.ErrClosed)
	}
	o.data = append([]byte(nil), data...)
	o.dataGen++
	g := o.dataGen
	o.mu.Unlock()
	o.poke()
	_, err := o.waitFor(ctx, "writing the data", func() (Owned, bool, error) {
		if o.cur.Path != "" && o.wrote >= g {
			return o.cur, true, nil
		}
		return Owned{}, false, nil
	})
	return err
}

// Listen calls fn with the current node, if there is one, then with each
// node made after it (a node made again after a deletion or a lost
// session, which for a sequential node has a new path), in order, on a
// goroutine of its own. The returned function removes the listener.
func (o *OwnedNode) Listen(fn func(Owned)) (remove func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cur.Path == "" {
		return o.listeners.Listen(fn)
	}
	return o.listeners.ListenFirst(fn, o.cur)
}

// Close stops keeping the node and deletes it with a guaranteed delete
// (when the delete cannot be made now it goes on in the background until
// it succeeds or the session ends), waiting for that within ctx. A node
// being made when Close is called is waited for and deleted too, so that
// none is left once Close returns nil. A node at a fixed path that
// belongs to another session is left to it. It is safe to call more than
// once.
func (o *OwnedNode) Close(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	making := o.making
	close(o.stop)
	o.broadcast()
	o.mu.Unlock()
	// A create in flight is let finish: the node it makes is then ours to
	// delete below, where an abandoned create would land after Close
	// returned (and be undone only later). It is abandoned when ctx ends
	// first, or while the link is down (nothing is answered then; an
	// abandoned create's node is deleted when its reply comes). Any other
	// request of the loop's is abandoned at once.
	for {
		snap := o.c.Snapshot()
		if !making || !snap.State.IsConnected() {
			o.cancel()
		}
		select {
		case <-o.done:
			return o.finish(ctx)
		case <-snap.Changed:
		case <-ctx.Done():
			o.cancel()
			go func() { <-o.done; o.finish(context.Background()) }()
			return zkerr.Namedf(o.spec.What, "close: %w", ctx.Err())
		}
	}
}

// finish deletes the node once the loop has ended.
func (o *OwnedNode) finish(ctx context.Context) error {
	defer o.listeners.Close()
	o.mu.Lock()
	cur, mine, sweep := o.cur, o.mine, o.sweep
	o.cur = Owned{}
	o.mu.Unlock()
	if cur.Path == "" || !mine {
		return nil
	}
	o.forget(cur, sweep)
	if o.spec.KeepOnClose {
		return nil
	}
	sid := cur.Session
	if !o.ephemeral {
		sid = 0 // a persistent node outlives its session
	}
	if err := o.c.GuaranteedDelete(ctx, cur.Path, sid); err != nil && !errors.Is(err, zkerr.ErrClosed) {
		return zkerr.Namedf(o.spec.What, "%w", err)
	}
	return nil
}

// forget stops tracking cur, and sweeps for a late copy of its protected
// create.
func (o *OwnedNode) forget(cur Owned, sweep string) {
	if o.ephemeral && o.spec.Hold {
		o.c.sm.untrack(cur.Path)
	}
	if sweep != "" {
		o.c.del.sweepProtected(o.parent, sweep, cur.Session)
	}
}

func (o *OwnedNode) usable() error {
	if err := o.c.Check(); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return zkerr.Namedf(o.spec.What, "%w", zkerr.ErrClosed)
	}
	return nil
}

// waitFor waits until cond, called under o.mu, holds or fails.
func (o *OwnedNode) waitFor(ctx context.Context, what string, cond func() (Owned, bool, error)) (Owned, error) {
	if ctx == nil {
		return Owned{}, fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	for {
		if err := o.c.Check(); err != nil {
			return Owned{}, err
		}
		o.mu.Lock()
		n, ok, err := cond()
		closed, ch := o.closed, o.changed
		o.mu.Unlock()
		switch {
		case ok:
			return n, nil
		case err != nil:
			return Owned{}, zkerr.Namedf(o.spec.What, "%w", err)
		case closed:
			return Owned{}, zkerr.Namedf(o.spec.What, "%s: %w", what, zkerr.ErrClosed)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Owned{}, zkerr.Namedf(o.spec.What, "%s: %w", what, ctx.Err())
		case <-o.c.closeCh:
			return Owned{}, zkerr.ErrClientClosed
		}
	}
}

// broadcast wakes the waiters; o.mu is held.
func (o *OwnedNode) broadcast() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// stopped reports whether Close has been called.
func (o *OwnedNode) stopped() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed
}

// poke makes the loop look again.
func (o *OwnedNode) poke() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}
