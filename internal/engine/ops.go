package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
)

// Stats counts the requests a Client sent, by kind. Tests use it to prove
// round-trip counts; users can export it as metrics.
type Stats struct {
	Creates  uint64 // create requests (any mode, including containers)
	Deletes  uint64 // delete requests
	GetData  uint64 // getData requests, with or without a watch
	Exists   uint64 // exists requests, with or without a watch
	Children uint64 // getChildren requests, with or without a watch
	SetData  uint64 // setData requests
	Multis   uint64 // multi requests
	Syncs    uint64 // sync requests
	Watches  uint64 // watches set (a subset of the reads above)
	// PendingDeletes is the number of guaranteed deletes still retrying in the background.
	PendingDeletes int64
}

type counters struct {
	creates, deletes, getData, exists, children, setData, multis, syncs, watches atomic.Uint64
	pendingDeletes                                                               atomic.Int64
}

// Stats returns the request counters.
func (c *Client) Stats() Stats {
	s := &c.stats
	return Stats{
		Creates: s.creates.Load(), Deletes: s.deletes.Load(), GetData: s.getData.Load(),
		Exists: s.exists.Load(), Children: s.children.Load(), SetData: s.setData.Load(),
		Multis: s.multis.Load(), Syncs: s.syncs.Load(), Watches: s.watches.Load(), PendingDeletes: s.pendingDeletes.Load(),
	}
}

// Sub returns the difference s - o of the request counters.
func (s Stats) Sub(o Stats) Stats {
	return Stats{
		Creates: s.Creates - o.Creates, Deletes: s.Deletes - o.Deletes, GetData: s.GetData - o.GetData,
		Exists: s.Exists - o.Exists, Children: s.Children - o.Children, SetData: s.SetData - o.SetData,
		Multis: s.Multis - o.Multis, Syncs: s.Syncs - o.Syncs, Watches: s.Watches - o.Watches, PendingDeletes: s.PendingDeletes - o.PendingDeletes,
	}
}

// The methods below are the go-zookeeper calls recipes use, counted. Paths
// are server paths (namespace already applied, see FullPath). On a nil
// Client they return ErrNilClient, on a closed one ErrClosed.

// Create creates a node with the ACL the client's provider gives for it.
func (c *Client) Create(path string, data []byte, flags int32) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	c.stats.creates.Add(1)
	return c.conn.Create(path, data, flags, c.ACL(path))
}

// CreateContainer creates a container node.
func (c *Client) CreateContainer(path string) (string, error) {
	if err := c.check(); err != nil {
		return "", err
	}
	c.stats.creates.Add(1)
	return c.conn.CreateContainer(path, nil, zk.FlagContainer, c.ACL(path))
}

// Delete deletes a node (version -1 for any).
func (c *Client) Delete(path string, version int32) error {
	if err := c.check(); err != nil {
		return err
	}
	c.stats.deletes.Add(1)
	return c.conn.Delete(path, version)
}

// Get reads a node's data.
func (c *Client) Get(path string) ([]byte, *zk.Stat, error) {
	if err := c.check(); err != nil {
		return nil, nil, err
	}
	c.stats.getData.Add(1)
	return c.conn.Get(path)
}

// GetW reads a node's data and leaves a watch on it.
func (c *Client) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if err := c.check(); err != nil {
		return nil, nil, nil, err
	}
	c.stats.getData.Add(1)
	d, st, ch, err := c.conn.GetW(path)
	if err == nil {
		c.stats.watches.Add(1)
	}
	return d, st, ch, err
}

// Exists reports whether a node exists.
func (c *Client) Exists(path string) (bool, *zk.Stat, error) {
	if err := c.check(); err != nil {
		return false, nil, err
	}
	c.stats.exists.Add(1)
	return c.conn.Exists(path)
}

// ExistsW reports whether a node exists and leaves a watch on it.
func (c *Client) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	if err := c.check(); err != nil {
		return false, nil, nil, err
	}
	c.stats.exists.Add(1)
	ok, st, ch, err := c.conn.ExistsW(path)
	if err == nil {
		c.stats.watches.Add(1)
	}
	return ok, st, ch, err
}

// Children lists a node's children; the Stat is the parent's.
func (c *Client) Children(path string) ([]string, *zk.Stat, error) {
	if err := c.check(); err != nil {
		return nil, nil, err
	}
	c.stats.children.Add(1)
	return c.conn.Children(path)
}

// ChildrenW lists a node's children and leaves a watch on the list.
func (c *Client) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if err := c.check(); err != nil {
		return nil, nil, nil, err
	}
	c.stats.children.Add(1)
	ch, st, w, err := c.conn.ChildrenW(path)
	if err == nil {
		c.stats.watches.Add(1)
	}
	return ch, st, w, err
}

// Set writes a node's data.
func (c *Client) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	c.stats.setData.Add(1)
	return c.conn.Set(path, data, version)
}

// Sync asks the server the client is connected to to catch up with the
// leader on path, so that a read after it sees every write committed
// before it (a follower may lag behind).
func (c *Client) Sync(path string) error {
	if err := c.check(); err != nil {
		return err
	}
	c.stats.syncs.Add(1)
	_, err := c.conn.Sync(path)
	return err
}

// Multi runs ops as one transaction. When the server refuses the
// transaction, the returned error is the first failing operation's error
// (go-zookeeper reports only a generic one), and the responses say which.
func (c *Client) Multi(ops ...any) ([]zk.MultiResponse, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	c.stats.multis.Add(1)
	res, err := c.conn.Multi(ops...)
	if err != nil {
		for _, r := range res {
			if r.Error != nil { // earlier ops report OK, later ones runtime inconsistency
				return res, r.Error
			}
		}
	}
	return res, err
}

// Retry runs op until it succeeds, fails with an error that IsRetryable
// does not accept, the retry policy gives up, ctx ends or the client is
// closed. The error of the last attempt is returned, wrapping ctx.Err() when
// ctx ended.
func (c *Client) Retry(ctx context.Context, op func() error) error {
	if op == nil {
		return fmt.Errorf("%w: nil operation", ErrInvalidArgument)
	}
	if err := c.check(); err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	var b backoff.BackOff
	for {
		err := op()
		if err == nil || !IsRetryable(err) {
			return err
		}
		if b == nil {
			b = c.cfg.retry()
		}
		d := b.NextBackOff()
		if d == backoff.Stop {
			return err
		}
		if werr := c.sleep(ctx, d); werr != nil {
			return fmt.Errorf("%w (last error: %w)", werr, err)
		}
	}
}

// sleep waits d, returning early with an error when ctx ends or the client closes.
func (c *Client) sleep(ctx context.Context, d time.Duration) error {
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
	case <-c.closeCh:
		return ErrClosed
	}
}
