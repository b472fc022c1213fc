package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Wire watches the bytes go-zookeeper sends and receives, to learn what
// go-zookeeper does not make visible: the session timeout the server
// granted, read from each connection's ConnectResponse (the first frame the
// server sends: length, protocolVersion int32, timeOut int32, sessionId
// int64, passwd), and how long the server may still hold the session.
//
// The server expires a session one session timeout after the last packet
// it received from the client. The client cannot see that moment, but it
// has a lower bound: when a reply (or a ping's answer) arrives, the server
// had received the request it answers, so the server last heard from us no
// earlier than when we sent that request. Wire records the send time of
// each request frame it sees go out (client→server frames: length, xid
// int32, type int32, ...; pings have xid -2), and when a reply frame
// arrives (server→client: length, xid int32, zxid int64, err int32, ...)
// takes the send time of that xid. LastAnswered is the latest such send
// time, and the Client declares LOST one negotiated session timeout after
// it: never after the server may have expired the session, however slow
// the link. (Timing from the last byte received, as before, is late by the
// reply's one-way latency.) Watch events (xid -1) answer no request and
// leave it unchanged.
//
// Wire also keeps the zxid bookkeeping go-zookeeper v1.0.4 cannot keep
// without a data race: its receive goroutine writes the last zxid seen
// from each reply while, on a reconnection, another goroutine reads it for
// the setWatches request (conn.go, recvLoop and sendSetWatches; the race
// detector reports it when a session with watches resumes and a reply
// comes in first). So Wire records the zxid of each reply to a request and
// hands the reply on with a zxid of 0, which go-zookeeper ignores, and it
// writes the zxid itself where go-zookeeper would send its own: into the
// ConnectRequest's lastZxidSeen (the last zxid a reply carried, so the
// server still refuses a client that has seen more than it), and into
// each setWatches' relativeZxid (the zxid its connection began with, as
// the Java client does: a watch on a node that changed while the client
// was away fires on resume, even when a reply on the new connection
// carried a later zxid first). A refused handshake (the session expired)
// starts the count again from 0, as go-zookeeper does. go-zookeeper hands
// no reply's zxid to its callers, so they see no difference.
//
// Wire also makes the requests that set no watch itself, so that a caller
// can wait for the reply or for its ctx without a goroutine hand-off: see
// wirecall.go.
//
// Connect always dials through a Wire (around the Config's dialer, if
// any). NewClient has the same knowledge of a connection dialled through
// one and given in Config.wire, which only the engine's tests do
// (export_test.go).
type wire struct {
	dial       zk.Dialer
	negotiated atomic.Int64 // nanoseconds; 0 until the first session
	session    atomic.Int64 // session id of the last handshake that granted one
	lastRecv   atomic.Int64 // monotonic nanoseconds since wireEpoch; 0 = never
	lastAcked  atomic.Int64 // send time of the last answered request, as lastRecv
	handshakes atomic.Uint64
	zxid       atomic.Int64              // the last zxid a reply carried, in this session
	current    atomic.Pointer[wireConn]  // the connection dialled last
	shut       atomic.Bool               // stop: refuse dials, the last one cut
	lastXid    atomic.Int32              // the last xid go-zookeeper sent a request with
	auths      atomic.Int32              // credentials added: go-zookeeper re-sends them on each connection
	made       atomic.Uint64             // requests the Wire made itself (wirecall.go)
	dialErr    atomic.Pointer[dialError] // the last dial that failed, nil after one succeeds
	onUsable   func()                    // told, without blocking, when a connection becomes usable (see usable)
	auth       *wireAuth                 // SASL on every connection; nil: none (wire_sasl.go)
}

// dialError is a failed dial: to what, and why.
type dialError struct {
	address string
	err     error
}

// LastDialError returns the error of the last dial when it failed (nil
// when the last dial succeeded, or before any), naming the address.
func (w *wire) LastDialError() error {
	if d := w.dialErr.Load(); d != nil {
		return fmt.Errorf("dial %s: %w", d.address, d.err)
	}
	return nil
}

