package engine

// How an owned node is kept: one goroutine per node that makes it exist,
// be ours and hold the latest data, watching it between looks.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// run is the background loop: it brings the node to what it must be,
// then waits for its watch, a state change, a poke or the end. A failure
// is tried again after the retry policy's pause, a refusal (NoAuth) only
// at the next state change or poke, a node the server cannot make
// (ErrUnimplemented: a container parent or a TTL node on a server too
// old) only at the next poke: a 3.4 server closes the connection after
// each such refusal, and the reconnection would bring the next attempt.
func (o *OwnedNode) run(ctx context.Context) {
	defer close(o.done)
	c := o.c
	var (
		retry = c.Backoff()
		w     ownedWatch
	)
	for {
		if o.stopped() || ctx.Err() != nil || c.Check() != nil {
			return
		}
		snap := c.Snapshot()
		var pause *time.Timer
		changed := snap.Changed
		if snap.State.IsConnected() {
			err := o.step(ctx, snap, &w)
			switch {
			case ctx.Err() != nil || errors.Is(err, zkerr.ErrClosed):
				return
			case err == nil:
				retry.Reset()
			case errors.Is(err, zkerr.ErrUnimplemented):
				c.log.Error("zkrecipes: the server cannot make a node of ours; trying again only when its data is set",
					"what", o.spec.What, "err", err)
				changed = nil
			case zkerr.IsRefused(err):
				// Not on a timer (Curator's PersistentNode stops at NOAUTH
				// too): again at the next state change or poke.
				c.log.Error("zkrecipes: not authorised to keep a node of ours; trying again when the connection changes or the data is set",
					"what", o.spec.What, "err", err)
			default:
				c.log.Warn("zkrecipes: keeping a node of ours failed; trying again", "what", o.spec.What, "err", err)
				pause = time.NewTimer(retry.Pace())
			}
		}
		var paused <-chan time.Time
		if pause != nil {
			paused = pause.C
		}
		select {
		case <-w.ch:
			w = ownedWatch{}
		case <-paused:
		case <-changed:
		case <-o.kick:
		case <-o.stop:
		case <-ctx.Done():
		case <-c.closeCh:
		}
		if pause != nil {
			pause.Stop()
		}
	}
}

// ownedWatch is the watch the loop left on the node.
type ownedWatch struct {
	path string
	sid  int64
	ch   <-chan zk.Event
}

// step makes the node exist, be ours and hold the latest data, and leaves
// a watch on it in *w (kept while it has not fired).
func (o *OwnedNode) step(ctx context.Context, snap Snapshot, w *ownedWatch) error {
	c := o.c
	for {
		o.mu.Lock()
		if o.closed {
			o.mu.Unlock()
			return zkerr.ErrClosed
		}
		cur, data, dgen, wrote, sweep := o.cur, o.data, o.dataGen, o.wrote, o.sweep
		o.making = cur.Path == ""
		o.mu.Unlock()
		if cur.Path == "" {
			err := o.create(ctx, data, dgen)
			o.mu.Lock()
			o.making = false
			if err != nil && !zkerr.IsRetryable(err) && !errors.Is(err, zk.ErrSessionExpired) && !errors.Is(err, zkerr.ErrSessionLost) && ctx.Err() == nil {
				o.lastErr = err
				o.broadcast()
			}
			o.mu.Unlock()
			if err != nil {
				return err
			}
			continue
		}
		var (
			ok  bool
			st  *zk.Stat
			err error
		)
		if w.path == cur.Path && w.sid == snap.SessionID && w.ch != nil {
			ok, st, err = c.Exists(ctx, cur.Path)
		} else {
			var ch <-chan zk.Event
			ok, st, ch, err = c.ExistsW(ctx, cur.Path)
			if err == nil {
				*w = ownedWatch{path: cur.Path, sid: snap.SessionID, ch: ch}
			}
		}
		if err != nil {
			return err
		}
		switch {
		case !ok:
			c.log.Warn("zkrecipes: a node of ours is gone (deleted, or with its session); making it again",
				"what", o.spec.What, "node", c.Namespace().Strip(cur.Path))
			o.drop(cur, sweep)
			continue
		case o.ephemeral && st.EphemeralOwner != c.conn.SessionID():
			again, err := o.notOurs(ctx, cur, st, sweep)
			if err != nil || !again {
				return err // nil: another session's node at our path, taken over once it goes
			}
			continue
		}
		if wrote < dgen {
			_, err := c.Set(ctx, cur.Path, data, -1)
			switch {
			case errors.Is(err, zk.ErrNoNode):
				continue // the next look makes it again
			case err != nil:
				return err
			}
			o.mu.Lock()
			if o.cur == cur && o.wrote < dgen {
				o.wrote = dgen
				o.broadcast()
			}
			o.mu.Unlock()
			continue // the write fired the watch: look again
		}
		return nil
	}
}

// notOurs deals with cur, an ephemeral node of ours whose owner (in st)
// is not the current session: an older session's node of ours is
// deleted, a protected or sequential name's owner is not us (CURATOR-696);
// both are dropped, to be made again (again). Another session's node at
// our fixed path is left to it (not again).
func (o *OwnedNode) notOurs(ctx context.Context, cur Owned, st *zk.Stat, sweep string) (again bool, err error) {
	c := o.c
	o.mu.Lock()
	leftover := o.mine && cur.Session == st.EphemeralOwner
	o.mu.Unlock()
	switch {
	case leftover:
		// Made by an older session of ours that the server keeps.
		c.log.Warn("zkrecipes: a node of ours belongs to an older session of ours; deleting it and making a new one",
			"what", o.spec.What, "node", c.Namespace().Strip(cur.Path), "owner", fmt.Sprintf("0x%x", st.EphemeralOwner))
		if err := c.Delete(ctx, cur.Path, st.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return false, err
		}
		o.drop(cur, sweep)
		return true, nil
	case o.protectedOrSequential():
		// Our name, another session's node: not ours (CURATOR-696).
		c.log.Warn("zkrecipes: a node of ours belongs to another session; making a new one",
			"what", o.spec.What, "node", c.Namespace().Strip(cur.Path), "owner", fmt.Sprintf("0x%x", st.EphemeralOwner))
		o.drop(cur, sweep)
		return true, nil
	}
	return false, nil
}

// protectedOrSequential reports whether each node has a name of its own,
// which no other session can have made.
func (o *OwnedNode) protectedOrSequential() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.spec.Protected || (o.sequential && o.fixed == "")
}

// drop forgets cur, a node that is gone or not ours.
func (o *OwnedNode) drop(cur Owned, sweep string) {
	o.mu.Lock()
	if o.cur != cur {
		o.mu.Unlock()
		return
	}
	o.cur, o.mine, o.sweep = Owned{}, false, ""
	o.broadcast()
	o.mu.Unlock()
	o.forget(cur, sweep)
}
