package recipes

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Client is the one object every recipe takes. It owns a *zk.Conn, drains
// its session events as they happen, turns them into Curator's connection
// states and publishes those to listeners and to the holds recipes hand out.
//
// A Client is safe for concurrent use. Close it when done: Close ends the
// session (so the server deletes its ephemeral nodes at once) and leaves no
// goroutine behind.
type Client struct {
	conn *zk.Conn
	cfg  config
	log  *slog.Logger

	inbox inbox // session events from go-zookeeper, drained at once

	mu        sync.Mutex
	state     State
	sessionID int64
	lost      bool          // LOST declared for the current session
	suspendCh chan struct{} // closed on SUSPENDED, LOST and Close
	lostCh    chan struct{} // closed on LOST and Close
	changeCh  chan struct{} // closed on every transition
	listeners map[uint64]*listener
	nextID    uint64
	closed    bool
	timer     *time.Timer
	timerGen  uint64

	negotiated atomic.Int64  // negotiated session timeout, in nanoseconds
	handshake  chan struct{} // closed when go-zookeeper first logs a handshake
	handOnce   sync.Once
	closeCh    chan struct{}
	closeOnce  sync.Once
	wg         sync.WaitGroup // run loop, event pump, background deletes
	pumpDone   chan struct{}

	stats     counters
	knowledge knowledge
}

// Connect dials the given servers ("host:port" each) and waits until the
// first session is established or the connect timeout (WithConnectTimeout)
// passes. The returned Client owns the connection.
func Connect(servers []string, opts ...Option) (*Client, error) {
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w: no servers", ErrInvalidArgument)
	}
	c := newClient(cfg)
	zkopts := []func(*zk.Conn){
		zk.WithLogger(&zkLogAdapter{c: c, next: cfg.zkLogger}),
		zk.WithEventCallback(c.inbox.push),
	}
	if cfg.dialer != nil {
		zkopts = append(zkopts, zk.WithDialer(cfg.dialer))
	}
	if cfg.hostProvider != nil {
		zkopts = append(zkopts, zk.WithHostProvider(cfg.hostProvider))
	}
	if cfg.maxBufferSize > 0 {
		zkopts = append(zkopts, zk.WithMaxBufferSize(cfg.maxBufferSize))
	}
	conn, events, err := zkConnect(servers, cfg.sessionTimeout, zkopts)
	if err != nil {
		return nil, fmt.Errorf("zkrecipes: connect: %w", err)
	}
	c.conn = conn
	c.start(events, false)
	if err := c.afterStart(); err != nil {
		c.Close()
		return nil, err
	}
	if c.cfg.connectTimeout > 0 {
		// go-zookeeper logs the negotiated timeout just after it reports the
		// session: wait for that line, so SessionTimeout is right at once.
		select {
		case <-c.handshake:
		case <-time.After(time.Second):
		}
	}
	return c, nil
}

// zkConnect calls zk.Connect with options whose type go-zookeeper does not
// export; a func(*zk.Conn) is assignable to it.
func zkConnect(servers []string, timeout time.Duration, opts []func(*zk.Conn)) (*zk.Conn, <-chan zk.Event, error) {
	switch len(opts) {
	case 2:
		return zk.Connect(servers, timeout, opts[0], opts[1])
	case 3:
		return zk.Connect(servers, timeout, opts[0], opts[1], opts[2])
	case 4:
		return zk.Connect(servers, timeout, opts[0], opts[1], opts[2], opts[3])
	default:
		return zk.Connect(servers, timeout, opts[0], opts[1], opts[2], opts[3], opts[4])
	}
}

