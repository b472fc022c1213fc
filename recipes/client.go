package recipes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
)

func init() {
	engine.SetUnwrap(func(client any) *engine.Client {
		if c, ok := client.(*Client); ok && c != nil {
			return c.e
		}
		return nil
	})
}

// Client is the one object every recipe takes. It owns a *zk.Conn, drains
// its session events as they happen, turns them into Curator's connection
// states and publishes those to listeners and to the holds recipes hand out.
//
// A Client is safe for concurrent use. Close it when done: Close ends the
// session (so the server deletes its ephemeral nodes at once) and leaves no
// goroutine behind.
type Client struct {
	e *engine.Client
}

// Connect dials the given servers ("host:port" each) and waits until the
// first session is established, ctx ends or the connect timeout
// (WithConnectTimeout, 15s by default) passes; ctx bounds the WithAuth
// requests too. The returned Client owns the connection. Every connection is
// dialled through a Wire (around the WithDialer dialer, if given), which
// reads the negotiated session timeout from the server's handshake reply
// and the times of the requests the server answered, from which LOST is
// timed.
func Connect(ctx context.Context, servers []string, opts ...Option) (*Client, error) {
	e, err := engine.Connect(ctx, servers, engineOptions(opts)...)
	if err != nil {
		return nil, err
	}
	return &Client{e: e}, nil
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
// What the Client knows of an adopted connection depends on how it was
// dialled. Dialled through a Wire (zk.WithDialer(w.Dial)) and given
// WithWire(w), it knows what Connect knows: the negotiated session timeout
// and when the server last answered. Otherwise go-zookeeper keeps both to
// itself: the Client takes WithSessionTimeout's value (give it the timeout
// the connection was dialled with; the server may have granted less) and,
// since go-zookeeper reports a disconnect at most 2/3 of the session
// timeout after the last byte, declares LOST 1/3 of that timeout after
// SUSPENDED: never after the server may expire the session, but possibly
// before, for a session that then comes back (see RECONNECTED).
func NewClient(ctx context.Context, conn *zk.Conn, events <-chan zk.Event, opts ...Option) (*Client, error) {
	e, err := engine.NewClient(ctx, conn, events, engineOptions(opts)...)
	if err != nil {
		return nil, err
	}
	return &Client{e: e}, nil
}

func engineOptions(opts []Option) []engine.Option {
	out := make([]engine.Option, len(opts))
	for i, o := range opts {
		if o != nil {
			out[i] = engine.Option(o)
		}
	}
	return out
}

// eng returns the engine client, nil for a nil Client (whose methods then
// return ErrNilClient).
func (c *Client) eng() *engine.Client {
	if c == nil {
		return nil
	}
	return c.e
}

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

// Conn returns the underlying go-zookeeper connection, for operations this
// package does not wrap. Requests made on it are not counted in Stats.
func (c *Client) Conn() *zk.Conn { return c.eng().Conn() }

// Namespace returns the path prefix applied to every recipe path ("" for none).
func (c *Client) Namespace() string { return c.eng().Namespace() }

// FullPath validates a recipe path and applies the client's namespace to it,
// giving the path as the server knows it.
func (c *Client) FullPath(p string) (string, error) { return c.eng().FullPath(p) }

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
	return c.eng().Listen(func(s engine.State) { fn(State(s)) })
}

// Subscribe returns a channel that receives the current state (unless the
// client has not had a session yet), then every state transition, in
// order. Transitions queue without bound while the reader is slow. The
// channel is closed by the returned function or when the client closes.
func (c *Client) Subscribe() (<-chan State, func()) {
	return engine.SubscribeStates(c.eng(), func(s engine.State) State { return State(s) })
}

// Stats returns the request counters.
func (c *Client) Stats() Stats { return Stats(c.eng().Stats()) }

// The methods below are the node operations, counted in Stats. Paths are
// recipe paths: the namespace is applied, as it is to every path a recipe
// takes (see FullPath), and paths returned are without it. On a nil Client
// they return ErrNilClient, on a closed one ErrClosed. Each returns when
// its reply arrives or ctx ends, whichever comes first, even while the
// request is in flight on a stalled link (the reply is then dropped, and a
// node a create made is deleted); the error then wraps ctx.Err(). Errors
// name the operation and the full path.

