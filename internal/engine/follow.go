package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
)

// Watches are the watches a Follow's reads left that have not fired yet,
// by key (a path and what is watched on it, say). A read asks Armed before
// it reads: when a watch under that key is still armed it reads without
// leaving another, so that each node carries one standard watch however
// often it is read.
type Watches struct {
	armed map[string]<-chan zk.Event
}

// Armed reports whether the watch under key is still armed.
func (w *Watches) Armed(key string) bool {
	_, ok := w.armed[key]
	return ok
}

// Add records the watch a read left under key.
func (w *Watches) Add(key string, ch <-chan zk.Event) {
	if ch == nil {
		return
	}
	if w.armed == nil {
		w.armed = map[string]<-chan zk.Event{}
	}
	w.armed[key] = ch
}

// Len returns how many watches are armed.
func (w *Watches) Len() int { return len(w.armed) }

// fired forgets every watch that has fired and reports whether one has.
func (w *Watches) fired() bool {
	some := false
	for k, ch := range w.armed {
		select {
		case <-ch:
			delete(w.armed, k)
			some = true
		default:
		}
	}
	return some
}

// forget drops every watch (a new session: the server has none of them).
func (w *Watches) forget() { clear(w.armed) }

// Follow is the one way a recipe keeps what it reads current. It calls
// read at once, then again each time a watch the reads left fires, after
// every reconnection (a new session has none of the old watches: the read
// resyncs), and after a failed read, backing off under the client's retry
// policy (the backoff starts afresh after each success, and after it gives
// up). A failed read is logged at warn with what, and so is a new session
// after a read that left watches (what changed in between went unseen).
// Follow returns nil when ctx ends and ErrClosed when the client closes.
//
// read must leave its watches in w (Watches.Add) and may skip a watch that
// is still armed (Watches.Armed). A read that leaves no watch is called
// again only at the next reconnection.
func (c *Client) Follow(ctx context.Context, what string, read func(ctx context.Context, w *Watches) error) error {
	if err := c.check(); err != nil {
		return err
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	var (
		w       Watches
		retry   backoff.BackOff
		sid     int64
		watched bool // the session's last good read left watches
	)
	for {
		if ctx.Err() != nil {
			return nil
		}
		snap := c.Snapshot()
		if snap.SessionID != sid {
			if sid != 0 && watched {
				// What changed between the old session's watches and
				// the next read was not seen as it happened.
				c.log.Warn("zkrecipes: watches dropped with the session; reading again", "what", what)
			}
			w.forget()
			sid, watched = snap.SessionID, false
		}
		var pause *time.Timer
		if snap.State.IsConnected() {
			err := read(ctx, &w)
			switch {
			case ctx.Err() != nil:
				return nil
			case err == nil:
				retry, watched = nil, w.Len() > 0
			case errors.Is(err, ErrClosed):
				return err
			default:
				c.log.Warn("zkrecipes: reading failed; trying again", "what", what, "err", err)
				if retry == nil {
					retry = c.cfg.retry()
				}
				d := retry.NextBackOff()
				if d == backoff.Stop {
					retry = nil
					d = time.Second
				}
				pause = time.NewTimer(d)
			}
		}
		var paused <-chan time.Time
		if pause != nil {
			paused = pause.C
		}
		err := c.followWait(ctx, &w, snap.Changed, paused)
		if pause != nil {
			pause.Stop()
		}
		if err != nil {
			return err
		}
	}
}

// followWait waits until a watch of w fires (forgetting every one that
// has), the connection state changes to connected, pause fires, ctx ends
// (nil) or the client closes (ErrClosed).
func (c *Client) followWait(ctx context.Context, w *Watches, changed <-chan struct{}, pause <-chan time.Time) error {
	for {
		if w.Len() <= 1 {
			var ch <-chan zk.Event
			for _, ch = range w.armed {
			}
			select {
			case <-ch:
				w.fired()
				return nil
			case <-pause:
				return nil
			case <-changed:
				if c.State().IsConnected() {
					return nil
				}
				changed = c.Snapshot().Changed
				continue
			case <-ctx.Done():
				return nil
			case <-c.closeCh:
				return ErrClientClosed
			}
		}
		cases := make([]reflect.SelectCase, 0, w.Len()+4)
		for _, ch := range []any{ctx.Done(), c.closeCh, changed, pause} {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
		}
		for _, ch := range w.armed {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
		}
		switch chosen, _, _ := reflect.Select(cases); chosen {
		case 0:
			return nil
		case 1:
			return ErrClientClosed
		case 2:
			if c.State().IsConnected() {
				return nil
			}
			changed = c.Snapshot().Changed
		case 3:
			return nil
		default:
			w.fired()
			return nil
		}
	}
}

// NodeView is what FollowNode sees of a node.
type NodeView struct {
	Exists bool
	Data   []byte
	Stat   *zk.Stat // nil when the node does not exist
}

// FollowNode keeps a node's data current: fn gets the first view, then
// every view that differs from the one before (created, deleted, data
// written), on Follow's goroutine. A missing node is watched for its
// creation. It returns as Follow does.
func (c *Client) FollowNode(ctx context.Context, path string, fn func(NodeView)) error {
	var (
		last  NodeView
		first = true
	)
	return c.Follow(ctx, path, func(ctx context.Context, w *Watches) error {
		v, err := c.readNode(ctx, path, w)
		if err != nil {
			return err
		}
		if first || nodeChanged(last, v) {
			first, last = false, v
			fn(v)
		}
		return nil
	})
}

func nodeChanged(a, b NodeView) bool {
	if a.Exists != b.Exists {
		return true
	}
	return a.Exists && (a.Stat.Czxid != b.Stat.Czxid || a.Stat.Mzxid != b.Stat.Mzxid)
}

// readNode reads path's data, leaving one watch under "d:"+path: on the
// data, or on the path's creation when it does not exist.
func (c *Client) readNode(ctx context.Context, path string, w *Watches) (NodeView, error) {
	key := "d:" + path
	for {
		if w.Armed(key) {
			data, st, err := c.Get(ctx, path)
			switch {
			case err == nil:
				return NodeView{Exists: true, Data: data, Stat: st}, nil
			case errors.Is(err, zk.ErrNoNode):
				return NodeView{}, nil
			}
			return NodeView{}, err
		}
		data, st, ch, err := c.GetW(ctx, path)
		if err == nil {
			w.Add(key, ch)
			return NodeView{Exists: true, Data: data, Stat: st}, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return NodeView{}, err
		}
		ok, _, ch, err := c.ExistsW(ctx, path)
		if err != nil {
			return NodeView{}, err
		}
		w.Add(key, ch)
		if !ok {
			return NodeView{}, nil
		}
		// created meanwhile: the exists watch is armed, read it plainly
	}
}

// ChildrenView is what FollowChildren sees of a node's children.
type ChildrenView struct {
	Exists   bool
	Children []string
	Stat     *zk.Stat // the parent's; nil when it does not exist
}

// FollowChildren keeps a node's children current: fn gets the first view,
// then every view that differs from the one before, on Follow's
// goroutine. A missing node is watched for its creation. It returns as
// Follow does.
func (c *Client) FollowChildren(ctx context.Context, path string, fn func(ChildrenView)) error {
	var (
		last  ChildrenView
		first = true
	)
	return c.Follow(ctx, path, func(ctx context.Context, w *Watches) error {
		v, err := c.readChildren(ctx, path, w)
		if err != nil {
			return err
		}
		if first || childrenChanged(last, v) {
			first, last = false, v
			fn(v)
		}
		return nil
	})
}

func childrenChanged(a, b ChildrenView) bool {
	if a.Exists != b.Exists {
		return true
	}
	return a.Exists && (a.Stat.Czxid != b.Stat.Czxid || a.Stat.Pzxid != b.Stat.Pzxid || a.Stat.Cversion != b.Stat.Cversion)
}

// readChildren lists path's children, leaving one watch: on the children
// (under "c:"+path), or, when path does not exist, on its creation (under
// "e:"+path: an exists watch does not fire on a child's change).
func (c *Client) readChildren(ctx context.Context, path string, w *Watches) (ChildrenView, error) {
	ckey, ekey := "c:"+path, "e:"+path
	for {
		if w.Armed(ckey) {
			kids, st, err := c.Children(ctx, path)
			switch {
			case err == nil:
				return ChildrenView{Exists: true, Children: kids, Stat: st}, nil
			case errors.Is(err, zk.ErrNoNode):
				return ChildrenView{}, nil
			}
			return ChildrenView{}, err
		}
		kids, st, ch, err := c.ChildrenW(ctx, path)
		if err == nil {
			w.Add(ckey, ch)
			return ChildrenView{Exists: true, Children: kids, Stat: st}, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return ChildrenView{}, err
		}
		if w.Armed(ekey) {
			return ChildrenView{}, nil
		}
		ok, _, ch, err := c.ExistsW(ctx, path)
		if err != nil {
			return ChildrenView{}, err
		}
		w.Add(ekey, ch)
		if !ok {
			return ChildrenView{}, nil
		}
		// created meanwhile: list it with a children watch
	}
}
