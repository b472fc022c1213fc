package recipes

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// run applies session events in order.
func (c *Client) run() {
	defer c.wg.Done()
	for {
		evs, ok := c.inbox.take(nil)
		if !ok {
			return
		}
		for _, ev := range evs {
			c.apply(ev)
		}
	}
}

// lostTimeout is an internal event: the LOST timer of generation
// ev.State fired.
const lostTimeout zk.EventType = -1000

func (c *Client) apply(ev zk.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if ev.Type == lostTimeout {
		if uint64(ev.State) != c.timerGen || c.state != StateSuspended || c.lost {
			return
		}
		if d := c.lostDelay(); d > 0 { // bytes arrived meanwhile
			c.startTimer()
			return
		}
		c.log.Warn("zkrecipes: declaring session lost: a session timeout passed since the server was last heard",
			"session", fmt.Sprintf("0x%x", c.sessionID), "timeout", c.SessionTimeout())
		c.declareLost()
		return
	}
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		sid := c.conn.SessionID()
		c.stopTimer()
		switch {
		case c.state == StateLatent:
			c.sessionID = sid
			c.transition(StateConnected)
		case c.state == StateConnected || c.state == StateReconnected:
			if sid != c.sessionID { // a new session without a disconnect seen
				c.declareLost()
				c.newSession(sid)
				c.transition(StateReconnected)
			}
		default:
			if sid != c.sessionID {
				if !c.lost {
					c.declareLost()
				}
				c.newSession(sid)
			} else if c.lost {
				// The session we declared LOST is alive after all. Its
				// holders were told their holds are gone: remove the
				// nodes that would otherwise keep blocking the queues.
				c.lost = false
				c.reapOrphans(sid)
			}
			c.renew()
			c.transition(StateReconnected)
		}
	case zk.StateConnectedReadOnly:
		if c.state != StateReadOnly {
			c.renew()
			c.transition(StateReadOnly)
		}
	case zk.StateDisconnected:
		if c.state.IsConnected() {
			closeIfOpen(c.suspendCh)
			c.suspendedAt = time.Now()
			c.transition(StateSuspended)
			c.startTimer()
		}
	case zk.StateExpired:
		c.stopTimer()
		if !c.lost && c.state != StateLatent {
			c.declareLost()
		}
		c.orphans = nil // the server removed them with the session
	case zk.StateAuthFailed:
		c.log.Error("zkrecipes: authentication failed")
	}
}

// newSession records a session other than the last one; c.mu is held.
func (c *Client) newSession(sid int64) {
	c.sessionID = sid
	c.lost = false
	c.orphans = nil // they went with the old session
}

// declareLost enters LOST; c.mu is held. The nodes contests hold in the
// session become orphans: if the session turns out to be alive, they are
// deleted (reapOrphans).
func (c *Client) declareLost() {
	c.lost = true
	c.stopTimer()
	closeIfOpen(c.suspendCh)
	closeIfOpen(c.lostCh)
	c.knowledge.reset()
	c.nodesMu.Lock()
	for p, sid := range c.nodes {
		if sid == c.sessionID {
			c.orphans = append(c.orphans, p)
		}
	}
	c.nodesMu.Unlock()
	c.transition(StateLost)
}

// reapOrphans deletes, in the background, the nodes of holds and waits
// that were declared lost in session sid, which came back; c.mu is held.
func (c *Client) reapOrphans(sid int64) {
	orphans := c.orphans
	c.orphans = nil
	if len(orphans) == 0 {
		return
	}
	c.log.Warn("zkrecipes: the session declared lost came back; deleting the nodes of its lost holds",
		"session", fmt.Sprintf("0x%x", sid), "nodes", len(orphans))
	c.stats.pendingDeletes.Add(int64(len(orphans)))
	c.wg.Add(1) // c.mu is held and the client is open
	go func() {
		defer c.wg.Done()
		for _, p := range orphans {
			c.retryForever(sid, func() error { return c.deleteOnce(p) })
			c.stats.pendingDeletes.Add(-1)
		}
	}()
}

// renew opens fresh hold signals after a (re)connection; c.mu is held.
func (c *Client) renew() {
	select {
	case <-c.suspendCh:
		c.suspendCh = make(chan struct{})
	default:
	}
	select {
	case <-c.lostCh:
		c.lostCh = make(chan struct{})
	default:
	}
}

func (c *Client) transition(s State) {
	c.log.Info("zkrecipes: connection state", "state", s.String(), "session", fmt.Sprintf("0x%x", c.sessionID))
	c.state = s
	close(c.changeCh)
	c.changeCh = make(chan struct{})
	c.listeners.Post(s)
}

// lostDelay is how long from now the session may still live on the
// server: one session timeout after we sent the last request whose reply
// arrived (Wire.LastAnswered), since the server heard from us no earlier.
// Without a Wire that is unknown; go-zookeeper reports a disconnect at
// most 2/3 of the timeout after the last byte received, so 1/3 after
// SUSPENDED is never late. c.mu is held.
func (c *Client) lostDelay() time.Duration {
	t := c.SessionTimeout()
	if sent, ok := c.LastAnswered(); ok {
		return time.Until(sent.Add(t))
	}
	return time.Until(c.suspendedAt.Add(t / 3))
}

// startTimer arms the LOST timer; c.mu is held.
func (c *Client) startTimer() {
	c.stopTimer()
	gen := c.timerGen
	c.timer = time.AfterFunc(max(c.lostDelay(), 0), func() {
		c.inbox.push(zk.Event{Type: lostTimeout, State: zk.State(gen)})
	})
}

func (c *Client) stopTimer() {
	c.timerGen++
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// track records that a contest holds the node at path in session sid;
// untrack forgets it.
func (c *Client) track(path string, sid int64) {
	c.nodesMu.Lock()
	c.nodes[path] = sid
	c.nodesMu.Unlock()
}

func (c *Client) untrack(path string) {
	c.nodesMu.Lock()
	delete(c.nodes, path)
	c.nodesMu.Unlock()
}