// Create creates a node with the ACL the client's provider gives for it,
// and returns its path (with the sequence number a sequential node gets).
func (c *Client) Create(ctx context.Context, path string, data []byte, flags int32) (string, error) {
	full, err := c.eng().WritablePath(path)
	if err != nil {
		return "", err
	}
	p, err := c.eng().Create(ctx, full, data, flags)
	if err != nil {
		return "", opError("create", full, err)
	}
	return c.eng().StripNamespace(p), nil
}

// Delete deletes a node (version -1 for any).
func (c *Client) Delete(ctx context.Context, path string, version int32) error {
	full, err := c.eng().WritablePath(path)
	if err != nil {
		return err
	}
	return opError("delete", full, c.eng().Delete(ctx, full, version))
}

// Get reads a node's data.
func (c *Client) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	full, err := c.FullPath(path)
	if err != nil {
		return nil, nil, err
	}
	d, st, err := c.eng().Get(ctx, full)
	return d, st, opError("get", full, err)
}

// Exists reports whether a node exists.
func (c *Client) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	full, err := c.FullPath(path)
	if err != nil {
		return false, nil, err
	}
	ok, st, err := c.eng().Exists(ctx, full)
	return ok, st, opError("exists", full, err)
}

// Children lists a node's children; the Stat is the parent's.
func (c *Client) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	full, err := c.FullPath(path)
	if err != nil {
		return nil, nil, err
	}
	kids, st, err := c.eng().Children(ctx, full)
	return kids, st, opError("children", full, err)
}

// Set writes a node's data.
func (c *Client) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	full, err := c.eng().WritablePath(path)
	if err != nil {
		return nil, err
	}
	st, err := c.eng().Set(ctx, full, data, version)
	return st, opError("set", full, err)
}

// Sync asks the server the client is connected to to catch up with the
// leader on path, so that a read after it sees every write committed
// before it (a follower may lag behind).
func (c *Client) Sync(ctx context.Context, path string) error {
	full, err := c.FullPath(path)
	if err != nil {
		return err
	}
	return opError("sync", full, c.eng().Sync(ctx, full))
}

// Multi runs ops (on recipe paths: the client's namespace is applied) as
// one transaction; creates get the ACL the client's provider gives. A zero
// Op is refused (ErrInvalidArgument). When the server refuses the
// transaction, the error names the first failing op and its full path and
// wraps the server's error for it (go-zookeeper reports only a generic
// one), and the responses say which; their paths are recipe paths. When
// ctx ends first the transaction may or may not have been applied.
func (c *Client) Multi(ctx context.Context, ops ...Op) ([]zk.MultiResponse, error) {
	e := c.eng()
	if err := e.Check(); err != nil {
		return nil, err
	}
	full, err := e.NamespaceOps("multi", ops)
	if err != nil {
		return nil, err
	}
	res, err := e.Multi(ctx, full...)
	for i := range res {
		res[i].String = e.StripNamespace(res[i].String)
	}
	if err != nil {
		return res, engine.MultiError("multi", full, res, err)
	}
	return res, nil
}

// opError names the operation and the path in err, leaving the client's
// own sentinels (nil or closed client, a bad argument) as they are.
func opError(op, path string, err error) error {
	if err == nil || isSentinel(err) {
		return err
	}
	return fmt.Errorf("zkrecipes: %s %s: %w", op, path, err)
}

func isSentinel(err error) bool {
	return errors.Is(err, ErrNilClient) || errors.Is(err, ErrClosed) || errors.Is(err, ErrInvalidArgument)
}

// Retry runs op until it succeeds, fails with an error that IsRetryable
// does not accept, the retry policy gives up, ctx ends or the client is
// closed. The error of the last attempt is returned, wrapping ctx.Err() when
// ctx ended.
func (c *Client) Retry(ctx context.Context, op func() error) error { return c.eng().Retry(ctx, op) }

// Stats counts the requests a Client sent, by kind. Tests use it to prove
// round-trip counts; users can export it as metrics.
type Stats struct {
	Creates  uint64 // create requests (any mode, including containers)
	Deletes  uint64 // delete requests
	GetData  uint64 // getData requests, with or without a watch
	Exists   uint64 // exists requests, with or without a watch
	Children uint64 // getChildren requests, with or without a watch
	SetData  uint64 // setData requests
	Multis   uint64 // multi requests
	Syncs    uint64 // sync requests
	Watches  uint64 // watches set (a subset of the reads above)
	// PendingDeletes is the number of guaranteed deletes still retrying in the background.
	PendingDeletes int64
}

// Sub returns the difference s - o of the request counters.
func (s Stats) Sub(o Stats) Stats { return Stats(engine.Stats(s).Sub(engine.Stats(o))) }
