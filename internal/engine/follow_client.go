package engine

// The Client's ways to follow: one read, one node, one node's children,
// and the Follower its recipes share.

import (
	"context"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

func nodeChanged(a, b NodeView) bool {
	if a.Exists != b.Exists {
		return true
	}
	return a.Exists && (a.Stat.Czxid != b.Stat.Czxid || a.Stat.Mzxid != b.Stat.Mzxid)
}

func childrenChanged(a, b ChildrenView) bool {
	if a.Exists != b.Exists {
		return true
	}
	return a.Exists && (a.Stat.Czxid != b.Stat.Czxid || a.Stat.Pzxid != b.Stat.Pzxid || a.Stat.Cversion != b.Stat.Cversion)
}

// SharedFollower returns the client's own Follower, run on one goroutine
// of the client's from the first call until Close: for recipes that
// follow nodes for as long as something of theirs lives, with no
// lifecycle of their own to run a Follower in (a revocable lease). Its
// reads must not block: hand slow work to a goroutine.
func (c *Client) SharedFollower() (*Follower, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	c.shared.once.Do(func() {
		f := c.NewFollower("shared", nil)
		c.sm.mu.Lock()
		defer c.sm.mu.Unlock()
		if c.sm.closed {
			return
		}
		c.shared.f = f
		c.wg.Add(1) // c.sm.mu is held and the client is open
		go func() {
			defer c.wg.Done()
			_ = f.Run(context.Background()) // until Close
		}()
	})
	if c.shared.f == nil {
		return nil, zkerr.ErrClientClosed
	}
	return c.shared.f, nil
}

// sharedFollower is the state behind SharedFollower.
type sharedFollower struct {
	once sync.Once
	f    *Follower
}