// NewClient adopts a connection the caller already has, together with the
// event channel zk.Connect returned for it. The Client drains that channel
// from now on and takes ownership of the connection: Close closes it.
// Events go-zookeeper dropped before the call are lost; the Client starts
// from the connection's current state. Options that configure dialing
// (WithDialer, WithHostProvider, WithZKLogger, WithMaxBufferSize) have no
// effect here. go-zookeeper does not expose the negotiated session timeout
// of a connection it made, so give WithSessionTimeout the timeout the
// connection was dialled with: the Client declares LOST after SUSPENDED
// has lasted that long.
func NewClient(conn *zk.Conn, events <-chan zk.Event, opts ...Option) (*Client, error) {
	if conn == nil {
		return nil, fmt.Errorf("%w: nil *zk.Conn", ErrInvalidArgument)
	}
	if events == nil {
		return nil, fmt.Errorf("%w: nil event channel", ErrInvalidArgument)
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	c := newClient(cfg)
	c.conn = conn
	c.start(events, true)
	if conn.State() == zk.StateHasSession {
		c.inbox.push(zk.Event{Type: zk.EventSession, State: zk.StateHasSession})
	}
	if err := c.afterStart(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func newClient(cfg config) *Client {
	c := &Client{
		cfg:       cfg,
		log:       cfg.logger,
		suspendCh: make(chan struct{}),
		lostCh:    make(chan struct{}),
		changeCh:  make(chan struct{}),
		listeners: map[uint64]*listener{},
		closeCh:   make(chan struct{}),
		pumpDone:  make(chan struct{}),
		handshake: make(chan struct{}),
	}
	c.inbox.init()
	c.negotiated.Store(int64(cfg.sessionTimeout))
	c.knowledge.init()
	return c
}

func (c *Client) start(events <-chan zk.Event, forward bool) {
	c.wg.Add(2)
	go func() { // pump: go-zookeeper's channel must never fill up
		defer c.wg.Done()
		defer close(c.pumpDone)
		for ev := range events {
			if forward {
				c.inbox.push(ev)
			}
		}
	}()
	go c.run()
}

// afterStart waits for the first session and applies the auth options.
func (c *Client) afterStart() error {
	if c.cfg.connectTimeout > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.connectTimeout)
		defer cancel()
		if err := c.WaitConnected(ctx); err != nil {
			return fmt.Errorf("zkrecipes: no session within %v: %w", c.cfg.connectTimeout, err)
		}
	}
	for _, a := range c.cfg.auth {
		if err := c.AddAuth(a.scheme, a.auth); err != nil {
			return err
		}
	}
	return nil
}

// Conn returns the underlying go-zookeeper connection, for operations this
// package does not wrap. Requests made on it are not counted in Stats.
func (c *Client) Conn() *zk.Conn { return c.conn }

// Namespace returns the path prefix applied to every recipe path ("" for none).
func (c *Client) Namespace() string { return c.cfg.namespace }

// ErrorPolicy returns the client's error policy.
func (c *Client) ErrorPolicy() ErrorPolicy { return c.cfg.errorPolicy }

// Logger returns the client's logger (silent unless WithLogger was given).
func (c *Client) Logger() *slog.Logger { return c.log }

// ACL returns the ACL list to use when creating path.
func (c *Client) ACL(path string) []zk.ACL { return c.cfg.acl.ACLFor(path) }

// SessionTimeout returns the negotiated session timeout (the requested one
// until the server has answered).
func (c *Client) SessionTimeout() time.Duration { return time.Duration(c.negotiated.Load()) }

// State returns the current connection state.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// SessionID returns the id of the session the client last had.
func (c *Client) SessionID() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// AddAuth adds authentication info (for example scheme "digest" with
// "user:password") to the session; go-zookeeper sends it again after every
// reconnect.
func (c *Client) AddAuth(scheme string, auth []byte) error {
	if err := c.check(); err != nil {
		return err
	}
	if err := c.conn.AddAuth(scheme, auth); err != nil {
		return fmt.Errorf("zkrecipes: add auth %q: %w", scheme, err)
	}
	return nil
}

// check returns ErrNilClient or ErrClosed when the client cannot be used.
func (c *Client) check() error {
	if c == nil || c.conn == nil {
		return ErrNilClient
	}
	select {
	case <-c.closeCh:
		return ErrClosed
	default:
		return nil
	}
}

// Check returns ErrNilClient for a nil Client, ErrClosed for a closed one,
// and nil otherwise. Recipes call it before any work.
func (c *Client) Check() error { return c.check() }

// Done returns a channel that is closed when the client is closed.
func (c *Client) Done() <-chan struct{} { return c.closeCh }

// WaitConnected blocks until the client has a session (CONNECTED,
// RECONNECTED or READ_ONLY), ctx ends or the client is closed.
func (c *Client) WaitConnected(ctx context.Context) error {
	for {
		if err := c.check(); err != nil {
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
			return ErrClosed
		}
	}
}

// Snapshot is a consistent view of the client's connection state together
// with the signals recipes build holds on.
type Snapshot struct {
	State     State
	SessionID int64
	// Changed is closed at the next state transition.
	Changed <-chan struct{}
	// Suspended is closed at the next SUSPENDED or LOST (or Close).
	Suspended <-chan struct{}
	// Lost is closed when this session is LOST (or at Close).
	Lost <-chan struct{}
}

// Snapshot returns the current state and signals.
func (c *Client) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Snapshot{State: c.state, SessionID: c.sessionID, Changed: c.changeCh, Suspended: c.suspendCh, Lost: c.lostCh}
}

