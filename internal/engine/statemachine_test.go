package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// The connection state machine's transitions, from a table: no server.
func TestStateMachineTransitions(t *testing.T) {
	const a, b = 0xa, 0xb
	session := func(s zk.State) input { return input{event: zk.Event{Type: zk.EventSession, State: s}} }
	has := func(sid int64) input {
		return input{event: zk.Event{Type: zk.EventSession, State: zk.StateHasSession}, session: sid}
	}
	timer := func(remaining time.Duration) input {
		return input{event: zk.Event{Type: lostTimeout}, remaining: remaining}
	}
	lost := lostEffects()
	cat := func(parts ...[]effect) []effect {
		var out []effect
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	fx := func(e ...effect) []effect { return e }
	for _, tc := range []struct {
		name string
		from machine
		in   input
		to   machine
		fx   []effect
	}{
		{"first session", machine{}, has(a),
			machine{zkstate.StateConnected, a, false}, fx(do(stopTimer), do(adoptSession), notifyOf(zkstate.StateConnected))},
		{"disconnect", machine{zkstate.StateConnected, a, false}, session(zk.StateDisconnected),
			machine{zkstate.StateSuspended, a, false}, fx(do(suspend), notifyOf(zkstate.StateSuspended), do(startTimer))},
		{"disconnect while suspended", machine{zkstate.StateSuspended, a, false}, session(zk.StateDisconnected),
			machine{zkstate.StateSuspended, a, false}, nil},
		{"disconnect before the first session", machine{}, session(zk.StateDisconnected), machine{}, nil},
		{"same session back", machine{zkstate.StateSuspended, a, false}, has(a),
			machine{zkstate.StateReconnected, a, false}, fx(do(stopTimer), do(renew), notifyOf(zkstate.StateReconnected))},
		{"a new session after SUSPENDED: LOST, then RECONNECTED", machine{zkstate.StateSuspended, a, false}, has(b),
			machine{zkstate.StateReconnected, b, false}, cat(fx(do(stopTimer)), lost, fx(do(adoptSession), do(renew), notifyOf(zkstate.StateReconnected)))},
		{"a new session after LOST", machine{zkstate.StateLost, a, true}, has(b),
			machine{zkstate.StateReconnected, b, false}, fx(do(stopTimer), do(adoptSession), do(renew), notifyOf(zkstate.StateReconnected))},
		{"the session declared LOST comes back", machine{zkstate.StateLost, a, true}, has(a),
			machine{zkstate.StateReconnected, a, false}, fx(do(stopTimer), do(reapOrphans), do(renew), notifyOf(zkstate.StateReconnected))},
		{"a new session without a disconnect seen", machine{zkstate.StateConnected, a, false}, has(b),
			machine{zkstate.StateReconnected, b, false}, cat(fx(do(stopTimer)), lost, fx(do(adoptSession), notifyOf(zkstate.StateReconnected)))},
		{"a repeated has-session", machine{zkstate.StateReconnected, a, false}, has(a),
			machine{zkstate.StateReconnected, a, false}, fx(do(stopTimer))},
		{"read-only", machine{zkstate.StateSuspended, a, false}, session(zk.StateConnectedReadOnly),
			machine{zkstate.StateReadOnly, a, false}, fx(do(renew), notifyOf(zkstate.StateReadOnly))},
		{"read-only again", machine{zkstate.StateReadOnly, a, false}, session(zk.StateConnectedReadOnly),
			machine{zkstate.StateReadOnly, a, false}, nil},
		{"read-only to a session", machine{zkstate.StateReadOnly, a, false}, has(a),
			machine{zkstate.StateReconnected, a, false}, fx(do(stopTimer), do(renew), notifyOf(zkstate.StateReconnected))},
		{"expired while suspended", machine{zkstate.StateSuspended, a, false}, session(zk.StateExpired),
			machine{zkstate.StateLost, a, true}, cat(fx(do(stopTimer)), lost, fx(do(clearOrphans)))},
		{"expired after our own LOST", machine{zkstate.StateLost, a, true}, session(zk.StateExpired),
			machine{zkstate.StateLost, a, true}, fx(do(stopTimer), do(clearOrphans))},
		{"expired before any session", machine{}, session(zk.StateExpired),
			machine{}, fx(do(stopTimer), do(clearOrphans))},
		{"the LOST timer, the session timed out", machine{zkstate.StateSuspended, a, false}, timer(0),
			machine{zkstate.StateLost, a, true}, cat(fx(do(logLost)), lost)},
		{"the LOST timer, early", machine{zkstate.StateSuspended, a, false}, timer(time.Second),
			machine{zkstate.StateSuspended, a, false}, fx(do(startTimer))},
		{"the LOST timer after a reconnection", machine{zkstate.StateReconnected, a, false}, timer(0),
			machine{zkstate.StateReconnected, a, false}, nil},
		{"the LOST timer after LOST", machine{zkstate.StateLost, a, true}, timer(0), machine{zkstate.StateLost, a, true}, nil},
		{"auth failed", machine{zkstate.StateConnected, a, false}, session(zk.StateAuthFailed),
			machine{zkstate.StateConnected, a, false}, fx(do(authFailed))},
		{"not a session event", machine{zkstate.StateConnected, a, false}, input{event: zk.Event{Type: zk.EventNodeCreated}},
			machine{zkstate.StateConnected, a, false}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to, got := next(tc.from, tc.in)
			assert.Equal(t, tc.to, to)
			assert.Equal(t, tc.fx, got)
		})
	}
}

// Every state the machine can reach publishes exactly the states it
// passes through: LOST always before the RECONNECTED of a new session.
func TestStateMachineNotifiesInOrder(t *testing.T) {
	m := machine{}
	var published []zkstate.State
	for _, in := range []input{
		{event: zk.Event{Type: zk.EventSession, State: zk.StateHasSession}, session: 1},
		{event: zk.Event{Type: zk.EventSession, State: zk.StateDisconnected}},
		{event: zk.Event{Type: zk.EventSession, State: zk.StateHasSession}, session: 2},
		{event: zk.Event{Type: zk.EventSession, State: zk.StateDisconnected}},
		{event: zk.Event{Type: lostTimeout}},
		{event: zk.Event{Type: zk.EventSession, State: zk.StateExpired}},
		{event: zk.Event{Type: zk.EventSession, State: zk.StateHasSession}, session: 3},
	} {
		var fx []effect
		m, fx = next(m, in)
		for _, f := range fx {
			if f.do == announce {
				published = append(published, f.state)
			}
		}
	}
	assert.Equal(t, fmt.Sprint([]zkstate.State{zkstate.StateConnected, zkstate.StateSuspended, zkstate.StateLost, zkstate.StateReconnected,
		zkstate.StateSuspended, zkstate.StateLost, zkstate.StateReconnected}), fmt.Sprint(published))
	assert.Equal(t, machine{zkstate.StateReconnected, 3, false}, m)
}