// wireEpoch anchors the monotonic times a Wire stores.
var wireEpoch = time.Now()

// NewWire returns a Wire that dials with dial (net.DialTimeout when nil).
func newWire(dial zk.Dialer) *wire {
	if dial == nil {
		dial = func(network, address string, timeout time.Duration) (net.Conn, error) {
			return net.DialTimeout(network, address, timeout)
		}
	}
	return &wire{dial: dial}
}

// Dial is a zk.Dialer: it dials with the wrapped dialer and watches the
// connection's frames.
func (w *wire) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	if w.shut.Load() {
		return nil, errWireShut
	}
	conn, err := w.dial(network, address, timeout)
	if err != nil {
		w.dialErr.Store(&dialError{address: address, err: err})
		return nil, err
	}
	w.dialErr.Store(nil)
	if w.auth != nil {
		conn = w.auth.wrap(conn, address, timeout)
	}
	c := &wireConn{Conn: conn, w: w, wlock: make(chan struct{}, 1), addr: address}
	c.out.init(connectRequestLen, reqHeaderLen) // the ConnectRequest, then requests
	c.in.init(handshakeLen, replyHeaderLen)     // the ConnectResponse, then replies
	w.current.Store(c)
	if w.shut.Load() { // stop raced with this dial
		_ = conn.Close()
	}
	return c, nil
}

var errWireShut = errors.New("zkrecipes: the client is closing")

// stop makes the Wire refuse new dials and closes the connection dialled
// last, so that go-zookeeper's loops, told to quit, end at once instead of
// waiting on a stalled link or a handshake that never comes.
func (w *wire) stop() {
	w.shut.Store(true)
	if c := w.current.Load(); c != nil {
		_ = c.Conn.Close()
	}
}

// SessionTimeout returns the session timeout the server granted in the
// last handshake that established a session, or 0 before the first.
func (w *wire) SessionTimeout() time.Duration { return time.Duration(w.negotiated.Load()) }

// LastReceived returns when the last byte arrived on a connection whose
// handshake granted a session (the handshake's own reply included), and
// false before the first.
func (w *wire) LastReceived() (time.Time, bool) {
	if w == nil {
		return time.Time{}, false
	}
	return wireTime(w.lastRecv.Load())
}

// LastAnswered returns when we sent the last request whose reply arrived
// (pings and the handshake's ConnectRequest included) on a connection
// whose handshake granted a session, and false before the first. The
// server heard from us no earlier than that, so it cannot expire the
// session before LastAnswered plus the session timeout.
func (w *wire) LastAnswered() (time.Time, bool) {
	if w == nil { // an adopted connection dialled without one
		return time.Time{}, false
	}
	return wireTime(w.lastAcked.Load())
}

// Handshakes counts the handshakes seen that granted a session.
func (w *wire) Handshakes() uint64 { return w.handshakes.Load() }

func wireTime(n int64) (time.Time, bool) {
	if n == 0 {
		return time.Time{}, false
	}
	return wireEpoch.Add(time.Duration(n)), true
}

func wireNow() int64 { return max(int64(time.Since(wireEpoch)), 1) }

// saw records the zxid of a reply to a request, as go-zookeeper would
// have (replies come in zxid order; a zxid of 0 says nothing).
func (w *wire) saw(zxid int64) {
	if zxid > 0 {
		w.zxid.Store(zxid)
	}
}

// acked advances lastAcked to sent (never backwards: connections of one
// Wire follow each other, but a late reply on a closing one may race).
func (w *wire) acked(sent int64) {
	for {
		old := w.lastAcked.Load()
		if sent <= old || w.lastAcked.CompareAndSwap(old, sent) {
			return
		}
	}
}

