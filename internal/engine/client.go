package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// Client is the one object every recipe takes. It owns a *zk.Conn, drains
// its session events as they happen, turns them into Curator's connection
// states and publishes those to listeners and to the holds recipes hand out.
//
// A Client is safe for concurrent use. Close it when done: Close ends the
// session (so the server deletes its ephemeral nodes at once) and leaves no
// goroutine behind.
type Client struct {
	conn    *zk.Conn
	cfg     Config
	log     *slog.Logger
	wire    *wire    // nil for an adopted connection dialled without one
	servers []string // the addresses Connect dials (nil for an adopted connection)

	inbox *notify.Queue[zk.Event] // session events from go-zookeeper, drained at once

	sm stateMachine // the connection state, its signals and the nodes contests hold (statemachine.go)

	del deleter // guaranteed deletes (delete.go)

	closeCh   chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup // run loop, event pump, background deletes
	pumpDone  chan struct{}

	stats     counters
	knowledge knowledge
	met       *instruments // nil without WithMetrics: every measurement checks

	hub     watchHub       // routes watch events and states to the followers
	adopted bool           // NewClient's: events come through go-zookeeper's channel, which drops when full
	pw      pwatches       // persistent watches (pwatch.go)
	shared  sharedFollower // the Follower SharedFollower hands out (follow_client.go)

	noContainers atomic.Bool // the server refused a container create (refused.go)

	hosts *ensembleHosts // the host provider that follows the ensemble; nil without (ensemble.go)
}

// Connect dials the given servers ("host:port" each) and waits until the
// first session is established, ctx ends or the connect timeout
// (WithConnectTimeout) passes. The returned Client owns the connection.
// Every connection is dialled through a Wire (around the WithDialer
// dialer, if given), which
// reads the negotiated session timeout from the server's handshake reply
// and the send times of the requests the server answered, from which LOST
// is timed.
func Connect(ctx context.Context, servers []string, cfg Config) (*Client, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	cfg = cfg.completed()
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w: no servers", zkerr.ErrInvalidArgument)
	}
	for _, srv := range servers {
		if strings.TrimSpace(srv) == "" {
			return nil, fmt.Errorf("%w: an empty server address in %q", zkerr.ErrInvalidArgument, servers)
		}
	}
	c := newClient(cfg)
	c.servers = zk.FormatServers(servers) // as go-zookeeper dials them: port 2181 where none is given
	c.wire = newWire(cfg.Dialer)
	if cfg.TLS != nil {
		c.wire.dial = tlsDialer(c.wire.dial, cfg.TLS)
	}
	if cfg.SASL != nil {
		c.wire.auth = newWireAuth(cfg.SASL, c.log)
	}
	c.wire.onUsable = c.pw.kickNow
	zkopts := []func(*zk.Conn){
		zk.WithLogger(&zkLogAdapter{c: c, next: cfg.ZKLogger}),
		zk.WithEventCallback(c.event),
		zk.WithDialer(c.wire.Dial),
	}
	hosts := ensembleHostsFor(cfg)
	if hosts != nil {
		zkopts = append(zkopts, zk.WithHostProvider(hosts))
	} else if cfg.HostProvider != nil {
		zkopts = append(zkopts, zk.WithHostProvider(cfg.HostProvider))
	}
	if cfg.MaxBufferSize > 0 {
		zkopts = append(zkopts, zk.WithMaxBufferSize(cfg.MaxBufferSize))
	}
	conn, events, err := zk.Connect(servers, cfg.SessionTimeout, allOf(zkopts))
	if err != nil {
		return nil, fmt.Errorf("zkrecipes: connect: %w", err)
	}
	c.conn = conn
	c.start(events, false)
	if err := c.afterStart(ctx); err != nil {
		c.closeOnce.Do(func() { _ = c.shutdown(nil) }) // no session worth a close request: cut at once
		return nil, err
	}
	if hosts != nil {
		(&ensembleTracker{c: c, hosts: hosts, secure: cfg.TLS != nil}).start()
	}
	return c, nil
}

