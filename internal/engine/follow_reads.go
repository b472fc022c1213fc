package engine

// The watched reads a Follower runs: each leaves its watches through the
// read's Watches, one of each kind per node however often it reads.

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// readFunc is one read of a Follower: it reads what it follows, leaving
// its watches through w (ReadData, ReadChildren, ReadExists with w), and
// acts on what it saw. It runs on the Follower's goroutine (under
// Pipeline, on one of its round's, beside the round's other reads): at
// once, again each time one of its watches fires, after every
// reconnection, and, after it failed, under the client's retry policy.
type readFunc func(ctx context.Context, w *Watches) error

// Watches are the watches one read of a Follower left that have not fired
// yet. The watched reads (Client.ReadData, ReadChildren, ReadExists) leave
// a watch only where none of theirs is still armed, so that each node
// carries one watch of each kind however often it is read, and tell the
// Follower which read to run again when it fires.
type Watches struct {
	c     *Client
	f     *Follower
	key   string
	armed map[watchID]*watchReg
	fired []FollowEvent
	again time.Duration // RunAfter's, for the run in progress
}

// Armed reports whether the read's watch of kind on path is still armed.
func (w *Watches) Armed(kind watchKind, path string) bool {
	if w == nil {
		return false
	}
	r := w.armed[watchID{path, kind}]
	if r == nil {
		return false
	}
	if r.dead.Load() {
		delete(w.armed, r.id)
		return false
	}
	return true
}

// Len returns how many of the read's watches are armed.
func (w *Watches) Len() int {
	n := 0
	for id := range w.armed {
		if w.Armed(id.kind, id.path) {
			n++
		}
	}
	return n
}

// RunAfter asks, from a read, that the read run again d after this run,
// and not before: a watch that fires meanwhile makes it run then, not at
// once. A read that must not run too often (a list of a busy parent, say)
// returns at once with RunAfter instead of waiting on the Follower's
// goroutine, which every read shares.
func (w *Watches) RunAfter(d time.Duration) { w.again = d }

// watch makes a request of c's that leaves a watch of kind on path (req
// returns the watch's channel), registered with c's hub before it is sent
// (its event cannot come first) and dropped again when the request fails.
// A Watches of no Follower (the zero value) keeps the same account of what
// is armed, for a caller that reads with watches of its own.
func (w *Watches) watch(c *Client, kind watchKind, path string, req func() (<-chan zk.Event, error)) error {
	if w.c == nil {
		w.c = c
	}
	id := watchID{path, kind}
	r := w.c.hub.register(w.f, w.key, id)
	ch, err := req()
	if err != nil {
		w.c.hub.unregister(r)
		return err
	}
	if w.c.adopted {
		w.c.hub.backstop(r, ch, w.c.closeCh)
	}
	if old := w.armed[id]; old != nil && old != r {
		w.c.hub.unregister(old)
	}
	if w.armed == nil {
		w.armed = map[watchID]*watchReg{}
	}
	w.armed[id] = r
	return nil
}

// forget drops every watch of the read: a new session has none of them,
// or the read is gone.
func (w *Watches) forget() {
	for id, r := range w.armed {
		w.c.hub.unregister(r)
		delete(w.armed, id)
	}
}

// NodeView is what a read of a node's data sees.
type NodeView struct {
	Exists bool
	Data   []byte
	Stat   *zk.Stat // nil when the node does not exist
}

// ReadData is the watched read of a node's data, the one every recipe
// uses. With w nil it reads plainly. With w it reads with a getData
// watch, unless a data or exists watch of w's is still armed there (then
// plainly: that one fires on the next change). When the node does not
// exist getData leaves no watch, and with creation set ReadData leaves an
// exists watch instead, for the node's creation: no watch is ever left on
// a missing node but that one (none at all without creation, for a node
// that is gone for good, such as a sequential one).
func (c *Client) ReadData(ctx context.Context, path string, w *Watches, creation bool) (NodeView, error) {
	for {
		var (
			data []byte
			st   *zk.Stat
			err  error
		)
		if w == nil || w.Armed(watchData, path) || w.Armed(watchExists, path) {
			data, st, err = c.Get(ctx, path)
		} else {
			err = w.watch(c, watchData, path, func() (ch <-chan zk.Event, err error) {
				data, st, ch, err = c.GetW(ctx, path)
				return ch, err
			})
		}
		switch {
		case err == nil:
			return NodeView{Exists: true, Data: data, Stat: st}, nil
		case !errors.Is(err, zk.ErrNoNode):
			return NodeView{}, err
		case w == nil || !creation || w.Armed(watchExists, path):
			return NodeView{}, nil
		}
		ok, _, err := c.ReadExists(ctx, path, w)
		if err != nil || !ok {
			return NodeView{}, err
		}
		// created meanwhile: the exists watch is armed, read it plainly
	}
}

// ChildrenView is what a read of a node's children sees.
type ChildrenView struct {
	Exists   bool
	Children []string
	Stat     *zk.Stat // the parent's; nil when it does not exist
}

// ReadChildren is the watched read of a node's children: with w it lists
// them with a children watch unless one of w's is still armed there; when
// the node does not exist, with creation set, it leaves an exists watch
// for its creation instead (a children watch is never left on a missing
// node). With w nil it lists plainly.
func (c *Client) ReadChildren(ctx context.Context, path string, w *Watches, creation bool) (ChildrenView, error) {
	for {
		var (
			kids []string
			st   *zk.Stat
			err  error
		)
		if w == nil || w.Armed(WatchChildren, path) {
			kids, st, err = c.Children(ctx, path)
		} else {
			err = w.watch(c, WatchChildren, path, func() (ch <-chan zk.Event, err error) {
				kids, st, ch, err = c.ChildrenW(ctx, path)
				return ch, err
			})
		}
		switch {
		case err == nil:
			return ChildrenView{Exists: true, Children: kids, Stat: st}, nil
		case !errors.Is(err, zk.ErrNoNode):
			return ChildrenView{}, err
		case w == nil || !creation || w.Armed(watchExists, path):
			return ChildrenView{}, nil
		}
		ok, _, err := c.ReadExists(ctx, path, w)
		if err != nil || !ok {
			return ChildrenView{}, err
		}
		// created meanwhile: list it with a children watch
	}
}

// ReadExists reports whether path exists, leaving an exists watch of w's
// there unless one is still armed (plainly with w nil).
func (c *Client) ReadExists(ctx context.Context, path string, w *Watches) (bool, *zk.Stat, error) {
	if w == nil || w.Armed(watchExists, path) {
		return c.Exists(ctx, path)
	}
	var (
		ok bool
		st *zk.Stat
	)
	err := w.watch(c, watchExists, path, func() (ch <-chan zk.Event, err error) {
		ok, st, ch, err = c.ExistsW(ctx, path)
		return ch, err
	})
	return ok, st, err
}