// Frame header sizes: the length prefix and the fields read after it.
const (
	handshakeLen      = 4 + 4 + 4 + 8 // ConnectResponse: protocolVersion, timeOut, sessionId
	connectRequestLen = 4 + 4 + 8     // ConnectRequest: protocolVersion, lastZxidSeen
	reqHeaderLen      = 4 + 4 + 4 + 8 // request: xid, type, and a setWatches' relativeZxid
	replyHeaderLen    = 4 + 4 + 8     // reply: xid, zxid (err follows, unread)
	maxHeaderLen      = 20            // the longest of them
	connectZxidAt     = 4 + 4         // the ConnectRequest's lastZxidSeen
	setWatchesZxidAt  = 4 + 4 + 4     // a setWatches' relativeZxid
	replyZxidAt       = 4 + 4         // a reply's zxid
	opSetWatches      = 101           // setWatches (go-zookeeper v1.0.4 sends these)
	opSetWatches2     = 105           // setWatches2: the same relativeZxid first
)

// Special xids.
const (
	xidWatchEvent = -1 // a watch notification: it answers no request
)

// pendingMax bounds the requests remembered per connection. Replies come
// in request order, so the ring is emptied as they arrive; when more
// requests than this await replies, the oldest are forgotten, and a reply
// to one of them then advances nothing (LOST can only come earlier).
const pendingMax = 256

// pending is a ring of the requests sent and not yet answered.
type pending struct {
	xid  [pendingMax]int32
	sent [pendingMax]int64
	head int // index of the oldest
	n    int
}

func (r *pending) push(xid int32, sent int64) {
	if r.n == pendingMax {
		r.head = (r.head + 1) % pendingMax
		r.n--
	}
	i := (r.head + r.n) % pendingMax
	r.xid[i], r.sent[i] = xid, sent
	r.n++
}

// answer finds the request xid, drops it and every older one (the server
// answers in order), and returns its send time; 0 when it is not there.
func (r *pending) answer(xid int32) int64 {
	for k := 0; k < r.n; k++ {
		i := (r.head + k) % pendingMax
		if r.xid[i] == xid {
			sent := r.sent[i]
			r.head = (i + 1) % pendingMax
			r.n -= k + 1
			return sent
		}
	}
	return 0
}

// wireConn is one connection seen by a Wire. go-zookeeper writes from one
// goroutine and reads from another; each side's parser is used by its own
// side only, and mu guards what they share. The Wire's own requests
// (wirecall.go) are written under wlock, as go-zookeeper's are.
type wireConn struct {
	net.Conn
	w     *wire
	wlock chan struct{} // held while a frame is written (nil: unused, in tests)
	addr  string        // the address dialled
	out   frameParser   // client → server
	in    frameParser   // server → client

	startZxid int64 // the zxid the ConnectRequest carried (the writing side's)
	sendLoop  bool  // go-zookeeper sent a frame from its send loop (under wlock)

	// The reading side's: whether the reply being read is one of the
	// Wire's, and the call taking the rest of its bytes.
	ours bool
	capt *wireCall

	ready atomic.Bool // the Wire may send its own requests (see wireConn.call)

	mu          sync.Mutex
	pend        pending
	connectSent int64 // when the ConnectRequest went out
	active      bool  // the handshake granted a session: replies now count
	closed      bool  // the connection ended: no more of the Wire's requests
	calls       map[int32]*wireCall
	tops        [256]uint32 // the Wire's requests in flight, by their xid's first byte
	seq         uint32
	writing     bool      // the Wire is writing a frame of its own
	poked       bool      // and its ctx ended meanwhile
	ownDeadline time.Time // the write deadline of that frame
	zkDeadline  time.Time // the write deadline go-zookeeper set last
}

// SetWriteDeadline records the deadline go-zookeeper sets around each of
// its writes, so that the Wire, which sets one of its own around its
// frames, can put it back after them. While the Wire writes a frame of
// its own (go-zookeeper, done with its write, clears its deadline), the
// Wire's deadline stays, and go-zookeeper's is applied after it.
func (c *wireConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.zkDeadline = t
	if c.writing {
		return nil
	}
	return c.Conn.SetWriteDeadline(t)
}

// Write records the request frames in p before writing them, so that a
// reply read meanwhile finds its request, and writes the Wire's zxid into
// the ConnectRequest and setWatches (see Wire). A failed write ends the
// connection, and with it any hope of replies.
func (c *wireConn) Write(p []byte) (int, error) {
	if c.wlock != nil {
		c.wlock <- struct{}{}
		defer func() { <-c.wlock }()
	}
	return c.Conn.Write(c.sent(p, wireNow()))
}