// allOf folds go-zookeeper options (whose type it does not export) into
// one: each is a func(*zk.Conn), and so is the result.
func allOf(opts []func(*zk.Conn)) func(*zk.Conn) {
	return func(conn *zk.Conn) {
		for _, o := range opts {
			o(conn)
		}
	}
}

// NewClient adopts a connection the caller already has, together with the
// event channel zk.Connect returned for it. The Client drains that channel
// from now on and takes ownership of the connection: Close closes it.
// Events go-zookeeper dropped before the call are lost; the Client starts
// from the connection's current state. Options that configure dialing
// (WithDialer, WithHostProvider, WithZKLogger, WithMaxBufferSize) have no
// effect here.
//
// What the Client knows of an adopted connection depends on how it was
// dialled. Dialled through a Wire (zk.WithDialer(w.Dial)) and given it in
// Config.wire (the engine's tests), it knows what Connect knows: the negotiated session timeout
// and when the server last answered. Otherwise go-zookeeper keeps both to
// itself: the Client takes WithSessionTimeout's value (give it the timeout the
// connection was dialled with; the server may have granted less) and,
// since go-zookeeper reports a disconnect at most 2/3 of the session
// timeout after the last byte, declares LOST 1/3 of that timeout after
// SUSPENDED: never after the server may expire the session, but possibly
// before, for a session that then comes back (see RECONNECTED).
//
// go-zookeeper drops events when its event channel is full, so on an
// adopted connection each watch a Follower leaves also waits on its own
// channel (a goroutine per armed watch; a connection Connect dialled
// needs none, its event callback seeing every event).
func NewClient(ctx context.Context, conn *zk.Conn, events <-chan zk.Event, cfg Config) (*Client, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	if conn == nil {
		return nil, fmt.Errorf("%w: nil *zk.Conn", zkerr.ErrInvalidArgument)
	}
	if events == nil {
		return nil, fmt.Errorf("%w: nil event channel", zkerr.ErrInvalidArgument)
	}
	cfg = cfg.completed()
	c := newClient(cfg)
	c.adopted = true
	c.wire = cfg.wire
	c.conn = conn
	c.start(events, true)
	if conn.State() == zk.StateHasSession {
		c.inbox.Push(zk.Event{Type: zk.EventSession, State: zk.StateHasSession})
	}
	if err := c.afterStart(ctx); err != nil {
		c.closeOnce.Do(func() { _ = c.shutdown(nil) }) // no session worth a close request: cut at once
		return nil, err
	}
	return c, nil
}

func newClient(cfg Config) *Client {
	c := &Client{
		cfg:      cfg,
		log:      cfg.Logger,
		inbox:    notify.NewQueue[zk.Event](),
		closeCh:  make(chan struct{}),
		pumpDone: make(chan struct{}),
	}
	c.sm = stateMachine{c: c, suspendCh: make(chan struct{}), lostCh: make(chan struct{}),
		changeCh: make(chan struct{}), nodes: map[string]int64{}}
	c.del = deleter{c: c, jobs: make(chan deleteJob)} // unbuffered: see deleter.delete
	c.knowledge.init()
	c.pw.init(c)
	if cfg.Metrics != nil {
		c.met = newInstruments(cfg.Metrics, cfg.Namespace, cfg.MetricsPath)
	}
	return c
}

// event takes one event of the connection: a watch's goes to the
// followers at once (before go-zookeeper hands it to the watch's channel,
// and before the reply to any later request is read), a session event to
// the state machine (which takes no other). An adopted connection's events come late through its
// event channel (which drops them when full): there, each watch hears its
// own channel instead (see backstop), since an event this late could
// reach a watch set again after it fired.
func (c *Client) event(ev zk.Event) {
	if !c.adopted {
		if c.pw.n.Load() > 0 {
			c.pw.route(ev)
		}
		c.hub.dispatch(ev)
	}
	if ev.Type == zk.EventSession { // the state machine takes nothing else
		c.inbox.Push(ev)
	}
}

func (c *Client) start(events <-chan zk.Event, forward bool) {
	c.wg.Add(3)
	go c.del.loop()
	go func() { // pump: go-zookeeper's channel must never fill up
		defer c.wg.Done()
		defer close(c.pumpDone)
		for ev := range events {
			if forward {
				c.event(ev)
			}
		}
	}()
	go c.sm.run()
}

