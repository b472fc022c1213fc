package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/metric"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkop"
)

type counters struct {
	creates, deletes, getData, exists, children, setData, multis, syncs, watches, multiReads atomic.Uint64
	pendingDeletes                                                                           atomic.Int64
}

// Stats returns the request counters.
func (c *Client) Stats() metric.RequestCounts {
	if c == nil {
		return metric.RequestCounts{}
	}
	s := &c.stats
	return metric.RequestCounts{
		Creates: s.creates.Load(), Deletes: s.deletes.Load(), GetData: s.getData.Load(),
		Exists: s.exists.Load(), Children: s.children.Load(), SetData: s.setData.Load(),
		Multis: s.multis.Load(), MultiReads: s.multiReads.Load(), Syncs: s.syncs.Load(), Watches: s.watches.Load(), PendingDeletes: s.pendingDeletes.Load(),
	}
}

// The methods below are the go-zookeeper calls recipes use, counted. Paths
// are server paths (namespace already applied, see FullPath). On a nil
// Client they return ErrNilClient, on a closed one ErrClosed.
//
// Each returns when its reply arrives or ctx ends, whichever comes first,
// even while the request is in flight on a stalled link (a request still
// being written when ctx ends has pokeGrace, 100 ms, to be written: a
// healthy connection is kept). go-zookeeper
// cannot cancel a request, so the requests that set no watch (Create,
// Delete, Get, Exists, Children, Set, Sync) go through the client's Wire
// when it can send them: it writes them from the caller's goroutine and
// hands the caller the reply, which the caller waits for or for ctx (see
// wirecall.go). Otherwise (a watch, a multi, auth, no Wire, or a
// connection not ready), with a ctx that can end, a goroutine of the
// client's makes the request on go-zookeeper, and drops the reply that
// comes after ctx ended. A create whose reply comes after ctx ended
// deletes the node it made, so that a caller told "ctx ended" is left
// nothing. When ctx ends the error is ctx.Err() itself (the caller says
// what it was doing).