// sent records the request frames in p, sent at now, and returns the bytes
// to write: p, or a copy with the zxids written in (Write must not change
// p).
func (c *wireConn) sent(p []byte, now int64) []byte { return c.sentFrames(p, now, false) }

// sentFrames is sent, for go-zookeeper's frames or (own) the Wire's.
func (c *wireConn) sentFrames(p []byte, now int64, own bool) []byte {
	out, copied := p, false
	for rest := p; ; {
		h, r, ok := c.out.next(rest)
		if !ok {
			return out
		}
		rest = r
		at, patch := 0, false
		switch {
		case h.index == 0: // the ConnectRequest
			if h.off == 0 {
				c.startZxid = c.w.zxid.Load()
			}
			at, patch = connectZxidAt, true
		case len(h.hdr) >= setWatchesZxidAt:
			op := int32(binary.BigEndian.Uint32(h.hdr[8:12]))
			at, patch = setWatchesZxidAt, op == opSetWatches || op == opSetWatches2
		}
		if patch && overlaps(h.seg, h.off, at) {
			if !copied { // once per write, for a ConnectRequest or setWatches
				out, copied = append([]byte(nil), p...), true
			}
			pos := len(p) - len(rest) - len(h.seg)
			putZxid(out[pos:pos+len(h.seg)], h.off, at, c.startZxid)
		}
		if !h.done {
			continue
		}
		if !own && h.index > 0 && len(h.hdr) >= 12 {
			xid := int32(binary.BigEndian.Uint32(h.hdr[4:8]))
			if xid > 0 {
				c.w.lastXid.Store(xid)
			}
			if int32(binary.BigEndian.Uint32(h.hdr[8:12])) != opSetAuth {
				if !c.sendLoop {
					c.sendLoop = true
					c.usable(false)
				}
			} else if c.w.auths.Load() == 0 {
				c.w.auths.Store(1) // credentials added on the zk.Conn itself
			}
		}
		c.mu.Lock()
		if h.index == 0 {
			c.connectSent = now // the ConnectRequest has no xid
		} else if len(h.hdr) >= 8 {
			c.pend.push(int32(binary.BigEndian.Uint32(h.hdr[4:8])), now)
		}
		c.mu.Unlock()
	}
}

func (c *wireConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.received(p[:n])
	}
	if err != nil { // go-zookeeper gives the connection up
		c.failedBeforeSession(err)
		c.fail()
	}
	return n, err
}

// handshake reads the ConnectResponse's fields. A session id of 0 means
// the server refused our session (expired); it says nothing of the timeout.
func (c *wireConn) handshake(hdr []byte) {
	timeout := int32(binary.BigEndian.Uint32(hdr[8:12]))
	session := int64(binary.BigEndian.Uint64(hdr[12:20]))
	if session == 0 { // the session expired: a new one starts from zxid 0
		c.w.zxid.Store(0)
		return
	}
	if timeout <= 0 {
		return
	}
	c.w.negotiated.Store(int64(time.Duration(timeout) * time.Millisecond))
	c.w.session.Store(session)
	c.mu.Lock()
	c.active = true
	sent := c.connectSent
	c.ready.Store(!c.closed && c.wlock != nil)
	c.mu.Unlock()
	c.w.lastRecv.Store(wireNow())
	if sent != 0 {
		c.w.acked(sent)
	}
	c.w.handshakes.Add(1)
	c.usable(true)
}

// usable tells the Wire's owner (onUsable) that the connection became
// usable for the Wire's own requests: at the handshake when the client
// has no credentials (handshake set), else once go-zookeeper sent a frame
// from its send loop, after re-sending them. Each connection is told once
// or twice; the owner checks.
func (c *wireConn) usable(handshake bool) {
	if c.w.onUsable == nil || !c.ready.Load() {
		return
	}
	if handshake && c.w.auths.Load() > 0 {
		return // not before go-zookeeper's re-auth
	}
	c.w.onUsable()
}
