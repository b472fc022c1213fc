package engine

import (
	"encoding/binary"
	"net"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Wire watches the bytes go-zookeeper receives, to learn what go-zookeeper
// does not make visible: the session timeout the server granted, read from
// each connection's ConnectResponse (the first frame the server sends:
// length, protocolVersion int32, timeOut int32, sessionId int64, passwd),
// and the time the last byte arrived from a server that holds our session.
// The Client declares LOST one negotiated session timeout after that last
// byte: that is when the server may expire the session.
//
// Connect always dials through a Wire (around the WithDialer dialer, if
// given). To give NewClient the same knowledge for a connection you make
// yourself, dial through one and pass it with WithWire:
//
//	w := recipes.NewWire(nil)
//	conn, events, err := zk.Connect(servers, 10*time.Second, zk.WithDialer(w.Dial))
//	...
//	c, err := recipes.NewClient(conn, events, recipes.WithWire(w))
type Wire struct {
	dial       zk.Dialer
	negotiated atomic.Int64 // nanoseconds; 0 until the first session
	session    atomic.Int64 // session id of the last handshake that granted one
	lastRecv   atomic.Int64 // monotonic nanoseconds since wireEpoch; 0 = never
	handshakes atomic.Uint64
}

// wireEpoch anchors the monotonic times a Wire stores.
var wireEpoch = time.Now()

// NewWire returns a Wire that dials with dial (net.DialTimeout when nil).
func NewWire(dial zk.Dialer) *Wire {
	if dial == nil {
		dial = func(network, address string, timeout time.Duration) (net.Conn, error) {
			return net.DialTimeout(network, address, timeout)
		}
	}
	return &Wire{dial: dial}
}

// Dial is a zk.Dialer: it dials with the wrapped dialer and watches the
// connection's incoming bytes.
func (w *Wire) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	conn, err := w.dial(network, address, timeout)
	if err != nil {
		return nil, err
	}
	return &wireConn{Conn: conn, w: w}, nil
}

// SessionTimeout returns the session timeout the server granted in the
// last handshake that established a session, or 0 before the first.
func (w *Wire) SessionTimeout() time.Duration { return time.Duration(w.negotiated.Load()) }

// LastReceived returns when the last byte arrived on a connection whose
// handshake granted a session (the handshake's own reply included), and
// false before the first.
func (w *Wire) LastReceived() (time.Time, bool) {
	n := w.lastRecv.Load()
	if n == 0 {
		return time.Time{}, false
	}
	return wireEpoch.Add(time.Duration(n)), true
}

// Handshakes counts the handshakes seen that granted a session.
func (w *Wire) Handshakes() uint64 { return w.handshakes.Load() }

func (w *Wire) touch() {
	w.lastRecv.Store(max(int64(time.Since(wireEpoch)), 1))
}

// handshakeLen is the part of the ConnectResponse frame we read: the
// length prefix, protocolVersion, timeOut and sessionId.
const handshakeLen = 4 + 4 + 4 + 8

// wireConn is one connection seen by a Wire.
type wireConn struct {
	net.Conn
	w      *Wire
	hdr    [handshakeLen]byte
	n      int  // bytes of hdr filled
	active bool // the handshake granted a session: bytes now count
}

func (c *wireConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if c.active {
			c.w.touch()
		} else if c.n < handshakeLen {
			c.n += copy(c.hdr[c.n:], p[:n])
			if c.n == handshakeLen {
				c.handshake()
			}
		}
	}
	return n, err
}

// handshake reads the ConnectResponse's fields. A session id of 0 means
// the server refused our session (expired); it says nothing of the timeout.
func (c *wireConn) handshake() {
	timeout := int32(binary.BigEndian.Uint32(c.hdr[8:12]))
	session := int64(binary.BigEndian.Uint64(c.hdr[12:20]))
	if session == 0 || timeout <= 0 {
		return
	}
	c.w.negotiated.Store(int64(time.Duration(timeout) * time.Millisecond))
	c.w.session.Store(session)
	c.active = true
	c.w.touch()
	c.w.handshakes.Add(1)
}
