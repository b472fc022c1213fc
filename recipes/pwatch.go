package recipes

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/gid"
)

// PersistentEvent is one thing a PersistentWatch reports: a node that
// changed, a resync, or a failure to set the watch again.
type PersistentEvent struct {
	// Resync says the watch is set on the server: the first event, and
	// again after every new connection (the same session or a new one).
	// ZooKeeper does not replay what changed while the watch was away, so
	// whoever mirrors the watched nodes reads them again now; events
	// follow from here.
	Resync bool
	// Path is the node that changed (a recipe path, inside the namespace;
	// never the watched root unless the root itself changed).
	Path string
	// Type is zk.EventNodeCreated, zk.EventNodeDeleted or
	// zk.EventNodeDataChanged (and, for a watch that is not recursive,
	// zk.EventNodeChildrenChanged on its own node).
	Type zk.EventType
	// Err is set when setting the watch again on a new connection failed:
	// it is tried again under the client's retry policy (no events
	// meanwhile), unless Err matches ErrUnimplemented (the client reached
	// a server without persistent watches).
	Err error
}

// PersistentWatch is a persistent watch on a node (Curator's
// PersistentWatcher), or, recursive, on its whole subtree: unlike a
// one-shot watch it stays set after it fires, and one server watch covers
// a subtree of any size. It needs ZooKeeper 3.6 or later.
//
// Events reach the listener in the order the server applied the changes,
// on a goroutine of the watch's own (the listener rule of this package:
// the current state first, here a Resync once the watch is set, then
// every event). The client sets the watch again after every reconnection
// and tells the listener with another Resync. A panicking listener is not
// recovered.
//
// What the servers allow: before 3.6 WatchPersistent fails with
// ErrUnimplemented (fall back to one-shot watches); Close removes the
// watch from the server on every version that has them; and before 3.9
// a one-shot watch on the same connection and the exact same path would
// silently replace the persistent one (ZOOKEEPER-4466), so GetW, ExistsW
// and ChildrenW refuse the root of a persistent watch of the same client
// (ErrInvalidArgument; the nodes below it are fine). Since 3.8.4 and
// 3.9.2 nodes the session may not read are not reported.
type PersistentWatch struct {
	c      *Client
	w      *engine.PersistentWatch
	path   string
	stop   chan struct{}
	ended  chan struct{}
	once   sync.Once
	caller atomic.Uint64 // the listener's goroutine
}

// WatchPersistent sets a persistent watch on path, recursive for its
// whole subtree, and returns once the server holds it; fn then gets a
// Resync first and every event after it (see PersistentWatch). Connection
// errors are retried under the client's retry policy until ctx ends. The
// node need not exist: its creation is reported. Close the watch when
// done; closing the client ends it too.
func (c *Client) WatchPersistent(ctx context.Context, path string, recursive bool, fn func(PersistentEvent)) (*PersistentWatch, error) {
	e := c.eng()
	if err := e.Check(); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, fmt.Errorf("%w: nil listener", ErrInvalidArgument)
	}
	full, err := c.FullPath(path)
	if err != nil {
		return nil, err
	}
	w, err := e.AddWatch(ctx, full, recursive)
	if err != nil {
		return nil, err
	}
	pw := &PersistentWatch{c: c, w: w, path: path, stop: make(chan struct{}), ended: make(chan struct{})}
	go pw.run(fn)
	return pw, nil
}

func (pw *PersistentWatch) run(fn func(PersistentEvent)) {
	defer close(pw.ended)
	pw.caller.Store(gid.GoroutineID())
	e := pw.c.eng()
	for {
		evs, ok := pw.w.Events(pw.stop)
		if !ok {
			return
		}
		for _, ev := range evs {
			select {
			case <-pw.stop:
				return
			default:
			}
			switch ev.Kind {
			case engine.PersistentResync:
				fn(PersistentEvent{Resync: true})
			case engine.PersistentNode:
				fn(PersistentEvent{Path: e.Namespace().Strip(ev.Path), Type: ev.Type})
			case engine.PersistentFailed:
				fn(PersistentEvent{Err: fmt.Errorf("zkrecipes: watch %s: %w", pw.path, ev.Err)})
			}
		}
	}
}

// Path returns the watched path, as given.
func (pw *PersistentWatch) Path() string { return pw.path }

// Close removes the watch (from the server too) and waits, until ctx ends, for a listener call in progress to
// return: no call starts after Close returns. Called from the listener
// itself, it does not wait for that call. It is safe to call more than
// once.
func (pw *PersistentWatch) Close(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	var err error
	pw.once.Do(func() {
		close(pw.stop)
		err = pw.w.Remove(ctx)
	})
	if id := gid.GoroutineID(); id != 0 && pw.caller.Load() == id {
		return err // from the listener: its own call cannot end first
	}
	select {
	case <-pw.ended:
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("zkrecipes: watch %s: close: the listener has not returned: %w", pw.path, ctx.Err())
		}
	}
	return err
}