// afterStart waits for the first session (unless WithConnectTimeout(0)
// asked not to) and adds the WithAuth credentials.
func (c *Client) afterStart(ctx context.Context) error {
	if c.cfg.ConnectTimeout > 0 {
		if err := c.awaitFirstSession(ctx); err != nil {
			return err
		}
	}
	for _, a := range c.cfg.Auth {
		if err := c.AddAuth(ctx, a.Scheme, a.Data); err != nil {
			return err
		}
	}
	return nil
}

// awaitFirstSession waits for the first session within ctx and the
// connect timeout. A refused SASL authentication ends the wait at once:
// go-zookeeper would try the refused credentials for ever.
func (c *Client) awaitFirstSession(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer cancel()
	var refused <-chan struct{}
	if c.wire != nil && c.wire.auth != nil {
		refused = c.wire.auth.failed
	}
	go func() {
		select {
		case <-refused:
			cancel()
		case <-wctx.Done():
		}
	}()
	err := c.WaitConnected(wctx)
	if err == nil {
		return nil
	}
	if c.wire != nil && c.wire.auth != nil {
		if aerr := c.wire.auth.lastError(); aerr != nil && notify.IsClosed(refused) {
			return zkerr.Namedf("connect", "%w: %w", zk.ErrAuthFailed, aerr)
		}
	}
	if ctx.Err() != nil { // the caller's ctx, not the connect timeout
		return zkerr.Namedf("connect", "no session yet: %w", ctx.Err())
	}
	why := "is ZooKeeper running at the addresses given, and reachable from here?"
	if c.wire != nil {
		if derr := c.wire.LastDialError(); derr != nil {
			why = "last " + derr.Error()
		}
	}
	return zkerr.Namedf("connect", "no session within %v from %s (%s): %w", c.cfg.ConnectTimeout, strings.Join(c.servers, ","), why, err)
}

// Conn returns the underlying go-zookeeper connection, for operations this
// package does not wrap. Requests made on it are not counted in Stats.
func (c *Client) Conn() *zk.Conn {
	if c.unmade() {
		return nil
	}
	return c.conn
}

// unmade reports whether c is nil or a zero Client, one not made by
// Connect or NewClient (whose connection is set before either returns).
// Such a Client's methods return ErrNilClient, or a zero value for those
// that return no error; none panics.
func (c *Client) unmade() bool { return c == nil || c.conn == nil }

// ErrorPolicy returns the client's error policy.
func (c *Client) ErrorPolicy() zkstate.ErrorPolicy {
	if c == nil {
		return zkstate.PolicyStandard
	}
	return c.cfg.ErrorPolicy
}

// Logger returns the client's logger (silent unless WithLogger was given).
func (c *Client) Logger() *slog.Logger {
	if c == nil || c.log == nil {
		return discardLogger
	}
	return c.log
}

// SessionTimeout returns the session timeout the server granted, read from
// its handshake reply. Before the first session, and for an adopted
// connection without a Wire, it is the requested one (WithSessionTimeout).
func (c *Client) SessionTimeout() time.Duration {
	if c == nil {
		return 0
	}
	if c.wire != nil {
		if d := c.wire.SessionTimeout(); d > 0 {
			return d
		}
	}
	return c.cfg.SessionTimeout
}

// State returns the current connection state.
func (c *Client) State() zkstate.State {
	if c == nil {
		return zkstate.StateLatent
	}
	c.sm.mu.Lock()
	defer c.sm.mu.Unlock()
	return c.sm.state
}

// ConnSessionID returns the session of go-zookeeper's connection, which
// it sets before any request goes out on a new connection; SessionID
// follows it through the state machine, a little later. Read after a
// reply, it names the session the reply came in (or a later one): a
// read that found an ephemeral node gone proves it was deleted in the
// session only if ConnSessionID is still that session.
func (c *Client) ConnSessionID() int64 {
	if c.unmade() {
		return 0
	}
	return c.conn.SessionID()
}

