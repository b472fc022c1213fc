package sasl

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"
)

// firstXid is where a Conn numbers its SASL requests (any xid will do:
// the server only echoes it, and nothing else is in flight; these stand
// out in a capture).
const firstXid = 1 << 30

// maxConnectResponse bounds the ConnectResponse frame (about 40 bytes).
const maxConnectResponse = 1 << 16

// Conn is a client's connection to a ZooKeeper server that authenticates
// itself with SASL right after the session handshake: its first Read
// reads the whole ConnectResponse from the server and, when it grants a
// session, runs the exchange on the connection before handing the
// ConnectResponse to the reader. A client such as go-zookeeper, which
// writes nothing between its ConnectRequest and the ConnectResponse,
// therefore sends no request before the session is authenticated, and
// sees a failed authentication as a failed handshake (the Read's error):
// never a session without its rights.
//
// Reads are from one goroutine, as go-zookeeper does them.
type Conn struct {
	net.Conn
	mech    Mechanism
	timeout time.Duration
	done    func(error)

	started bool
	held    []byte // the ConnectResponse, handed to the reader after the exchange
}

// NewConn returns c authenticating with m (one Mechanism per
// connection) within timeout of the handshake reply. done, when not nil,
// is told the outcome once: nil after success, the *Error otherwise. It
// is not told when the server grants no session (an expired session's
// handshake), where there is nothing to authenticate.
func NewConn(c net.Conn, m Mechanism, timeout time.Duration, done func(error)) *Conn {
	return &Conn{Conn: c, mech: m, timeout: timeout, done: done}
}

// Read reads the ConnectResponse and authenticates first (see Conn);
// after that it reads from the connection. A failed authentication closes
// the connection and returns the *Error.
func (c *Conn) Read(p []byte) (int, error) {
	if !c.started {
		c.started = true
		frame, err := c.handshake()
		if err != nil {
			_ = c.Conn.Close()
			return 0, err
		}
		c.held = frame
	}
	if len(c.held) > 0 {
		n := copy(p, c.held)
		c.held = c.held[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// handshake reads the ConnectResponse frame and, when it grants a
// session, runs the exchange.
func (c *Conn) handshake() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.Conn, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 16 || n > maxConnectResponse { // protocolVersion, timeOut, sessionId, passwd's length
		return nil, fmt.Errorf("sasl: a ConnectResponse of %d bytes", n)
	}
	frame := make([]byte, 4+n)
	copy(frame, hdr[:])
	if _, err := io.ReadFull(c.Conn, frame[4:]); err != nil {
		return nil, err
	}
	if binary.BigEndian.Uint64(frame[4+8:4+16]) == 0 {
		return frame, nil // no session (it expired): nothing to authenticate
	}
	if c.timeout > 0 {
		_ = c.Conn.SetDeadline(time.Now().Add(c.timeout))
	}
	xid := int32(firstXid)
	err := Exchange(c.Conn, c.mech, func() int32 { xid++; return xid })
	if c.timeout > 0 {
		_ = c.Conn.SetDeadline(time.Time{})
	}
	if c.done != nil {
		c.done(err)
	}
	if err != nil {
		return nil, err
	}
	return frame, nil
}