// send runs req, a go-zookeeper request, and returns its reply, or
// ctx.Err() when ctx ends first (late then gets the reply, if it is not
// nil). With a ctx that never ends it makes the request in the caller's
// goroutine.
func send[T any](c *Client, ctx context.Context, op reqOp, req func() (T, error), late func(T, error)) (T, error) {
	var zero T
	if err := c.Check(); err != nil {
		return zero, err
	}
	if ctx == nil {
		return zero, fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	if ctx.Done() == nil {
		v, err := req()
		c.met.countRequest(op, err)
		return v, err
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	r := &inflight[T]{done: make(chan struct{})}
	if !c.background(func() { r.run(req, late) }) {
		return zero, zkerr.ErrClientClosed
	}
	select {
	case <-r.done:
		c.met.countRequest(op, r.err)
		return r.v, r.err
	case <-ctx.Done():
		if v, err, ok := r.abandon(); ok {
			c.met.countRequest(op, err)
			return v, err // the reply came first after all
		}
		c.met.countRequest(op, ctx.Err())
		return zero, ctx.Err()
	}
}

// inflight is a request a caller may stop waiting for.
type inflight[T any] struct {
	mu        sync.Mutex
	done      chan struct{}
	v         T
	err       error
	replied   bool
	abandoned bool
}

func (r *inflight[T]) run(req func() (T, error), late func(T, error)) {
	v, err := req()
	r.mu.Lock()
	if r.abandoned {
		r.mu.Unlock()
		if late != nil {
			late(v, err)
		}
		return
	}
	r.v, r.err, r.replied = v, err, true
	r.mu.Unlock()
	close(r.done)
}

// abandon gives the request up, unless its reply is in: then it returns
// the reply and true.
func (r *inflight[T]) abandon() (T, error, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.replied {
		return r.v, r.err, true
	}
	r.abandoned = true
	var zero T
	return zero, nil, false
}

// pair and triple carry multi-value replies through send.
type (
	pair[A, B any] struct {
		a A
		b B
	}
	triple[A, B, C any] struct {
		a A
		b B
		c C
	}
)

// Create creates a node with the ACL the client's provider gives for it.
// A create whose reply arrives after ctx ended deletes what it made.
func (c *Client) Create(ctx context.Context, path string, data []byte, flags int32) (string, error) {
	return c.create(ctx, reqCreate, path, data, flags, 0)
}

// CreateModeTTL is Create in any create mode of go-zookeeper
// (zk.FlagPersistent to zk.FlagPersistentSequentialWithTTL), for a caller
// that answers zk.ErrNoNode (a missing parent) by making the parents and
// trying again: a container mode is made as a container, a TTL mode with
// ttl, and a missing parent counts as result no_parent in metrics (a step
// of a healthy create), not as the error no_node.
func (c *Client) CreateModeTTL(ctx context.Context, path string, data []byte, flags int32, ttl time.Duration) (string, error) {
	return c.create(ctx, reqCreateMakingParents, path, data, flags, ttl)
}

// create is every create, counted as op.
func (c *Client) create(ctx context.Context, op reqOp, path string, data []byte, flags int32, ttl time.Duration) (string, error) {
	if created, err, ok := wireCreate(c, ctx, op, path, data, flags); ok {
		return created, err
	}
	if flags == zk.FlagContainer && c.refusesContainers() {
		return "", containersRefused(nil)
	}
	created, err := send(c, ctx, op, func() (string, error) {
		c.stats.creates.Add(1)
		switch {
		case flags == zk.FlagContainer:
			return c.conn.CreateContainer(path, data, flags, c.cfg.ACL(path))
		case isTTLMode(flags):
			return c.conn.CreateTTL(path, data, flags, c.cfg.ACL(path), ttl)
		}
		return c.conn.Create(path, data, flags, c.cfg.ACL(path))
	}, c.del.undoCreate)
	return created, c.refusedCreate(flags, err)
}

// isTTLMode reports whether flags is a TTL create mode.
func isTTLMode(flags int32) bool {
	return flags == zk.FlagTTL || flags == zk.FlagPersistentSequentialWithTTL
}

// isEphemeralMode reports whether flags is an ephemeral create mode.
func isEphemeralMode(flags int32) bool {
	return flags == zk.FlagEphemeral || flags == zk.FlagEphemeralSequential
}

// isSequentialMode reports whether flags is a sequential create mode.
func isSequentialMode(flags int32) bool {
	return flags == zk.FlagSequence || flags == zk.FlagEphemeralSequential || flags == zk.FlagPersistentSequentialWithTTL
}

// unsequenced returns the plain form of a sequential create mode (flags
// itself for the others).
func unsequenced(flags int32) int32 {
	switch flags {
	case zk.FlagSequence:
		return zk.FlagPersistent
	case zk.FlagEphemeralSequential:
		return zk.FlagEphemeral
	case zk.FlagPersistentSequentialWithTTL:
		return zk.FlagTTL
	}
	return flags
}

// createContainer creates a container node, counted as op (a parent's
// create, for EnsureContainers).
func createContainer(c *Client, ctx context.Context, op reqOp, path string) (string, error) {
	if c.refusesContainers() {
		return "", containersRefused(nil)
	}
	created, err := send(c, ctx, op, func() (string, error) {
		c.stats.creates.Add(1)
		return c.conn.CreateContainer(path, parentData, zk.FlagContainer, c.cfg.ACL(path))
	}, nil) // an empty container goes by itself
	return created, c.refusedCreate(zk.FlagContainer, err)
}

// undoCreate deletes a node whose create was abandoned.
func (d *deleter) undoCreate(path string, err error) {
	c := d.c
	if err != nil {
		return
	}
	c.log.Warn("zkrecipes: deleting a node whose create was abandoned (ctx ended before the reply)", "path", path)
	_ = c.GuaranteedDelete(context.Background(), path, c.conn.SessionID())
}

// Delete deletes a node (version -1 for any).
func (c *Client) Delete(ctx context.Context, path string, version int32) error {
	if err, ok := wireDelete(c, ctx, path, version); ok {
		return err
	}
	_, err := send(c, ctx, reqDelete, func() (struct{}, error) {
		c.stats.deletes.Add(1)
		return struct{}{}, c.conn.Delete(path, version)
	}, nil)
	return err
}

// Get reads a node's data.
func (c *Client) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	if data, st, err, ok := wireGet(c, ctx, path); ok {
		return data, st, err
	}
	r, err := send(c, ctx, reqGetData, func() (pair[[]byte, *zk.Stat], error) {
		c.stats.getData.Add(1)
		d, st, err := c.conn.Get(path)
		return pair[[]byte, *zk.Stat]{d, st}, err
	}, nil)
	return r.a, r.b, err
}

// GetW reads a node's data and leaves a watch on it.
func (c *Client) GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if err := c.Check(); err != nil {
		return nil, nil, nil, err
	}
	if err := c.pw.guardOneShot(ctx, path); err != nil {
		return nil, nil, nil, err
	}
	r, err := send(c, ctx, reqGetData, func() (triple[[]byte, *zk.Stat, <-chan zk.Event], error) {
		c.stats.getData.Add(1)
		d, st, ch, err := c.conn.GetW(path)
		if err == nil {
			c.stats.watches.Add(1)
		}
		return triple[[]byte, *zk.Stat, <-chan zk.Event]{d, st, ch}, err
	}, nil)
	return r.a, r.b, r.c, err
}

// Exists reports whether a node exists.
func (c *Client) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	if there, st, err, ok := wireExists(c, ctx, path); ok {
		return there, st, err
	}
	r, err := send(c, ctx, reqExists, func() (pair[bool, *zk.Stat], error) {
		c.stats.exists.Add(1)
		ok, st, err := c.conn.Exists(path)
		return pair[bool, *zk.Stat]{ok, st}, err
	}, nil)
	return r.a, r.b, err
}

