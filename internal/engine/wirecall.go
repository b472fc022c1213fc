package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// Requests the Wire makes itself.
//
// go-zookeeper's calls block their goroutine until the reply and cannot be
// cancelled, so a call that must return when its ctx ends while the
// request is in flight would need a goroutine of its own to make the
// request: a hand-off, and a wake-up more, per request. The Wire already
// sees every frame of the connection, so it can do better for the requests
// that set no watch (go-zookeeper must know of every watch, to deliver its
// event and set it again after a reconnect): it writes the request frame
// itself, from the caller's goroutine, between go-zookeeper's frames; when
// the reply comes in, it takes the reply's bytes and hands them to the
// caller, who waits for them or for ctx. go-zookeeper still reads the
// reply frame, but with its xid rewritten to that of a ping's reply
// (-2), which go-zookeeper ignores. Nothing else changes on the wire: the
// server sees requests of this session on this connection, answered in
// order, so a caller's request goes after every request it made before
// and saw answered. (A request abandoned on go-zookeeper's path while it
// still waited in go-zookeeper's queue, its ctx ended, may go out after a
// later request of the Wire's; its outcome was unknown to its caller
// anyway, and an abandoned create's node is deleted when its reply comes.)
//
// xids: go-zookeeper numbers its requests 1, 2, 3, ... The Wire numbers
// its own 2^30 ahead of the last xid go-zookeeper sent, so the first byte
// of a reply's xid tells whose it is (go-zookeeper would have to send
// 2^30 requests while one of the Wire's is in flight for them to meet),
// and the Wire can rewrite the xid as it passes, however the reply is cut
// across reads.
//
// The Wire makes a request only on a connection whose handshake granted a
// session, on which go-zookeeper has re-sent its credentials (when the
// client has any: once go-zookeeper has sent a frame from its send loop,
// which starts after them), and that is not closing; otherwise the caller
// falls back to go-zookeeper. When the connection ends, every request the
// Wire has in flight on it fails with zk.ErrConnectionClosed, as
// go-zookeeper's do.

// wireXidAhead is how far ahead of go-zookeeper's last xid the Wire numbers its own.
const wireXidAhead = 1 << 30

// go-zookeeper v1.0.4's request opcodes the Wire sends, and its setAuth.
const (
	zopCreate        = 1
	zopDelete        = 2
	zopExists        = 3
	zopGetData       = 4
	zopSetData       = 5
	zopSync          = 9
	zopGetChildren2  = 12
	zopRemoveWatches = 18
	zopAddWatch      = 106
	opSetAuth        = 100
	xidPing          = -2
)

// errWireNotReady says the Wire cannot make the request now: the caller
// asks go-zookeeper instead.
var errWireNotReady = errors.New("zkrecipes: the wire cannot send now")

// wireCall is a request the Wire made, until its reply or the end of its
// connection.
type wireCall struct {
	xid   int32
	order uint64        // the Wire's requests made so far, this one included: their order on the wire
	done  chan struct{} // closed when finished
	// Set before done closes (or, for an abandoned call, before late):
	reply []byte // the reply after its header: err int32, then the body
	err   error  // zk.ErrConnectionClosed when the connection ended first

	// Under the connection's mu:
	finished  bool
	abandoned bool
	late      func(*wireCall) // called, on the reading goroutine, when an abandoned call finishes
	then      func(*wireCall) // called when the call finishes, before done closes (on the reading goroutine for a reply)
}

// result returns the body after the reply's error code, and that error as
// go-zookeeper reports it (nil for OK). The body is nil when no reply
// came, non-nil (and empty) with a server's error.
func (r *wireCall) result() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	if len(r.reply) < 4 {
		return nil, zk.ErrConnectionClosed // a reply cut short: the connection is broken
	}
	body := r.reply[4:]
	if code := int32(binary.BigEndian.Uint32(r.reply)); code != 0 {
		return body[:0], zkError(code)
	}
	return body, nil
}

