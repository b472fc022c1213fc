package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
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
	xid  int32
	done chan struct{} // closed when finished
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
func (w *Wire) ready() *wireConn {
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
// frame is being written (a stalled link whose buffers are full), the
// connection is cut: it is of no use anyway.
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
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.w.writeTimeout()))
	c.mu.Unlock()

	binary.BigEndian.PutUint32(frame[0:4], uint32(len(frame)-4))
	binary.BigEndian.PutUint32(frame[4:8], uint32(xid))
	binary.BigEndian.PutUint32(frame[8:12], uint32(op))
	c.sentFrames(frame, wireNow(), true)
	c.w.made.Add(1)
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
func (w *Wire) writeTimeout() time.Duration {
	if d := w.SessionTimeout(); d > 0 {
		return d * 2 / 3
	}
	return 10 * time.Second
}

// pokeWrite makes the write under way fail at once (ctx ended).
func (c *wireConn) pokeWrite() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writing {
		c.poked = true
		_ = c.Conn.SetWriteDeadline(time.Unix(1, 0))
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

// jute appends the request encodings (big-endian, strings and buffers
// with an int32 length, -1 for a nil buffer).
type jute []byte

func newFrame(size int) jute { return make(jute, 12, 12+size) }

func (b jute) int32(v int32) jute { return binary.BigEndian.AppendUint32(b, uint32(v)) }

func (b jute) str(s string) jute { return append(b.int32(int32(len(s))), s...) }

func (b jute) buf(p []byte) jute {
	if p == nil {
		return b.int32(-1)
	}
	return append(b.int32(int32(len(p))), p...)
}

func (b jute) boolean(v bool) jute {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func (b jute) acl(acl []zk.ACL) jute {
	b = b.int32(int32(len(acl)))
	for _, a := range acl {
		b = b.int32(a.Perms).str(a.Scheme).str(a.ID)
	}
	return b
}

// reader decodes a reply body; a short body sets bad.
type reader struct {
	p   []byte
	bad bool
}

func (r *reader) take(n int) []byte {
	if n < 0 || len(r.p) < n {
		r.bad, r.p = true, nil
		return nil
	}
	v := r.p[:n]
	r.p = r.p[n:]
	return v
}

func (r *reader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) int64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *reader) str() string { return string(r.take(int(r.int32()))) }

// buf reads a buffer as go-zookeeper does: nil for -1, else a copy.
func (r *reader) buf() []byte {
	n := r.int32()
	if n < 0 {
		return nil
	}
	b := r.take(int(n))
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func (r *reader) stat() *zk.Stat {
	return &zk.Stat{
		Czxid: r.int64(), Mzxid: r.int64(), Ctime: r.int64(), Mtime: r.int64(),
		Version: r.int32(), Cversion: r.int32(), Aversion: r.int32(),
		EphemeralOwner: r.int64(), DataLength: r.int32(), NumChildren: r.int32(), Pzxid: r.int64(),
	}
}

// strs reads a vector of strings (empty, not nil, when there are none, as
// go-zookeeper's).
func (r *reader) strs() []string {
	n := r.int32()
	if n < 0 || int(n) > len(r.p)/4 {
		if n != 0 {
			r.bad = true
		}
		return []string{}
	}
	v := make([]string, n)
	for i := range v {
		v[i] = r.str()
	}
	return v
}

// err returns an error when the body was short (the connection is then
// of no use: go-zookeeper would fail the same way).
func (r *reader) err() error {
	if r.bad {
		return fmt.Errorf("zkrecipes: a malformed reply: %w", zk.ErrConnectionClosed)
	}
	return nil
}

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

// WireRequests returns how many requests the Wire made itself (the others
// went through go-zookeeper's calls); tests read it.
func (c *Client) WireRequests() uint64 {
	if c == nil || c.wire == nil {
		return 0
	}
	return c.wire.made.Load()
}

// wireFor returns the Wire's connection when a request goes through the
// Wire: when the Wire can send now. nil: ask go-zookeeper.
func (c *Client) wireFor(ctx context.Context) *wireConn {
	if c == nil || c.conn == nil || ctx == nil {
		return nil
	}
	return c.wire.ready()
}

// viaWire makes a request on wc (see wireFor) and returns its reply's
// body. ok is false when the Wire could not send it after all: then the
// caller asks go-zookeeper. count counts the request once sent. When ctx
// ends first, the error is ctx.Err() and late gets the reply when it
// comes (or the connection's end).
func (c *Client) viaWire(ctx context.Context, wc *wireConn, op reqOp, zop int32, frame jute, count *atomic.Uint64, late func(*wireCall)) (body []byte, err error, ok bool) {
	if err := c.check(); err != nil {
		return nil, err, true
	}
	if err := ctx.Err(); err != nil {
		return nil, err, true
	}
	r, err := wc.call(ctx, zop, frame, late)
	if errors.Is(err, errWireNotReady) {
		return nil, nil, false
	}
	if err != nil { // ctx ended before the request went out
		c.countRequest(op, err)
		return nil, err, true
	}
	count.Add(1)
	select {
	case <-r.done:
	case <-ctx.Done():
		if !wc.abandon(r) {
			c.countRequest(op, ctx.Err())
			return nil, ctx.Err(), true
		}
	}
	body, err = r.result()
	if zop == zopExists && errors.Is(err, zk.ErrNoNode) {
		c.countRequest(op, nil) // a missing node is an answer to exists, as go-zookeeper reports it
	} else {
		c.countRequest(op, err)
	}
	return body, err, true
}

// lateCreate deletes the node an abandoned create made (see undoCreate).
func (c *Client) lateCreate(r *wireCall) {
	body, err := r.result()
	if err != nil {
		return
	}
	rd := reader{p: body}
	path := rd.str()
	if rd.err() != nil {
		return
	}
	c.background(func() { c.undoCreate(path, nil) })
}

// wireCreate is Create through the Wire (plain modes only).
func (c *Client) wireCreate(ctx context.Context, op reqOp, path string, data []byte, flags int32) (string, error, bool) {
	wc := c.wireFor(ctx)
	if wc == nil || flags < 0 || flags > zk.FlagEphemeral|zk.FlagSequence || !wirePath(path) {
		return "", nil, false
	}
	acl := c.ACL(path)
	f := newFrame(16 + len(path) + len(data) + 32*len(acl)).str(path).buf(data).acl(acl).int32(flags)
	body, err, ok := c.viaWire(ctx, wc, op, zopCreate, f, &c.stats.creates, c.lateCreate)
	if !ok || err != nil {
		return "", err, ok
	}
	rd := reader{p: body}
	created := rd.str()
	return created, rd.err(), true
}

// wireDelete is Delete through the Wire.
func (c *Client) wireDelete(ctx context.Context, path string, version int32) (error, bool) {
	wc := c.wireFor(ctx)
	if wc == nil || !wirePath(path) {
		return nil, false
	}
	f := newFrame(8 + len(path)).str(path).int32(version)
	_, err, ok := c.viaWire(ctx, wc, reqDelete, zopDelete, f, &c.stats.deletes, nil)
	return err, ok
}

// wireRead makes a read that sets no watch (getData, exists,
// getChildren2: path, then watch false) through the Wire.
func (c *Client) wireRead(ctx context.Context, op reqOp, zop int32, path string, count *atomic.Uint64) (body []byte, err error, ok bool) {
	wc := c.wireFor(ctx)
	if wc == nil || !wirePath(path) {
		return nil, nil, false
	}
	f := newFrame(5 + len(path)).str(path).boolean(false)
	return c.viaWire(ctx, wc, op, zop, f, count, nil)
}

// failedStat is the Stat returned with an error: a zero one with a
// server's error (body non-nil), as go-zookeeper's, else none.
func failedStat(body []byte) *zk.Stat {
	if body == nil {
		return nil
	}
	return &zk.Stat{}
}

func (c *Client) wireGet(ctx context.Context, path string) ([]byte, *zk.Stat, error, bool) {
	body, err, ok := c.wireRead(ctx, reqGetData, zopGetData, path, &c.stats.getData)
	if !ok || err != nil {
		return nil, failedStat(body), err, ok
	}
	rd := reader{p: body}
	data, st := rd.buf(), rd.stat()
	return data, st, rd.err(), true
}

func (c *Client) wireExists(ctx context.Context, path string) (bool, *zk.Stat, error, bool) {
	body, err, ok := c.wireRead(ctx, reqExists, zopExists, path, &c.stats.exists)
	switch {
	case !ok:
		return false, nil, nil, false
	case errors.Is(err, zk.ErrNoNode):
		return false, &zk.Stat{}, nil, true
	case err != nil && body == nil: // no reply
		return false, nil, err, true
	case err != nil:
		return true, &zk.Stat{}, err, true
	}
	rd := reader{p: body}
	st := rd.stat()
	return true, st, rd.err(), true
}

func (c *Client) wireChildren(ctx context.Context, path string) ([]string, *zk.Stat, error, bool) {
	body, err, ok := c.wireRead(ctx, reqChildren, zopGetChildren2, path, &c.stats.children)
	if !ok || err != nil {
		return nil, failedStat(body), err, ok
	}
	rd := reader{p: body}
	kids, st := rd.strs(), rd.stat()
	return kids, st, rd.err(), true
}

func (c *Client) wireSet(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error, bool) {
	wc := c.wireFor(ctx)
	if wc == nil || !wirePath(path) {
		return nil, nil, false
	}
	f := newFrame(12 + len(path) + len(data)).str(path).buf(data).int32(version)
	body, err, ok := c.viaWire(ctx, wc, reqSetData, zopSetData, f, &c.stats.setData, nil)
	if !ok || err != nil {
		return failedStat(body), err, ok
	}
	rd := reader{p: body}
	st := rd.stat()
	return st, rd.err(), true
}

func (c *Client) wireSync(ctx context.Context, path string) (error, bool) {
	wc := c.wireFor(ctx)
	if wc == nil || !wirePath(path) {
		return nil, false
	}
	f := newFrame(4 + len(path)).str(path)
	body, err, ok := c.viaWire(ctx, wc, reqSync, zopSync, f, &c.stats.syncs, nil)
	if !ok || err != nil {
		return err, ok
	}
	rd := reader{p: body}
	_ = rd.str()
	return rd.err(), true
}
