package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// zopMultiRead is ZooKeeper 3.6's multiRead: getData and getChildren
// requests read together in one request and one reply (ZOOKEEPER-3402).
const (
	zopMultiRead   = 22
	zopGetChildren = 8
)

// ReadOp is one read of a MultiRead: a node's data and stat (getData), or
// its children's names (getChildren, Children true: no stat, as the server
// gives none in a multiRead).
type ReadOp struct {
	Path     string // server path
	Children bool
}

// readResult is one ReadOp's answer: Err (zk.ErrNoNode, zk.ErrNoAuth, ...)
// or Data and Stat (getData) or Children (getChildren, unsorted).
type readResult struct {
	Data     []byte
	Stat     zk.Stat
	Children []string
	Err      error
}

// MultiRead makes ops in one multiRead request through the Wire (no
// watch set), so that a load of many nodes costs the server and the
// client one request per batch instead of one per node. ok is false when
// it was not sent (no Wire ready, or a path the Wire does not send): make
// the reads one by one then. A server before 3.6 answers
// ErrUnimplemented. The request counts as one multi (Stats.MultiReads).
func (c *Client) MultiRead(ctx context.Context, ops []ReadOp) (res []readResult, err error, ok bool) {
	wc := wireFor(c, ctx)
	if wc == nil || len(ops) == 0 {
		return nil, nil, false
	}
	size := 0
	for _, op := range ops {
		if !wirePath(op.Path) {
			return nil, nil, false
		}
		size += 18 + len(op.Path)
	}
	f := newFrame(size + 9)
	for _, op := range ops {
		t := int32(zopGetData)
		if op.Children {
			t = zopGetChildren
		}
		// MultiHeader (type, done, err), then the request: path, watch.
		f = f.int32(t).boolean(false).int32(-1).str(op.Path).boolean(false)
	}
	f = f.int32(-1).boolean(true).int32(-1)
	body, err, ok := viaWire(c, ctx, wc, reqMulti, zopMultiRead, f, &c.stats.multiReads, nil)
	if !ok {
		return nil, nil, false
	}
	if errors.Is(err, errUnimplementedOp) || errors.Is(err, errMarshalling) {
		return nil, fmt.Errorf("%w (multiRead; the server answered: %v)", zkerr.ErrUnimplemented, err), true
	}
	if err != nil {
		return nil, err, true
	}
	rd := reader{p: body}
	res = make([]readResult, 0, len(ops))
	for !rd.bad {
		t := rd.int32()
		done := rd.take(1)
		rd.int32() // the header's err
		if rd.bad || done[0] != 0 {
			break
		}
		if len(res) == len(ops) {
			rd.bad = true
			break
		}
		var r readResult
		switch t {
		case -1: // ErrorResult
			r.Err = zkError(rd.int32())
		case zopGetData:
			r.Data = rd.buf()
			r.Stat = *rd.stat()
		case zopGetChildren:
			r.Children = rd.strs()
		default:
			rd.bad = true
		}
		res = append(res, r)
	}
	if err := rd.err(); err != nil {
		return nil, err, true
	}
	if len(res) != len(ops) {
		return nil, fmt.Errorf("zkrecipes: a multiRead answered %d of %d reads: %w", len(res), len(ops), zk.ErrConnectionClosed), true
	}
	return res, nil, true
}