// zkError maps a server error code to go-zookeeper's error for it.
func zkError(code int32) error {
	switch code {
	case -100:
		return zk.ErrAPIError
	case -101:
		return zk.ErrNoNode
	case -102:
		return zk.ErrNoAuth
	case -103:
		return zk.ErrBadVersion
	case -108:
		return zk.ErrNoChildrenForEphemerals
	case -110:
		return zk.ErrNodeExists
	case -111:
		return zk.ErrNotEmpty
	case -112:
		return zk.ErrSessionExpired
	case -114:
		return zk.ErrInvalidACL
	case -115:
		return zk.ErrAuthFailed
	case -116:
		return zk.ErrClosing
	case -117:
		return zk.ErrNothing
	case -118:
		return zk.ErrSessionMoved
	case -123:
		return zk.ErrReconfigDisabled
	case -8:
		return zk.ErrBadArguments
	case -5:
		return errMarshalling
	case -6:
		return errUnimplementedOp
	case -121:
		return errNoWatcher
	}
	return fmt.Errorf("unknown error: %d", code)
}

// ready returns the connection the Wire can send on now, or nil.
func (w *wire) ready() *wireConn {
	if w == nil {
		return nil
	}
	c := w.current.Load()
	if c == nil || c.wlock == nil || !c.ready.Load() {
		return nil
	}
	return c
}

// call sends frame (12 bytes reserved at its start for the length, xid and
// opcode, then the request's body) with opcode op, and returns the call to
// wait for. errWireNotReady says nothing was sent. When ctx ends while the
// frame is being written, the write has pokeGrace more to finish; when it
// cannot (a stalled link whose buffers are full), the connection is cut:
// part of a frame may be out, and the link is of no use anyway.
func (c *wireConn) call(ctx context.Context, op int32, frame []byte, late func(*wireCall)) (*wireCall, error) {
	return c.callThen(ctx, op, frame, late, nil)
}

// callThen is call, with then called when the call finishes, before its
// waiter wakes: on the reading goroutine for a reply, before any frame
// after the reply is read.
func (c *wireConn) callThen(ctx context.Context, op int32, frame []byte, late, then func(*wireCall)) (*wireCall, error) {
	select {
	case c.wlock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.wlock }()
	out := &c.out
	if out.n != 0 || out.want != 0 || out.skip != 0 { // inside a frame of go-zookeeper's
		return nil, errWireNotReady
	}
	r := &wireCall{done: make(chan struct{}), late: late, then: then}
	c.mu.Lock()
	if c.closed || !c.active || (c.w.auths.Load() > 0 && !c.sendLoop) {
		c.mu.Unlock()
		return nil, errWireNotReady
	}
	if c.calls == nil {
		c.calls = map[int32]*wireCall{}
	}
	xid := (c.w.lastXid.Load() + wireXidAhead + int32(c.seq&0xffff)) & 0x7fffffff
	for xid == 0 || c.calls[xid] != nil {
		xid = (xid + 1) & 0x7fffffff
	}
	c.seq++
	r.xid = xid
	c.calls[xid] = r
	c.tops[byte(uint32(xid)>>24)]++
	c.writing = true
	// A deadline of the Wire's own, as go-zookeeper sets around each of its
	// writes: a write that stalls on a dead peer must not hold wlock, and
	// with it go-zookeeper's sender, for longer than go-zookeeper's own
	// would. go-zookeeper's deadline is put back after.
	c.ownDeadline = time.Now().Add(c.w.writeTimeout())
	_ = c.Conn.SetWriteDeadline(c.ownDeadline)
	c.mu.Unlock()

	binary.BigEndian.PutUint32(frame[0:4], uint32(len(frame)-4))
	binary.BigEndian.PutUint32(frame[4:8], uint32(xid))
	binary.BigEndian.PutUint32(frame[8:12], uint32(op))
	c.sentFrames(frame, wireNow(), true)
	r.order = c.w.made.Add(1)
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.pokeWrite)
	}
	_, err := c.Conn.Write(frame)
	if stop != nil {
		stop()
	}
	c.mu.Lock()
	c.writing = false
	c.poked = false
	_ = c.Conn.SetWriteDeadline(c.zkDeadline)
	c.mu.Unlock()
	if err != nil {
		_ = c.Conn.Close() // part of a frame may be out: the stream is broken
		c.fail()
	}
	return r, nil
}

