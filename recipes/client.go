package recipes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkop"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// Client is the one object every recipe takes. It owns a *zk.Conn, drains
// its session events as they happen, turns them into Curator's connection
// states and publishes those to listeners and to the holds recipes hand out.
//
// Make one with Connect or NewClient and use it through its pointer: a
// Client is safe for concurrent use, but must not be copied. A nil *Client,
// or a zero one (new(Client)), is no client: its methods return
// ErrNilClient, or a zero value for those that return no error. Close it
// when done: Close ends the session (so the server deletes its ephemeral
// nodes at once) and leaves no goroutine behind.
//
// Its definition names the module's internal client, which holds the
// connection and has no exported field: what a Client offers is the
// methods below, and the recipe packages that take it.
type Client engine.Client

// Connect dials the given servers ("host:port" each) and waits until the
// first session is established, ctx ends or the connect timeout
// (WithConnectTimeout, 15s by default) passes; ctx bounds the WithAuth
// requests too. The returned Client owns the connection. Every connection is
// dialled through a wrapper of the Client's own (around the WithDialer
// dialer, if given), which reads the negotiated session timeout from the
// server's handshake reply and the times of the requests the server
// answered, from which LOST is timed. The Client follows the ensemble's
// dynamic reconfiguration, the servers given seeding the first connection
// (see WithoutEnsembleTracking).
func Connect(ctx context.Context, servers []string, opts ...Option) (*Client, error) {
	cfg, err := config(opts)
	if err != nil {
		return nil, err
	}
	e, err := engine.Connect(ctx, servers, cfg)
	if err != nil {
		return nil, err
	}
	return (*Client)(e), nil
}

// NewClient adopts a connection the caller already has, together with the
// event channel zk.Connect returned for it. The Client drains that channel
// from now on and takes ownership of the connection: Close closes it.
// Events go-zookeeper dropped before the call are lost; the Client starts
// from the connection's current state. Like Connect, it waits for a
// session until ctx ends or the connect timeout passes. Options that configure dialing
// (WithDialer, WithHostProvider, WithZKLogger, WithMaxBufferSize) have no
// effect here.
//
// An adopted connection was not dialled through the Client's own dialer,
// which reads the negotiated session timeout and the times of the server's
// replies from the protocol, so go-zookeeper keeps both to itself: the
// Client takes WithSessionTimeout's value (give it the timeout the
// connection was dialled with; the server may have granted less) and,
// since go-zookeeper reports a disconnect at most 2/3 of the session
// timeout after the last byte, declares LOST 1/3 of that timeout after
// SUSPENDED: never after the server may expire the session, but possibly
// before, for a session that then comes back (see RECONNECTED). The
// connection also keeps go-zookeeper v1.0.4's data race on its last zxid
// (see docs/testing.md), which a Client made by Connect does not have:
// prefer Connect.
func NewClient(ctx context.Context, conn *zk.Conn, events <-chan zk.Event, opts ...Option) (*Client, error) {
	cfg, err := config(opts)
	if err != nil {
		return nil, err
	}
	e, err := engine.NewClient(ctx, conn, events, cfg)
	if err != nil {
		return nil, err
	}
	return (*Client)(e), nil
}

// eng returns c as the engine's client, whose methods take a nil or zero
// one as no client (ErrNilClient).
func (c *Client) eng() *engine.Client { return (*engine.Client)(c) }

// Close ends the session and stops every goroutine the client started. It
// asks the server to close the session, so that the client's ephemeral
// nodes (its locks, leases and election nodes) go at once, and waits for
// the reply until ctx ends (go-zookeeper itself waits at most 1s). When ctx
// ends first the connection is cut instead, the server expires the session
// after its timeout, and the error wraps ctx.Err(); go-zookeeper's own Close
// then gives up on its reply within a second, in the background. Every
// other goroutine of the client has ended when Close returns. It is safe to
// call more than once; later calls return nil.
func (c *Client) Close(ctx context.Context) error { return c.eng().Close(ctx) }

// Done returns a channel that is closed when the client is closed.
func (c *Client) Done() <-chan struct{} { return c.eng().Done() }

// UnsafeConn returns the underlying go-zookeeper connection, for an
// operation this package does not wrap. What is done through it bypasses
// the Client: paths are server paths (no namespace), creates get no ACL
// from the provider, nothing is retried, counted in metrics, or bounded
// by a ctx. Ordinary work never needs it.
func (c *Client) UnsafeConn() *zk.Conn { return c.eng().Conn() }

// Namespace returns the path prefix applied to every recipe path ("" for none).
func (c *Client) Namespace() string { return c.eng().Namespace().String() }

// FullPath validates a recipe path and applies the client's namespace to it,
// giving the path as the server knows it.
func (c *Client) FullPath(p string) (string, error) { return c.eng().Namespace().Full(p) }

// ErrorPolicy returns the client's error policy.
func (c *Client) ErrorPolicy() ErrorPolicy { return ErrorPolicy(c.eng().ErrorPolicy()) }

