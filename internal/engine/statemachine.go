package engine

import (
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// stateMachine is the Client's connection state: what the state machine
// (next) decides on, the signals holds are built on, the state listeners,
// and the nodes contests hold in each session. mu guards all but nodes,
// which nodesMu does. Its methods run on the client's event goroutine
// (run, apply) or with mu held.
type stateMachine struct {
	c *Client

	mu          sync.Mutex
	state       zkstate.State
	sessionID   int64
	lost        bool          // LOST declared for the current session
	suspendCh   chan struct{} // closed on SUSPENDED, LOST and Close
	lostCh      chan struct{} // closed on LOST and Close
	changeCh    chan struct{} // closed on every transition
	listeners   notify.Listeners[zkstate.State]
	closed      bool
	timer       *time.Timer
	timerGen    uint64
	suspendedAt time.Time // when SUSPENDED was entered
	orphans     []string  // nodes of holds declared lost while their session may live

	nodesMu sync.Mutex
	nodes   map[string]int64 // server path -> session, of every node a contest holds
}

// run applies session events in order.
func (s *stateMachine) run() {
	c := s.c
	defer c.wg.Done()
	for {
		evs, ok := c.inbox.Take(nil)
		if !ok {
			return
		}
		for _, ev := range evs {
			s.apply(ev)
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
func (s *stateMachine) apply(ev zk.Event) {
	c := s.c
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	in := input{event: ev}
	switch {
	case ev.Type == lostTimeout:
		if uint64(ev.State) != s.timerGen {
			return // a timer disarmed since
		}
		in.remaining = s.lostDelay()
	case ev.Type == zk.EventSession && ev.State == zk.StateHasSession:
		in.session = c.conn.SessionID()
	}
	m, fx := next(machine{state: s.state, sessionID: s.sessionID, lost: s.lost}, in)
	for _, f := range fx {
		switch f.do {
		case stopTimer:
			s.stopTimer()
		case startTimer:
			s.startTimer()
		case suspend:
			closeIfOpen(s.suspendCh)
			s.suspendedAt = time.Now()
		case declareLost:
			s.declareLost()
		case adoptSession:
			s.sessionID, s.lost = m.sessionID, false
			s.orphans = nil // they went with the old session
		case reapOrphans:
			s.lost = false
			s.reapOrphans(s.sessionID)
		case renew:
			s.renew()
		case clearOrphans:
			s.orphans = nil
		case announce:
			s.transition(f.state)
		case authFailed:
			c.log.Error("zkrecipes: authentication failed")
		case logLost:
			c.log.Warn("zkrecipes: declaring session lost: a session timeout passed since the server last answered",
				"session", fmt.Sprintf("0x%x", s.sessionID), "timeout", c.SessionTimeout())
		}
	}
	s.sessionID, s.lost, s.state = m.sessionID, m.lost, m.state
}

// declareLost is LOST for the current session; s.mu is held. The nodes
// contests hold in the session become orphans: if the session turns out
// to be alive, they are deleted (reapOrphans).
func (s *stateMachine) declareLost() {
	c := s.c
	s.lost = true
	closeIfOpen(s.suspendCh)
	closeIfOpen(s.lostCh)
	c.knowledge.reset()
	s.nodesMu.Lock()
	for p, sid := range s.nodes {
		if sid == s.sessionID {
			s.orphans = append(s.orphans, p)
		}
	}
	s.nodesMu.Unlock()
}

// reapOrphans deletes, in the background, the nodes of holds and waits
// that were declared lost in session sid, which came back; s.mu is held.
func (s *stateMachine) reapOrphans(sid int64) {
	c := s.c
	orphans := s.orphans
	s.orphans = nil
	if len(orphans) == 0 {
		return
	}
	c.log.Warn("zkrecipes: the session declared lost came back; deleting the nodes of its lost holds",
		"session", fmt.Sprintf("0x%x", sid), "nodes", len(orphans))
	c.del.pending(int64(len(orphans)))
	c.wg.Add(1) // s.mu is held and the client is open
	go func() {
		defer c.wg.Done()
		for _, p := range orphans {
			c.del.retryForever(sid, func() error { return c.del.once(p) })
			c.del.pending(-1)
		}
	}()
}

// renew opens fresh hold signals after a (re)connection; s.mu is held.
func (s *stateMachine) renew() {
	select {
	case <-s.suspendCh:
		s.suspendCh = make(chan struct{})
	default:
	}
	select {
	case <-s.lostCh:
		s.lostCh = make(chan struct{})
	default:
	}
}

func (s *stateMachine) transition(to zkstate.State) {
	c := s.c
	c.log.Info("zkrecipes: connection state", "state", to.String(), "session", fmt.Sprintf("0x%x", s.sessionID))
	c.met.stateEntered(s.state, to, s.suspendedAt)
	s.state = to
	close(s.changeCh)
	s.changeCh = make(chan struct{})
	s.listeners.Post(to)
	c.hub.state(to, s.sessionID)
}

// lostDelay is how long from now the session may still live on the
// server: one session timeout after we sent the last request whose reply
// arrived (Wire.LastAnswered), since the server heard from us no earlier.
// Without a Wire that is unknown; go-zookeeper reports a disconnect at
// most 2/3 of the timeout after the last byte received, so 1/3 after
// SUSPENDED is never late. s.mu is held.
func (s *stateMachine) lostDelay() time.Duration {
	c := s.c
	t := c.SessionTimeout()
	if sent, ok := c.wire.LastAnswered(); ok {
		return time.Until(sent.Add(t))
	}
	return time.Until(s.suspendedAt.Add(t / 3))
}

// startTimer arms the LOST timer; s.mu is held.
func (s *stateMachine) startTimer() {
	c := s.c
	s.stopTimer()
	gen := s.timerGen
	s.timer = time.AfterFunc(max(s.lostDelay(), 0), func() {
		c.inbox.Push(zk.Event{Type: lostTimeout, State: zk.State(gen)})
	})
}

func (s *stateMachine) stopTimer() {
	s.timerGen++
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// track records that a contest holds the node at path in session sid;
// untrack forgets it.
func (s *stateMachine) track(path string, sid int64) {
	s.nodesMu.Lock()
	s.nodes[path] = sid
	s.nodesMu.Unlock()
}

func (s *stateMachine) untrack(path string) {
	s.nodesMu.Lock()
	delete(s.nodes, path)
	s.nodesMu.Unlock()
}