// HoldSignal returns, from a snapshot, the channel that closes when a hold
// taken in that snapshot may be gone under the client's error policy.
func (c *Client) HoldSignal(s Snapshot) <-chan struct{} {
	if c.cfg.errorPolicy == PolicySession {
		return s.Lost
	}
	return s.Suspended
}

// Close ends the session and stops every goroutine the client started. It
// is safe to call more than once.
func (c *Client) Close() error {
	if c == nil {
		return ErrNilClient
	}
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		close(c.closeCh)
		closeIfOpen(c.suspendCh)
		closeIfOpen(c.lostCh)
		closeIfOpen(c.changeCh)
		if c.timer != nil {
			c.timer.Stop()
		}
		ls := c.listeners
		c.listeners = map[uint64]*listener{}
		c.mu.Unlock()
		for _, l := range ls {
			l.stop()
		}
		if c.conn != nil {
			c.conn.Close()
			// go-zookeeper closes its event channel once its loop has ended.
			select {
			case <-c.pumpDone:
			case <-time.After(10 * time.Second):
				c.log.Warn("zkrecipes: go-zookeeper did not stop within 10s")
			}
		}
		c.inbox.close()
		c.wg.Wait()
	})
	return nil
}

func closeIfOpen(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// run applies session events in order.
func (c *Client) run() {
	defer c.wg.Done()
	for {
		evs, ok := c.inbox.take()
		if !ok {
			return
		}
		for _, ev := range evs {
			c.apply(ev)
		}
	}
}

// lostTimeout is an internal event: SUSPENDED has lasted the session timeout.
const lostTimeout zk.EventType = -1000

func (c *Client) apply(ev zk.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if ev.Type == lostTimeout {
		if uint64(ev.State) == c.timerGen && c.state == StateSuspended && !c.lost {
			c.log.Warn("zkrecipes: declaring session lost: suspended longer than the session timeout",
				"session", fmt.Sprintf("0x%x", c.sessionID), "timeout", c.SessionTimeout())
			c.declareLost()
		}
		return
	}
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		sid := c.conn.SessionID()
		c.stopTimer()
		switch {
		case c.state == StateLatent:
			c.sessionID = sid
			c.transition(StateConnected)
		case c.state == StateConnected || c.state == StateReconnected:
			if sid != c.sessionID { // a new session without a disconnect seen
				c.declareLost()
				c.sessionID = sid
				c.lost = false
				c.renew()
				c.transition(StateReconnected)
			}
		default:
			if sid != c.sessionID && !c.lost {
				c.declareLost()
			}
			c.sessionID = sid
			c.lost = false
			c.renew()
			c.transition(StateReconnected)
		}
	case zk.StateConnectedReadOnly:
		if c.state != StateReadOnly {
			c.renew()
			c.transition(StateReadOnly)
		}
	case zk.StateDisconnected:
		if c.state.IsConnected() {
			closeIfOpen(c.suspendCh)
			c.transition(StateSuspended)
			c.startTimer()
		}
	case zk.StateExpired:
		c.stopTimer()
		if !c.lost && c.state != StateLatent {
			c.declareLost()
		}
	case zk.StateAuthFailed:
		c.log.Error("zkrecipes: authentication failed")
	}
}

// declareLost enters LOST; c.mu is held.
func (c *Client) declareLost() {
	c.lost = true
	c.stopTimer()
	closeIfOpen(c.suspendCh)
	closeIfOpen(c.lostCh)
	c.knowledge.reset()
	c.transition(StateLost)
}

// renew opens fresh hold signals after a (re)connection; c.mu is held.
func (c *Client) renew() {
	select {
	case <-c.suspendCh:
		c.suspendCh = make(chan struct{})
	default:
	}
	select {
	case <-c.lostCh:
		c.lostCh = make(chan struct{})
	default:
	}
}

func (c *Client) transition(s State) {
	c.log.Info("zkrecipes: connection state", "state", s.String(), "session", fmt.Sprintf("0x%x", c.sessionID))
	c.state = s
	close(c.changeCh)
	c.changeCh = make(chan struct{})
	for _, l := range c.listeners {
		l.post(s)
	}
}

func (c *Client) startTimer() {
	c.stopTimer()
	gen := c.timerGen
	c.timer = time.AfterFunc(c.SessionTimeout(), func() {
		c.inbox.push(zk.Event{Type: lostTimeout, State: zk.State(gen)})
	})
}

