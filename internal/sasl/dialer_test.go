package sasl_test

// A zk.Dialer that runs the SASL exchange on each connection right after
// the session handshake, before go-zookeeper sees the ConnectResponse, so
// none of go-zookeeper's requests (re-auth, setWatches, the caller's) can
// go out before it: what the engine's Wire is to do (docs/security.md).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/sasl"
)

// saslDialer dials and authenticates each connection with a new mechanism.
type saslDialer struct {
	mech      func() sasl.Mechanism
	firstOnly bool // authenticate the first connection only (to show why every one must be)

	mu        sync.Mutex
	exchanges int     // successful exchanges
	errs      []error // failed ones
	changed   chan struct{}
}

func newSASLDialer(mech func() sasl.Mechanism) *saslDialer {
	return &saslDialer{mech: mech, changed: make(chan struct{}, 1)}
}

func (d *saslDialer) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	skip := d.firstOnly && d.exchanges > 0
	d.mu.Unlock()
	if skip {
		return c, nil
	}
	return &saslConn{Conn: c, d: d}, nil
}

func (d *saslDialer) record(err error) {
	d.mu.Lock()
	if err == nil {
		d.exchanges++
	} else {
		d.errs = append(d.errs, err)
	}
	d.mu.Unlock()
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

func (d *saslDialer) counts() (int, []error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.exchanges, append([]error(nil), d.errs...)
}

// saslConn holds the ConnectResponse back until the exchange is done.
type saslConn struct {
	net.Conn
	d       *saslDialer
	started bool
	held    []byte // the ConnectResponse frame, handed to go-zookeeper after the exchange
}

func (c *saslConn) Read(p []byte) (int, error) {
	if !c.started {
		c.started = true
		frame, err := c.handshake()
		if err != nil {
			c.Conn.Close()
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

// handshake reads the ConnectResponse and, when it grants a session,
// authenticates the connection.
func (c *saslConn) handshake() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.Conn, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 16 || n > 1<<16 {
		return nil, fmt.Errorf("a ConnectResponse of %d bytes", n)
	}
	frame := make([]byte, 4+n)
	copy(frame, hdr[:])
	if _, err := io.ReadFull(c.Conn, frame[4:]); err != nil {
		return nil, err
	}
	if binary.BigEndian.Uint64(frame[4+8:4+16]) == 0 {
		return frame, nil // no session (expired): nothing to authenticate
	}
	xid := int32(1 << 30)
	_ = c.Conn.SetDeadline(time.Now().Add(10 * time.Second))
	err := sasl.Exchange(c.Conn, c.d.mech(), func() int32 { xid++; return xid })
	_ = c.Conn.SetDeadline(time.Time{})
	c.d.record(err)
	if err != nil {
		return nil, err
	}
	return frame, nil
}

var errTimeout = errors.New("timed out")

// wait waits until cond holds on the dialer's counts.
func (d *saslDialer) wait(timeout time.Duration, cond func(ok int, errs []error) bool) error {
	deadline := time.After(timeout)
	for {
		if cond(d.counts()) {
			return nil
		}
		select {
		case <-d.changed:
		case <-deadline:
			return errTimeout
		}
	}
}
