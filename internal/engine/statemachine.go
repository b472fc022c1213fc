package engine

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// run applies session events in order.
func (c *Client) run() {
	defer c.wg.Done()
	for {
		evs, ok := c.inbox.Take(nil)
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

// machine is what the connection state machine decides from: the state,
// the session it is about, and whether LOST was declared for it.
type machine struct {
	state     zkstate.State
	sessionID int64
	lost      bool
}

// input is one thing that happens to the machine.
type input struct {
	// event is the go-zookeeper session event (its State), or lostTimeout.
	event zk.Event
	// session is the connection's session id when the event arrived (the
	// session a StateHasSession event is for).
	session int64
	// remaining is, for lostTimeout, how long the session may still live
	// on the server (the LOST timer fired early when it is positive).
	remaining time.Duration
}

// effect is one thing the client does after a transition, in order.
type effect struct {
	do    action
	state zkstate.State // for announce: the state entered
}

type action int

const (
	stopTimer    action = iota // disarm the LOST timer
	startTimer                 // arm it for the time the session may still live
	suspend                    // SUSPENDED: close the suspend signal, note when
	declareLost                // LOST for the current session: close the hold signals, keep the orphans
	adoptSession               // a new session: it is the current one; the old one's orphans are gone
	reapOrphans                // the session declared LOST came back: delete its lost holds' nodes
	renew                      // fresh hold signals after a (re)connection
	clearOrphans               // the server expired the session: its nodes are gone with it
	announce                   // enter and publish state
	authFailed                 // log it
	logLost                    // log why we declare LOST ourselves
)

func do(a action) effect              { return effect{do: a} }
func notifyOf(s zkstate.State) effect { return effect{do: announce, state: s} }
func lostEffects() []effect {
	return []effect{do(stopTimer), do(declareLost), notifyOf(zkstate.StateLost)}
}
func appendLost(fx []effect) []effect { return append(fx, lostEffects()...) }

// next is the state machine's transition function: pure, so that every
// transition is tested from a table. It returns the machine after in and
// the effects to carry out, in order.
func next(m machine, in input) (machine, []effect) {
	ev := in.event
	if ev.Type == lostTimeout {
		if m.state != zkstate.StateSuspended || m.lost {
			return m, nil
		}
		if in.remaining > 0 { // the server answered meanwhile
			return m, []effect{do(startTimer)}
		}
		m.lost, m.state = true, zkstate.StateLost
		return m, appendLost([]effect{do(logLost)})
	}
	if ev.Type != zk.EventSession {
		return m, nil
	}
	switch ev.State {
	case zk.StateHasSession:
		fx := []effect{do(stopTimer)}
		switch {
		case m.state == zkstate.StateLatent:
			m.sessionID, m.state = in.session, zkstate.StateConnected
			return m, append(fx, do(adoptSession), notifyOf(zkstate.StateConnected))
		case m.state == zkstate.StateConnected || m.state == zkstate.StateReconnected:
			if in.session == m.sessionID {
				return m, fx
			}
			// A new session without a disconnect seen: the old one is
			// LOST, then the new one RECONNECTED.
			fx = append(appendLost(fx), do(adoptSession))
		default: // SUSPENDED, LOST, READ_ONLY
			if in.session != m.sessionID {
				if !m.lost {
					fx = appendLost(fx)
				}
				fx = append(fx, do(adoptSession))
			} else if m.lost {
				// The session we declared LOST is alive after all. Its
				// holders were told their holds are gone: remove the nodes
				// that would otherwise keep blocking the queues.
				fx = append(fx, do(reapOrphans))
			}
			fx = append(fx, do(renew))
		}
		m.sessionID, m.lost, m.state = in.session, false, zkstate.StateReconnected
		return m, append(fx, notifyOf(zkstate.StateReconnected))
	case zk.StateConnectedReadOnly:
		if m.state == zkstate.StateReadOnly {
			return m, nil
		}
		m.state = zkstate.StateReadOnly
		return m, []effect{do(renew), notifyOf(zkstate.StateReadOnly)}
	case zk.StateDisconnected:
		if !m.state.IsConnected() {
			return m, nil
		}
		m.state = zkstate.StateSuspended
		return m, []effect{do(suspend), notifyOf(zkstate.StateSuspended), do(startTimer)}
	case zk.StateExpired:
		fx := []effect{do(stopTimer)}
		if !m.lost && m.state != zkstate.StateLatent {
			m.lost, m.state = true, zkstate.StateLost
			fx = appendLost(fx)
		}
		return m, append(fx, do(clearOrphans))
	case zk.StateAuthFailed:
		return m, []effect{do(authFailed)}
	}
	return m, nil
}

// apply feeds one event to the state machine and carries out its effects.
// What the machine must know of the world (the connection's session, how
// long the session may still live) is read here and passed in the input.
func (c *Client) apply(ev zk.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	in := input{event: ev}
	switch {
	case ev.Type == lostTimeout:
		if uint64(ev.State) != c.timerGen {
			return // a timer disarmed since
		}
		in.remaining = c.lostDelay()
	case ev.Type == zk.EventSession && ev.State == zk.StateHasSession:
		in.session = c.conn.SessionID()
	}
	m, fx := next(machine{state: c.state, sessionID: c.sessionID, lost: c.lost}, in)
	for _, f := range fx {
		switch f.do {
		case stopTimer:
			c.stopTimer()
		case startTimer:
			c.startTimer()
		case suspend:
			closeIfOpen(c.suspendCh)
			c.suspendedAt = time.Now()
		case declareLost:
			c.declareLost()
		case adoptSession:
			c.sessionID, c.lost = m.sessionID, false
			c.orphans = nil // they went with the old session
		case reapOrphans:
			c.lost = false
			c.reapOrphans(c.sessionID)
		case renew:
			c.renew()
		case clearOrphans:
			c.orphans = nil
		case announce:
			c.transition(f.state)
		case authFailed:
			c.log.Error("zkrecipes: authentication failed")
		case logLost:
			c.log.Warn("zkrecipes: declaring session lost: a session timeout passed since the server last answered",
				"session", fmt.Sprintf("0x%x", c.sessionID), "timeout", c.SessionTimeout())
		}
	}
	c.sessionID, c.lost, c.state = m.sessionID, m.lost, m.state
}

// declareLost is LOST for the current session; c.mu is held. The nodes
// contests hold in the session become orphans: if the session turns out
// to be alive, they are deleted (reapOrphans).
func (c *Client) declareLost() {
	c.lost = true
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
	c.del.pending(int64(len(orphans)))
	c.wg.Add(1) // c.mu is held and the client is open
	go func() {
		defer c.wg.Done()
		for _, p := range orphans {
			c.del.retryForever(sid, func() error { return c.del.once(p) })
			c.del.pending(-1)
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

func (c *Client) transition(s zkstate.State) {
	c.log.Info("zkrecipes: connection state", "state", s.String(), "session", fmt.Sprintf("0x%x", c.sessionID))
	c.met.stateEntered(c.state, s, c.suspendedAt)
	c.state = s
	close(c.changeCh)
	c.changeCh = make(chan struct{})
	c.listeners.Post(s)
	c.hub.state(s, c.sessionID)
}

// lostDelay is how long from now the session may still live on the
// server: one session timeout after we sent the last request whose reply
// arrived (Wire.LastAnswered), since the server heard from us no earlier.
// Without a Wire that is unknown; go-zookeeper reports a disconnect at
// most 2/3 of the timeout after the last byte received, so 1/3 after
// SUSPENDED is never late. c.mu is held.
func (c *Client) lostDelay() time.Duration {
	t := c.SessionTimeout()
	if sent, ok := c.lastAnswered(); ok {
		return time.Until(sent.Add(t))
	}
	return time.Until(c.suspendedAt.Add(t / 3))
}

// startTimer arms the LOST timer; c.mu is held.
func (c *Client) startTimer() {
	c.stopTimer()
	gen := c.timerGen
	c.timer = time.AfterFunc(max(c.lostDelay(), 0), func() {
		c.inbox.Push(zk.Event{Type: lostTimeout, State: zk.State(gen)})
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
