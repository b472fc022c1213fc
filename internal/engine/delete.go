package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// GuaranteedDelete deletes the node at path, which belongs to session sid
// (0 for the current one), so that a released hold is never kept until
// session expiry. It never blocks on a dead connection: when the client is
// not connected, when the delete fails for a connection reason, or when
// ctx ends first, the delete goes to a background worker that retries until
// it succeeds, the node is gone, the session ends or the client closes
// (Stats().PendingDeletes counts those). It returns nil when the node is
// gone or the delete was handed to the worker, and the error of any other
// failure.
func (c *Client) GuaranteedDelete(ctx context.Context, path string, sid int64) error {
	if err := c.Check(); err != nil { // a nil or zero Client has no deleter
		return err
	}
	return c.del.delete(ctx, path, sid)
}

// deleter makes the client's guaranteed deletes: at once when it can, else
// on its delete goroutine (loop) or on background goroutines that retry
// until the node is gone, its session ends or the client closes.
type deleter struct {
	c    *Client
	jobs chan deleteJob // to the delete goroutine; unbuffered: see delete
}

// delete is GuaranteedDelete, on a checked client.
func (d *deleter) delete(ctx context.Context, path string, sid int64) error {
	c := d.c
	if err := zkpath.ValidatePath(path); err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	snap := c.Snapshot()
	if sid == 0 {
		sid = snap.SessionID
	}
	if snap.State.IsConnected() && snap.SessionID != sid {
		return nil // a newer session: the node went with its own
	}
	if !snap.State.IsConnected() {
		d.inBackground(path, sid, nil)
		return nil
	}
	if ctx.Done() == nil { // nothing to honour: no goroutine needed
		return d.now(path, sid)
	}
	// The Wire's requests can be abandoned (see wirecall.go): the caller's
	// goroutine makes the delete, and when ctx ends first the worker makes
	// sure of it.
	if err, ok := wireDelete(c, ctx, path, -1); ok {
		if err != nil && errors.Is(err, ctx.Err()) {
			d.inBackground(path, sid, nil)
			return nil // the delete goes on
		}
		return d.after(path, sid, deleted(path, err))
	}
	// go-zookeeper's requests cannot be abandoned, so the delete is made on
	// another goroutine while we wait for it or for ctx: the client's
	// delete goroutine when it is idle (it lives as long as the client: a
	// goroutine per release costs its creation and a scheduler wake-up more
	// on every release), else a goroutine of its own, so that concurrent
	// releases are not queued behind one another.
	if notify.IsClosed(c.closeCh) {
		return zkerr.ErrClientClosed
	}
	res := deleteResults.Get().(chan error)
	d.pending(1)
	select {
	case d.jobs <- deleteJob{path: path, sid: sid, res: res}: // unbuffered: taken by an idle loop
	default:
		d.pending(-1)
		if !d.inBackground(path, sid, res) {
			return zkerr.ErrClientClosed
		}
	}
	select {
	case err := <-res:
		deleteResults.Put(res) // drained: reusable
		return err
	case <-ctx.Done():
		return nil // the delete goes on
	case <-c.closeCh:
		return nil // the session ends with the client, and its nodes with it
	}
}

// deleteResults recycles the channels GuaranteedDelete waits on. Only a
// drained channel goes back: one whose caller stopped waiting may still
// receive its result.
var deleteResults = sync.Pool{New: func() any { return make(chan error, 1) }}

// deleteJob is a delete handed to the client's delete goroutine.
type deleteJob struct {
	path string
	sid  int64
	res  chan<- error // receives the outcome of the first attempt (buffered)
}

// loop is the client's delete goroutine: it makes the deletes that
// GuaranteedDelete callers with a ctx wait for, one attempt each, and hands
// those that fail for a connection reason to a retrying background
// goroutine (now). It ends when the client closes.
func (d *deleter) loop() {
	c := d.c
	defer c.wg.Done()
	for {
		select {
		case j := <-d.jobs:
			if cur := c.conn.SessionID(); cur != 0 && cur != j.sid {
				j.res <- nil // the node went with its session
			} else {
				j.res <- d.now(j.path, j.sid)
			}
			d.pending(-1)
		case <-c.closeCh:
			return
		}
	}
}

// pending changes the count of guaranteed deletes in progress.
func (d *deleter) pending(n int64) {
	d.c.stats.pendingDeletes.Add(n)
	d.c.met.addPendingDeletes(n)
}

// now tries once and hands a connection failure to the worker.
func (d *deleter) now(path string, sid int64) error {
	return d.after(path, sid, d.once(path))
}

// after reports the outcome of a delete attempt (as once reports it), and
// hands a connection failure to the worker.
func (d *deleter) after(path string, sid int64, err error) error {
	switch {
	case err == nil || errors.Is(err, zk.ErrSessionExpired):
		return nil
	case zkerr.IsRetryable(err):
		d.inBackground(path, sid, nil)
		return nil
	default:
		return fmt.Errorf("zkrecipes: delete %s: %w", path, zkerr.Explain(err))
	}
}

// inBackground deletes path on a goroutine Close waits for, retrying
// connection failures; res, if not nil, receives the first attempt's
// outcome as now reports it. It reports false when the client is closed.
func (d *deleter) inBackground(path string, sid int64, res chan<- error) bool {
	c := d.c
	d.pending(1)
	ok := c.background(func() {
		defer d.pending(-1)
		first := true
		d.retryForever(sid, func() error {
			err := d.once(path)
			if first && res != nil {
				first = false
				switch {
				case err == nil || errors.Is(err, zk.ErrSessionExpired) || zkerr.IsRetryable(err):
					res <- nil
				default:
					res <- fmt.Errorf("zkrecipes: delete %s: %w", path, zkerr.Explain(err))
				}
			}
			return err
		})
	})
	if !ok {
		d.pending(-1)
	}
	return ok
}

// once deletes path; a missing node counts as success.
func (d *deleter) once(path string) error {
	return deleted(path, d.c.Delete(context.Background(), path, -1))
}

// deleted is the outcome of a delete of path that returned err: a missing
// node counts as success.
func deleted(path string, err error) error {
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		parent, name := zkpath.SplitPath(path)
		bury(parent, name, name[max(0, len(name)-10):]) // the sequence suffix orders eviction
		return nil
	}
	return err
}

// retryForever runs op with backoff while it fails with retryable errors,
// until session sid is gone or the client closes.
func (d *deleter) retryForever(sid int64, op func() error) {
	c := d.c
	retry := newBackoff(foreverPolicy)
	for {
		err := op()
		if err == nil || !zkerr.IsRetryable(err) {
			if err != nil && !errors.Is(err, zk.ErrSessionExpired) {
				c.log.Warn("zkrecipes: background cleanup failed", "err", err)
			}
			return
		}
		c.met.countRetry()
		if err := sleep(context.Background(), retry.Pace(), c.closeCh); err != nil {
			return
		}
		if cur := c.conn.SessionID(); sid != 0 && cur != 0 && cur != sid {
			return // the session that owned the node has ended
		}
	}
}

// background runs fn on a goroutine Close waits for; it reports false (and
// does not run fn) when the client is already closed.
func (c *Client) background(fn func()) bool {
	c.sm.mu.Lock()
	defer c.sm.mu.Unlock()
	if c.sm.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn()
	}()
	return true
}