// Logger returns the client's logger (silent unless WithLogger was given).
func (c *Client) Logger() *slog.Logger { return c.eng().Logger() }

// SessionTimeout returns the session timeout the server granted, read from
// its handshake reply. Before the first session, and for an adopted
// connection without a Wire, it is the requested one (WithSessionTimeout).
func (c *Client) SessionTimeout() time.Duration { return c.eng().SessionTimeout() }

// State returns the current connection state.
func (c *Client) State() State { return State(c.eng().State()) }

// SessionID returns the id of the session the client last had.
func (c *Client) SessionID() int64 { return c.eng().SessionID() }

// AddAuth adds authentication info (for example scheme "digest" with
// "user:password") to the session; go-zookeeper sends it again after every
// reconnect. It returns when the server has answered or ctx ends.
func (c *Client) AddAuth(ctx context.Context, scheme string, auth []byte) error {
	return c.eng().AddAuth(ctx, scheme, auth)
}

// WaitConnected blocks until the client has a session (CONNECTED,
// RECONNECTED or READ_ONLY), ctx ends or the client is closed.
func (c *Client) WaitConnected(ctx context.Context) error { return c.eng().WaitConnected(ctx) }

// Listen registers fn to be called with the current state (unless the
// client has not had a session yet), then with every state transition, in
// order, on a goroutine of its own: a slow fn delays only its own later
// calls, never the client. The returned function removes the listener; it,
// and Close, wait up to 5s for a call in progress to return.
func (c *Client) Listen(fn func(State)) (remove func()) {
	if fn == nil {
		return func() {}
	}
	return c.eng().Listen(func(s zkstate.State) { fn(State(s)) })
}

// Subscribe returns a channel that receives the current state (unless the
// client has not had a session yet), then every state transition, in
// order. Transitions queue without bound while the reader is slow. The
// channel is closed by the returned function or when the client closes.
func (c *Client) Subscribe() (<-chan State, func()) {
	return engine.SubscribeStates(c.eng(), func(s zkstate.State) State { return State(s) })
}

// The methods below are the node operations. Paths are recipe paths: the
// namespace is applied, as it is to every path a recipe takes (see
// FullPath), and every path returned, here and by every recipe, is without
// it, so anything the library returns can be passed back to any method. On a nil Client
// they return ErrNilClient, on a closed one ErrClosed. Each returns when
// its reply arrives or ctx ends, whichever comes first, even while the
// request is in flight on a stalled link (the reply is then dropped, and a
// node a create made is deleted); the error then wraps ctx.Err(). Errors
// name the operation and the path as given.

// Create creates a node with the ACL the client's provider gives for it,
// and returns its path (with the sequence number a sequential node gets).
// The namespace node is created (as a container) when the first create
// under it finds it missing, as Curator does; other missing parents are an
// error wrapping zk.ErrNoNode (see CreateWithParents).
func (c *Client) Create(ctx context.Context, path string, data []byte, flags int32) (string, error) {
	return c.create(ctx, path, data, flags, false)
}

// CreateWithParents is Create that first creates the missing parents of
// path as container nodes (persistent ones WithoutContainers), as
// Curator's creatingParentContainersIfNeeded: the server deletes a
// container once it has had children and is empty again. A parent deleted
// between the two steps is created again.
func (c *Client) CreateWithParents(ctx context.Context, path string, data []byte, flags int32) (string, error) {
	return c.create(ctx, path, data, flags, true)
}

func (c *Client) create(ctx context.Context, path string, data []byte, flags int32, parents bool) (string, error) {
	e := c.eng()
	full, err := e.Namespace().Writable(path)
	if err != nil {
		return "", err
	}
	var p string
	if parent, _ := zkpath.SplitPath(full); parents || parent == e.Namespace().String() {
		p, err = e.CreateWithParents(ctx, full, data, flags)
	} else {
		p, err = e.Create(ctx, full, data, flags)
	}
	if err != nil {
		return "", opError("create", path, err)
	}
	return e.Namespace().Strip(p), nil
}

// Delete deletes a node (version -1 for any).
func (c *Client) Delete(ctx context.Context, path string, version int32) error {
	full, err := c.eng().Namespace().Writable(path)
	if err != nil {
		return err
	}
	return opError("delete", path, c.eng().Delete(ctx, full, version))
}

// Get reads a node's data.
func (c *Client) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	full, err := c.FullPath(path)
	if err != nil {
		return nil, nil, err
	}
	d, st, err := c.eng().Get(ctx, full)
	return d, st, opError("get", path, err)
}

// Exists reports whether a node exists.
func (c *Client) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	full, err := c.FullPath(path)
	if err != nil {
		return false, nil, err
	}
	ok, st, err := c.eng().Exists(ctx, full)
	return ok, st, opError("exists", path, err)
}

// Children lists a node's children; the Stat is the parent's.
func (c *Client) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	full, err := c.FullPath(path)
	if err != nil {
		return nil, nil, err
	}
	kids, st, err := c.eng().Children(ctx, full)
	return kids, st, opError("children", path, err)
}