func (c *Client) stopTimer() {
	c.timerGen++
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// Listen registers fn to be called with every state transition, in order,
// on a goroutine of its own: a slow fn delays only its own later calls,
// never the client. The returned function removes the listener; it, and
// Close, wait up to 5s for a call in progress to return.
func (c *Client) Listen(fn func(State)) (remove func()) {
	l := newListener(fn, nil, nil)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		l.stop()
		return func() {}
	}
	id := c.nextID
	c.nextID++
	c.listeners[id] = l
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.listeners, id)
		c.mu.Unlock()
		l.stop()
	}
}

// Subscribe returns a channel that receives every state transition in
// order. Transitions queue without bound while the reader is slow. The
// channel is closed by the returned function or when the client closes.
func (c *Client) Subscribe() (<-chan State, func()) {
	ch := make(chan State)
	done := make(chan struct{})
	l := newListener(func(s State) {
		select {
		case ch <- s:
		case <-done:
		}
	}, done, func() { close(ch) })
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		l.stop()
		return ch, func() {}
	}
	id := c.nextID
	c.nextID++
	c.listeners[id] = l
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.listeners, id)
		c.mu.Unlock()
		l.stop()
	}
}

// listener delivers states to one callback from an unbounded queue.
type listener struct {
	mu       sync.Mutex
	queue    []State
	wake     chan struct{}
	done     chan struct{}
	finished chan struct{}
	once     sync.Once
	fn       func(State)
	onStop   func()
	gid      atomic.Uint64
}

func newListener(fn func(State), done chan struct{}, onStop func()) *listener {
	if done == nil {
		done = make(chan struct{})
	}
	l := &listener{fn: fn, wake: make(chan struct{}, 1), done: done, finished: make(chan struct{}), onStop: onStop}
	started := make(chan struct{})
	go func() {
		l.gid.Store(GoroutineID())
		close(started)
		l.loop()
	}()
	<-started
	return l
}

func (l *listener) post(s State) {
	l.mu.Lock()
	l.queue = append(l.queue, s)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *listener) loop() {
	defer func() {
		if l.onStop != nil {
			l.onStop()
		}
		close(l.finished)
	}()
	for {
		select {
		case <-l.done:
			return
		case <-l.wake:
		}
		for {
			l.mu.Lock()
			if len(l.queue) == 0 {
				l.mu.Unlock()
				break
			}
			s := l.queue[0]
			l.queue = l.queue[1:]
			l.mu.Unlock()
			select {
			case <-l.done:
				return
			default:
			}
			l.fn(s)
		}
	}
}

// stop ends delivery and waits for the listener goroutine to finish,
// unless called from that goroutine (a callback removing itself). A
// callback that is still busy after listenerStopWait is left to finish on
// its own, so that a stuck listener cannot hang Close.
func (l *listener) stop() {
	l.once.Do(func() { close(l.done) })
	if GoroutineID() == l.gid.Load() {
		return
	}
	t := time.NewTimer(listenerStopWait)
	defer t.Stop()
	select {
	case <-l.finished:
	case <-t.C:
	}
}

const listenerStopWait = 5 * time.Second

// inbox is an unbounded FIFO of events, so that the go-zookeeper callback
// never blocks.
type inbox struct {
	mu     sync.Mutex
	evs    []zk.Event
	wake   chan struct{}
	closed bool
}

func (q *inbox) init() { q.wake = make(chan struct{}, 1) }

func (q *inbox) push(ev zk.Event) {
	q.mu.Lock()
	if !q.closed {
		q.evs = append(q.evs, ev)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *inbox) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns the queued events, blocking until there are some; ok is
// false once the inbox is closed.
func (q *inbox) take() ([]zk.Event, bool) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, false
		}
		if len(q.evs) > 0 {
			evs := q.evs
			q.evs = nil
			q.mu.Unlock()
			return evs, true
		}
		q.mu.Unlock()
		<-q.wake
	}
}

// zkLogAdapter forwards go-zookeeper's log lines to slog at debug level and
// reads the negotiated session timeout from the line go-zookeeper prints
// after each handshake (the only place it makes that value visible).
type zkLogAdapter struct {
	c    *Client
	next zk.Logger
}

const authenticatedFormat = "authenticated: id=%d, timeout=%d"

func (a *zkLogAdapter) Printf(format string, args ...any) {
	if format == authenticatedFormat && len(args) == 2 {
		if ms, ok := args[1].(int32); ok && ms > 0 {
			a.c.negotiated.Store(int64(time.Duration(ms) * time.Millisecond))
		}
		a.c.handOnce.Do(func() { close(a.c.handshake) })
	}
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
