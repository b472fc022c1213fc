// Package zkstate is the vocabulary of connection states, as Curator
// names them, and of the error policies that say which states end a hold.
// The engine's client moves through the states; package recipes exports
// both as its own types.
package zkstate

// State is a connection state as Curator names them.
type State int32

const (
	// StateLatent is the state before the first session was established.
	StateLatent State = iota
	// StateConnected is entered once, when the first session is established.
	StateConnected
	// StateSuspended means the connection was lost; the session may still be
	// alive on the server, so ephemeral nodes and holds may still exist.
	StateSuspended
	// StateReconnected means a connection is back: either the same session
	// (after SUSPENDED) or a new one (after LOST).
	StateReconnected
	// StateLost means the session ended: the server expired it, or it was
	// SUSPENDED for longer than the negotiated session timeout. Every
	// ephemeral node of the session must be assumed gone.
	StateLost
	// StateReadOnly means connected to a server in read-only mode.
	StateReadOnly
)

var stateNames = [NumStates]string{"LATENT", "CONNECTED", "SUSPENDED", "RECONNECTED", "LOST", "READ_ONLY"}

// NumStates is the number of states: each is below it.
const NumStates = int(StateReadOnly) + 1

// String returns Curator's name for the state.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "UNKNOWN"
}

// IsConnected reports whether the state is one in which requests reach a server.
func (s State) IsConnected() bool {
	return s == StateConnected || s == StateReconnected || s == StateReadOnly
}

// ErrorPolicy decides which connection states end a hold (a lock, lease or
// leadership), like Curator's ConnectionStateErrorPolicy.
type ErrorPolicy int

const (
	// PolicyStandard treats SUSPENDED and LOST as errors: a hold is reported
	// gone as soon as the connection is lost. This is the default and the
	// safe choice: while SUSPENDED nobody can tell whether the session lives.
	PolicyStandard ErrorPolicy = iota
	// PolicySession treats only LOST as an error: a hold survives a
	// connection blip as long as the session does.
	PolicySession
)

// String names the policy.
func (p ErrorPolicy) String() string {
	switch p {
	case PolicyStandard:
		return "standard"
	case PolicySession:
		return "session"
	}
	return "unknown"
}

// IsError reports whether the policy treats s as the end of a hold.
func (p ErrorPolicy) IsError(s State) bool {
	if s == StateLost {
		return true
	}
	return p == PolicyStandard && s == StateSuspended
}