// Set writes a node's data.
func (c *Client) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	full, err := c.eng().Namespace().Writable(path)
	if err != nil {
		return nil, err
	}
	st, err := c.eng().Set(ctx, full, data, version)
	return st, opError("set", path, err)
}

// Sync asks the server the client is connected to to catch up with the
// leader on path, so that a read after it sees every write committed
// before it (a follower may lag behind).
func (c *Client) Sync(ctx context.Context, path string) error {
	full, err := c.FullPath(path)
	if err != nil {
		return err
	}
	return opError("sync", path, c.eng().Sync(ctx, full))
}

// Multi runs ops (on recipe paths: the client's namespace is applied) as
// one transaction; creates get the ACL the client's provider gives. A zero
// Op is refused (ErrInvalidArgument). When the server refuses the
// transaction, the error names the first failing op and its path and
// wraps the server's error for it (go-zookeeper reports only a generic
// one), and the responses say which; their paths are recipe paths. As for
// Create, a missing namespace node is created and the transaction tried
// again. When ctx ends first the transaction may or may not have been
// applied.
func (c *Client) Multi(ctx context.Context, ops ...Op) ([]zk.MultiResponse, error) {
	e := c.eng()
	if err := e.Check(); err != nil {
		return nil, err
	}
	eops := engineOps(ops)
	full, err := zkop.OnServer("multi", eops, e.Namespace())
	if err != nil {
		return nil, err
	}
	res, err := e.Multi(ctx, full...)
	if errors.Is(err, zk.ErrNoNode) && e.Namespace().String() != "" {
		if ok, _, xerr := e.Exists(ctx, e.Namespace().String()); xerr == nil && !ok {
			if xerr := e.EnsureContainers(ctx, e.Namespace().String()); xerr == nil {
				res, err = e.Multi(ctx, full...)
			}
		}
	}
	for i := range res {
		res[i].String = e.Namespace().Strip(res[i].String)
	}
	if err != nil {
		return res, zkop.Error("multi", eops, res, err)
	}
	return res, nil
}

// GetW reads a node's data and leaves a one-shot watch on it, which fires
// once on its next change or deletion (zk.EventNodeDataChanged,
// zk.EventNodeDeleted), or with zk.EventNotWatching when the session ends.
// The event's Path is a recipe path. A missing node is an error wrapping
// zk.ErrNoNode and leaves no watch (use ExistsW).
func (c *Client) GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	full, err := c.FullPath(path)
	if err != nil {
		return nil, nil, nil, err
	}
	d, st, ch, err := c.eng().GetW(ctx, full)
	if err != nil {
		return nil, nil, nil, opError("get", path, err)
	}
	return d, st, c.unfix(ch), nil
}

// ExistsW reports whether a node exists and leaves a one-shot watch on it,
// which fires on its creation, change or deletion. The event's Path is a
// recipe path.
func (c *Client) ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	full, err := c.FullPath(path)
	if err != nil {
		return false, nil, nil, err
	}
	ok, st, ch, err := c.eng().ExistsW(ctx, full)
	if err != nil {
		return false, nil, nil, opError("exists", path, err)
	}
	return ok, st, c.unfix(ch), nil
}

// ChildrenW lists a node's children and leaves a one-shot watch on the
// list, which fires when a child is added or removed
// (zk.EventNodeChildrenChanged) or the node is deleted. The event's Path
// is a recipe path.
func (c *Client) ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	full, err := c.FullPath(path)
	if err != nil {
		return nil, nil, nil, err
	}
	kids, st, ch, err := c.eng().ChildrenW(ctx, full)
	if err != nil {
		return nil, nil, nil, opError("children", path, err)
	}
	return kids, st, c.unfix(ch), nil
}

// unfix hands on the one event of a watch with its path made a recipe
// path. Without a namespace the server's channel is returned as it is.
func (c *Client) unfix(ch <-chan zk.Event) <-chan zk.Event {
	e := c.eng()
	if e.Namespace().String() == "" {
		return ch
	}
	out := make(chan zk.Event, 1)
	go func() {
		defer close(out)
		if ev, ok := <-ch; ok {
			ev.Path = e.Namespace().Strip(ev.Path)
			out <- ev
		}
	}()
	return out
}

// opError names the operation and the path in err, leaving the client's
// own sentinels (nil or closed client, a bad argument) as they are.
func opError(op, path string, err error) error {
	if err == nil || isSentinel(err) {
		return err
	}
	return fmt.Errorf("zkrecipes: %s %s: %w", op, path, zkerr.Explain(err))
}

func isSentinel(err error) bool {
	return errors.Is(err, ErrNilClient) || errors.Is(err, ErrClosed) || errors.Is(err, ErrInvalidArgument)
}

// Retry runs op until it succeeds, fails with an error that IsRetryable
// does not accept, the retry policy gives up, ctx ends or the client is
// closed. The error of the last attempt is returned, wrapping ctx.Err() when
// ctx ended.
func (c *Client) Retry(ctx context.Context, op func() error) error { return c.eng().Retry(ctx, op) }
