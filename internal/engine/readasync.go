package engine

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// AsyncRead is a read started by ReadAsync: its fields are set once Done
// is closed.
type AsyncRead struct {
	done <-chan struct{}
	// There is false when the node does not exist (Err is nil then).
	There bool
	Data  []byte
	Stat  *zk.Stat
	Err   error
	// Routed is PersistentWatch.Routed as of the reply (or later): every
	// watch event that came before the reply has a Seq at most Routed, so
	// the read saw no change whose event has a larger Seq. Through the
	// Wire it is read on the receiving goroutine as the reply passes, and
	// is exact.
	Routed uint64
	// Order is the read's place among the requests the Wire made (see
	// ReadOrder): a read of a larger Order went out later, and saw the
	// same state or a newer one. A read the Wire could not make (it went
	// through go-zookeeper) has the Order of the Wire's last request
	// when it was started.
	Order uint64
}

// ReadOrder returns the Order of the last request the Wire made: a read
// with an Order at most this went out before now.
func (c *Client) ReadOrder() uint64 {
	if c == nil || c.wire == nil {
		return 0
	}
	return c.wire.made.Load()
}

// Done is closed once the read's fields are set.
func (a *AsyncRead) Done() <-chan struct{} { return a.done }

// ReadAsync sends a read of path (its data and stat, or with statOnly its
// stat alone: an exists) and returns without waiting for the reply, as
// the Java client's asynchronous calls do: reads started one after the
// other go out in that order, pipelined on the session, each after every
// watch event routed before it was started. It goes through the Wire
// when it can (no goroutine per read); otherwise a goroutine makes it
// through go-zookeeper. ctx bounds the sending only; a read whose reply
// never comes ends with the connection (zk.ErrConnectionClosed).
func (c *Client) ReadAsync(ctx context.Context, path string, statOnly bool) *AsyncRead {
	a := &AsyncRead{}
	if err := c.Check(); err != nil {
		a.Err = err
		return a.finished()
	}
	op, zop, count := reqGetData, int32(zopGetData), &c.stats.getData
	if statOnly {
		op, zop, count = reqExists, zopExists, &c.stats.exists
	}
	if wc := wireFor(c, ctx); wc != nil && wirePath(path) {
		f := newFrame(5 + len(path)).str(path).boolean(false)
		r, err := wc.callThen(ctx, zop, f, nil, func(r *wireCall) {
			a.Routed = c.pw.seq.Load()
			c.met.countRequest(op, a.decode(r, statOnly))
		})
		if err == nil {
			count.Add(1)
			a.Order = r.order
			a.done = r.done
			return a
		}
		if !errors.Is(err, errWireNotReady) { // ctx ended before it went out
			a.Err = err
			return a.finished()
		}
	}
	done := make(chan struct{})
	a.done, a.Order = done, c.ReadOrder()
	if !c.background(func() {
		defer close(done)
		if statOnly {
			a.There, a.Stat, a.Err = c.Exists(ctx, path)
		} else {
			a.Data, a.Stat, a.Err = c.Get(ctx, path)
			a.There = a.Err == nil
		}
		if errors.Is(a.Err, zk.ErrNoNode) {
			a.There, a.Err = false, nil
		}
		a.Routed = c.pw.seq.Load()
	}) {
		a.Err = zkerr.ErrClientClosed
		close(done)
	}
	return a
}

// pending reports whether a may have been answered after the event of
// Seq seq came: its reply is not in, or its Routed is at least seq.
func (a *AsyncRead) pending(seq uint64) bool {
	select {
	case <-a.done:
		return a.Routed >= seq
	default:
		return true
	}
}

// finished closes a's Done at once (a read that never went out).
func (a *AsyncRead) finished() *AsyncRead {
	done := make(chan struct{})
	close(done)
	a.done = done
	return a
}

// decode sets a from r's reply, and returns the request's outcome as
// the metrics count it (a missing node answers an exists).
func (a *AsyncRead) decode(r *wireCall, statOnly bool) error {
	body, err := r.result()
	switch {
	case errors.Is(err, zk.ErrNoNode):
		if statOnly {
			return nil
		}
		return err
	case err != nil:
		a.Err = err
		return err
	}
	rd := reader{p: body}
	if !statOnly {
		a.Data = rd.buf()
	}
	a.Stat = rd.stat()
	a.There = true
	a.Err = rd.err()
	return a.Err
}