// ExistsW reports whether a node exists and leaves a watch on it.
func (c *Client) ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	if err := c.Check(); err != nil {
		return false, nil, nil, err
	}
	if err := c.pw.guardOneShot(ctx, path); err != nil {
		return false, nil, nil, err
	}
	r, err := send(c, ctx, reqExists, func() (triple[bool, *zk.Stat, <-chan zk.Event], error) {
		c.stats.exists.Add(1)
		ok, st, ch, err := c.conn.ExistsW(path)
		if err == nil {
			c.stats.watches.Add(1)
		}
		return triple[bool, *zk.Stat, <-chan zk.Event]{ok, st, ch}, err
	}, nil)
	return r.a, r.b, r.c, err
}

// Children lists a node's children; the Stat is the parent's.
func (c *Client) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	if kids, st, err, ok := wireChildren(c, ctx, path); ok {
		return kids, st, err
	}
	r, err := send(c, ctx, reqChildren, func() (pair[[]string, *zk.Stat], error) {
		c.stats.children.Add(1)
		kids, st, err := c.conn.Children(path)
		return pair[[]string, *zk.Stat]{kids, st}, err
	}, nil)
	return r.a, r.b, err
}

// ChildrenW lists a node's children and leaves a watch on the list.
func (c *Client) ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if err := c.Check(); err != nil {
		return nil, nil, nil, err
	}
	if err := c.pw.guardOneShot(ctx, path); err != nil {
		return nil, nil, nil, err
	}
	r, err := send(c, ctx, reqChildren, func() (triple[[]string, *zk.Stat, <-chan zk.Event], error) {
		c.stats.children.Add(1)
		kids, st, ch, err := c.conn.ChildrenW(path)
		if err == nil {
			c.stats.watches.Add(1)
		}
		return triple[[]string, *zk.Stat, <-chan zk.Event]{kids, st, ch}, err
	}, nil)
	return r.a, r.b, r.c, err
}

// Set writes a node's data.
func (c *Client) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	if st, err, ok := wireSet(c, ctx, path, data, version); ok {
		return st, err
	}
	return send(c, ctx, reqSetData, func() (*zk.Stat, error) {
		c.stats.setData.Add(1)
		return c.conn.Set(path, data, version)
	}, nil)
}

// Sync asks the server the client is connected to to catch up with the
// leader on path, so that a read after it sees every write committed
// before it (a follower may lag behind).
func (c *Client) Sync(ctx context.Context, path string) error {
	if err, ok := wireSync(c, ctx, path); ok {
		return err
	}
	_, err := send(c, ctx, reqSync, func() (string, error) {
		c.stats.syncs.Add(1)
		return c.conn.Sync(path)
	}, nil)
	return err
}

// Barrier orders the session's next read after every write acknowledged
// before the call, whichever server the session is on: a transaction of
// one check on path at any version, which changes nothing but goes
// through the leader and a quorum as a write does; a server answers a
// session's read only after applying the session's earlier writes. (On a
// missing node the check fails: that answer is ordered all the same.)
// Sync does not do this: the leader takes a sync for a read, so after a
// sync a read on the leader can miss a write that a follower applied and
// acknowledged first (the leader applies a commit after sending it to
// the followers), and a leader cut off from its followers answers until
// it steps down, while they may elect another and take writes.
func (c *Client) Barrier(ctx context.Context, path string) error {
	_, err := c.Multi(ctx, zkop.Check(path, -1))
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// Multi runs ops, on server paths, as one transaction; creates get the
// ACL the client's provider gives. A zero zkop.Op is refused. When the server
// refuses the transaction, the returned error is the first failing
// operation's error (go-zookeeper reports only a generic one), and the
// responses say which. When ctx ends first the transaction may or may not
// be applied.
func (c *Client) Multi(ctx context.Context, ops ...zkop.Op) ([]zk.MultiResponse, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	reqs, err := zkop.Requests("multi", ops, c.cfg.ACL)
	if err != nil {
		return nil, err
	}
	return send(c, ctx, reqMulti, func() ([]zk.MultiResponse, error) {
		c.stats.multis.Add(1)
		res, err := c.conn.Multi(reqs...)
		if err != nil {
			for _, r := range res {
				if r.Error != nil { // earlier ops report OK, later ones runtime inconsistency
					return res, r.Error
				}
			}
		}
		return res, err
	}, nil)
}

// Retry runs op until it succeeds, fails with an error that IsRetryable
// does not accept, the retry policy gives up, ctx ends or the client is
// closed. The error of the last attempt is returned, wrapping ctx.Err() when
// ctx ended.
func (c *Client) Retry(ctx context.Context, op func() error) error {
	if op == nil {
		return fmt.Errorf("%w: nil operation", zkerr.ErrInvalidArgument)
	}
	if err := c.Check(); err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	b := c.Backoff()
	for {
		err := op()
		if err == nil || !zkerr.IsRetryable(err) {
			return err
		}
		d, ok := b.next()
		if !ok {
			return err
		}
		c.met.countRetry()
		if werr := sleep(ctx, d, c.closeCh); werr != nil {
			return fmt.Errorf("%w (last error: %w)", werr, err)
		}
	}
}

// sleep waits d, returning early with an error when ctx ends or closed
// (the client's Done) is closed.
func sleep(ctx context.Context, d time.Duration, closed <-chan struct{}) error {
	if ctx == nil {
		ctx = context.Background()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return zkerr.ErrClientClosed
	}
}
