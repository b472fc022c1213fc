package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The lost-session rule, from a table: a wait that depends on session sid
// is over when sid is LOST or the client is connected in another session.
func TestSessionGone(t *testing.T) {
	const sid, other = 0x11, 0x22
	for _, tc := range []struct {
		state   State
		current int64 // the snapshot's session
		waitFor int64 // the wait's session (0: none)
		gone    bool
	}{
		{StateConnected, sid, sid, false},
		{StateReconnected, sid, sid, false},
		{StateReadOnly, sid, sid, false},
		{StateSuspended, sid, sid, false}, // may come back
		{StateLost, sid, sid, true},
		{StateConnected, other, sid, true},   // a new session: ours is over
		{StateReconnected, other, sid, true}, // the same, after a LOST
		{StateLost, other, sid, false},       // an older session's LOST: wait for the state machine to catch up
		{StateSuspended, other, sid, false},
		{StateLatent, 0, sid, false},
		{StateLost, sid, 0, false}, // a wait on no session
		{StateConnected, other, 0, false},
	} {
		got := sessionGone(Snapshot{State: tc.state, SessionID: tc.current}, tc.waitFor)
		assert.Equal(t, tc.gone, got, "%v in 0x%x, waiting on 0x%x", tc.state, tc.current, tc.waitFor)
	}
}