// SessionID returns the id of the session the client last had.
func (c *Client) SessionID() int64 {
	if c == nil {
		return 0
	}
	c.sm.mu.Lock()
	defer c.sm.mu.Unlock()
	return c.sm.sessionID
}

// AddAuth adds authentication info (for example scheme "digest" with
// "user:password") to the session; go-zookeeper sends it again after every
// reconnect.
func (c *Client) AddAuth(ctx context.Context, scheme string, auth []byte) error {
	if !c.unmade() && c.wire != nil {
		c.wire.auths.Add(1) // the Wire waits for go-zookeeper to re-send it on each connection
	}
	_, err := send(c, ctx, reqAddAuth, func() (struct{}, error) {
		return struct{}{}, c.conn.AddAuth(scheme, auth)
	}, nil)
	if err != nil && !errors.Is(err, zkerr.ErrNilClient) && !errors.Is(err, zkerr.ErrClosed) && !errors.Is(err, zkerr.ErrInvalidArgument) {
		return fmt.Errorf("zkrecipes: add auth %q: %w", scheme, err)
	}
	return err
}

// Check returns ErrNilClient for a nil or zero Client, ErrClosed for a
// closed one, and nil otherwise. Recipes call it before any work.
func (c *Client) Check() error {
	if c.unmade() {
		return zkerr.ErrNilClient
	}
	select {
	case <-c.closeCh:
		return zkerr.ErrClientClosed
	default:
		return nil
	}
}

// Done returns a channel that is closed when the client is closed; a nil
// or zero Client's is closed already.
func (c *Client) Done() <-chan struct{} {
	if c == nil || c.closeCh == nil {
		return closedCh
	}
	return c.closeCh
}

// WaitConnected blocks until the client has a session (CONNECTED,
// RECONNECTED or READ_ONLY), ctx ends or the client is closed.
func (c *Client) WaitConnected(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	for {
		if err := c.Check(); err != nil {
			return err
		}
		snap := c.Snapshot()
		if snap.State.IsConnected() {
			return nil
		}
		select {
		case <-snap.Changed:
		case <-ctx.Done():
			return fmt.Errorf("zkrecipes: waiting for connection (state %v): %w", snap.State, ctx.Err())
		case <-c.closeCh:
			return zkerr.ErrClientClosed
		}
	}
}

// Snapshot is a consistent view of the client's connection state together
// with the signals recipes build holds on.
type Snapshot struct {
	State     zkstate.State
	SessionID int64
	// Changed is closed at the next state transition.
	Changed <-chan struct{}
	// Suspended is closed at the next SUSPENDED or LOST (or Close).
	Suspended <-chan struct{}
	// Lost is closed when this session is LOST (or at Close).
	Lost <-chan struct{}
}

// Snapshot returns the current state and signals; a nil or zero
// Client's are closed, as a closed Client's are.
func (c *Client) Snapshot() Snapshot {
	if c.unmade() {
		return Snapshot{Changed: closedCh, Suspended: closedCh, Lost: closedCh}
	}
	c.sm.mu.Lock()
	defer c.sm.mu.Unlock()
	return Snapshot{State: c.sm.state, SessionID: c.sm.sessionID, Changed: c.sm.changeCh, Suspended: c.sm.suspendCh, Lost: c.sm.lostCh}
}

// HoldSignal returns, from a snapshot, the channel that closes when a hold
// taken in that snapshot may be gone under the client's error policy.
func (c *Client) HoldSignal(s Snapshot) <-chan struct{} {
	if c.ErrorPolicy() == zkstate.PolicySession {
		return s.Lost
	}
	return s.Suspended
}

// zkLogAdapter forwards go-zookeeper's log lines to the WithZKLogger
// logger, else to slog at debug level.
type zkLogAdapter struct {
	c    *Client
	next zk.Logger
}

func (a *zkLogAdapter) Printf(format string, args ...any) {
	if a.next != nil {
		a.next.Printf(format, args...)
		return
	}
	if a.c.log.Enabled(context.Background(), slog.LevelDebug) {
		a.c.log.Debug("go-zookeeper: " + fmt.Sprintf(format, args...))
	}
}

// discardLogger is the default: silent.
var discardLogger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError + 100}))
