package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// The lost-session rule, from a table: a wait that depends on session sid
// is over when sid is LOST or the client is connected in another session.
func TestSessionGone(t *testing.T) {
	const sid, other = 0x11, 0x22
	for _, tc := range []struct {
		state   zkstate.State
		current int64 // the snapshot's session
		waitFor int64 // the wait's session (0: none)
		gone    bool
	}{
		{zkstate.StateConnected, sid, sid, false},
		{zkstate.StateReconnected, sid, sid, false},
		{zkstate.StateReadOnly, sid, sid, false},
		{zkstate.StateSuspended, sid, sid, false}, // may come back
		{zkstate.StateLost, sid, sid, true},
		{zkstate.StateConnected, other, sid, true},   // a new session: ours is over
		{zkstate.StateReconnected, other, sid, true}, // the same, after a LOST
		{zkstate.StateLost, other, sid, false},       // an older session's LOST: wait for the state machine to catch up
		{zkstate.StateSuspended, other, sid, false},
		{zkstate.StateLatent, 0, sid, false},
		{zkstate.StateLost, sid, 0, false}, // a wait on no session
		{zkstate.StateConnected, other, 0, false},
	} {
		got := sessionGone(Snapshot{State: tc.state, SessionID: tc.current}, tc.waitFor)
		assert.Equal(t, tc.gone, got, "%v in 0x%x, waiting on 0x%x", tc.state, tc.current, tc.waitFor)
	}
}
