package engine

// The Client's requests sent through the Wire instead of go-zookeeper.

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// wireFor returns the Wire's connection when a request goes through the
// Wire: when the Wire can send now. nil: ask go-zookeeper.
func wireFor(c *Client, ctx context.Context) *wireConn {
	if c.unmade() || ctx == nil {
		return nil
	}
	return c.wire.ready()
}

// viaWire makes a request on wc (see wireFor) and returns its reply's
// body. ok is false when the Wire could not send it after all: then the
// caller asks go-zookeeper. count counts the request once sent. When ctx
// ends first, the error is ctx.Err() and late gets the reply when it
// comes (or the connection's end).
func viaWire(c *Client, ctx context.Context, wc *wireConn, op reqOp, zop int32, frame jute, count *atomic.Uint64, late func(*wireCall)) (body []byte, err error, ok bool) {
	if err := c.Check(); err != nil {
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
		c.met.countRequest(op, err)
		return nil, err, true
	}
	count.Add(1)
	select {
	case <-r.done:
	case <-ctx.Done():
		if !wc.abandon(r) {
			c.met.countRequest(op, ctx.Err())
			return nil, ctx.Err(), true
		}
	}
	body, err = r.result()
	if zop == zopExists && errors.Is(err, zk.ErrNoNode) {
		c.met.countRequest(op, nil) // a missing node is an answer to exists, as go-zookeeper reports it
	} else {
		c.met.countRequest(op, err)
	}
	return body, err, true
}

// lateCreate deletes the node an abandoned create made (see deleter.undoCreate).
func lateCreate(c *Client, r *wireCall) {
	body, err := r.result()
	if err != nil {
		return
	}
	rd := reader{p: body}
	path := rd.str()
	if rd.err() != nil {
		return
	}
	c.background(func() { c.del.undoCreate(path, nil) })
}

// wireCreate is Create through the Wire (plain modes only).
func wireCreate(c *Client, ctx context.Context, op reqOp, path string, data []byte, flags int32) (string, error, bool) {
	wc := wireFor(c, ctx)
	if wc == nil || flags < 0 || flags > zk.FlagEphemeral|zk.FlagSequence || !wirePath(path) {
		return "", nil, false
	}
	acl := c.cfg.ACL(path)
	f := newFrame(16 + len(path) + len(data) + 32*len(acl)).str(path).buf(data).acl(acl).int32(flags)
	body, err, ok := viaWire(c, ctx, wc, op, zopCreate, f, &c.stats.creates, func(r *wireCall) { lateCreate(c, r) })
	if !ok || err != nil {
		return "", err, ok
	}
	rd := reader{p: body}
	created := rd.str()
	return created, rd.err(), true
}

// wireDelete is Delete through the Wire.
func wireDelete(c *Client, ctx context.Context, path string, version int32) (error, bool) {
	wc := wireFor(c, ctx)
	if wc == nil || !wirePath(path) {
		return nil, false
	}
	f := newFrame(8 + len(path)).str(path).int32(version)
	_, err, ok := viaWire(c, ctx, wc, reqDelete, zopDelete, f, &c.stats.deletes, nil)
	return err, ok
}

// wireRead makes a read that sets no watch (getData, exists,
// getChildren2: path, then watch false) through the Wire.
func wireRead(c *Client, ctx context.Context, op reqOp, zop int32, path string, count *atomic.Uint64) (body []byte, err error, ok bool) {
	wc := wireFor(c, ctx)
	if wc == nil || !wirePath(path) {
		return nil, nil, false
	}
	f := newFrame(5 + len(path)).str(path).boolean(false)
	return viaWire(c, ctx, wc, op, zop, f, count, nil)
}

// failedStat is the Stat returned with an error: a zero one with a
// server's error (body non-nil), as go-zookeeper's, else none.
func failedStat(body []byte) *zk.Stat {
	if body == nil {
		return nil
	}
	return &zk.Stat{}
}

func wireGet(c *Client, ctx context.Context, path string) ([]byte, *zk.Stat, error, bool) {
	body, err, ok := wireRead(c, ctx, reqGetData, zopGetData, path, &c.stats.getData)
	if !ok || err != nil {
		return nil, failedStat(body), err, ok
	}
	rd := reader{p: body}
	data, st := rd.buf(), rd.stat()
	return data, st, rd.err(), true
}

func wireExists(c *Client, ctx context.Context, path string) (bool, *zk.Stat, error, bool) {
	body, err, ok := wireRead(c, ctx, reqExists, zopExists, path, &c.stats.exists)
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

func wireChildren(c *Client, ctx context.Context, path string) ([]string, *zk.Stat, error, bool) {
	body, err, ok := wireRead(c, ctx, reqChildren, zopGetChildren2, path, &c.stats.children)
	if !ok || err != nil {
		return nil, failedStat(body), err, ok
	}
	rd := reader{p: body}
	kids, st := rd.strs(), rd.stat()
	return kids, st, rd.err(), true
}

func wireSet(c *Client, ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error, bool) {
	wc := wireFor(c, ctx)
	if wc == nil || !wirePath(path) {
		return nil, nil, false
	}
	f := newFrame(12 + len(path) + len(data)).str(path).buf(data).int32(version)
	body, err, ok := viaWire(c, ctx, wc, reqSetData, zopSetData, f, &c.stats.setData, nil)
	if !ok || err != nil {
		return failedStat(body), err, ok
	}
	rd := reader{p: body}
	st := rd.stat()
	return st, rd.err(), true
}

func wireSync(c *Client, ctx context.Context, path string) (error, bool) {
	wc := wireFor(c, ctx)
	if wc == nil || !wirePath(path) {
		return nil, false
	}
	f := newFrame(4 + len(path)).str(path)
	body, err, ok := viaWire(c, ctx, wc, reqSync, zopSync, f, &c.stats.syncs, nil)
	if !ok || err != nil {
		return err, ok
	}
	rd := reader{p: body}
	_ = rd.str()
	return rd.err(), true
}