// writeTimeout bounds a write of the Wire's own frame: go-zookeeper's
// bound for its writes (2/3 of the negotiated session timeout).
func (w *wire) writeTimeout() time.Duration {
	if d := w.SessionTimeout(); d > 0 {
		return d * 2 / 3
	}
	return 10 * time.Second
}

// pokeGrace is how long a frame the Wire is writing when its ctx ends
// still has to be written. On a healthy link a frame is written in
// microseconds, and the connection, which every request of the Client
// shares, is kept; failing that write at once cut it, mid-frame, whenever
// a ctx ended during a write (under load, an owned node's Close lost its
// connection so, and handed its delete to the background). A write
// stalled on a dead peer's full buffers fails at the end of the grace.
var pokeGrace = 100 * time.Millisecond

// pokeWrite bounds the write under way by pokeGrace from now (ctx ended),
// never beyond its own deadline.
func (c *wireConn) pokeWrite() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writing {
		c.poked = true
		if d := time.Now().Add(pokeGrace); d.Before(c.ownDeadline) {
			_ = c.Conn.SetWriteDeadline(d)
		}
	}
}

// abandon gives r up (its caller's ctx ended), unless it has finished:
// then it returns true and the caller takes the result.
func (c *wireConn) abandon(r *wireCall) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.finished {
		return true
	}
	r.abandoned = true
	return false
}

// finish ends r (its reply is in, or its connection ended), once.
func (c *wireConn) finish(r *wireCall) {
	c.mu.Lock()
	if r.finished {
		c.mu.Unlock()
		return
	}
	r.finished = true
	if c.calls[r.xid] == r {
		delete(c.calls, r.xid)
		c.tops[byte(uint32(r.xid)>>24)]--
	}
	late := r.late
	if !r.abandoned {
		late = nil
	}
	c.mu.Unlock()
	if r.then != nil {
		r.then(r)
	}
	close(r.done)
	if late != nil {
		late(r)
	}
}

// fail ends the connection for the Wire's requests: those in flight get
// zk.ErrConnectionClosed, and no more are sent on it.
func (c *wireConn) fail() {
	c.ready.Store(false)
	c.mu.Lock()
	c.closed = true
	var calls []*wireCall
	for _, r := range c.calls {
		if !r.finished {
			r.err = zk.ErrConnectionClosed
			calls = append(calls, r)
		}
	}
	c.mu.Unlock()
	for _, r := range calls {
		c.finish(r)
	}
}

// Close ends the connection, and the Wire's requests on it.
func (c *wireConn) Close() error {
	err := c.Conn.Close()
	c.fail()
	return err
}

// ---------------------------------------------------------------- jute

// wirePath tells whether path is one the Wire sends itself: it must pass
// go-zookeeper's checks, so only the plain ones are taken (printable
// ASCII, absolute, no empty, "." or ".." segment, no trailing slash);
// go-zookeeper checks the others.
func wirePath(path string) bool {
	if len(path) < 2 || path[0] != '/' || path[len(path)-1] == '/' {
		return false
	}
	seg := 0 // length of the current segment
	dots := 0
	for i := 1; i <= len(path); i++ {
		if i == len(path) || path[i] == '/' {
			if seg == 0 || (seg == dots && dots <= 2) {
				return false
			}
			seg, dots = 0, 0
			continue
		}
		ch := path[i]
		if ch < 0x20 || ch > 0x7e {
			return false
		}
		seg++
		if ch == '.' {
			dots++
		}
	}
	return true
}

// ---------------------------------------------------------------- engine
