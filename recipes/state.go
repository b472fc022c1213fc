package recipes

import "github.com/zkrecipes/zkrecipes/internal/zkstate"

// State is a connection state as Curator names them.
type State int32

const (
	// StateLatent is the state before the first session was established.
	StateLatent = State(zkstate.StateLatent)
	// StateConnected is entered once, when the first session is established.
	StateConnected = State(zkstate.StateConnected)
	// StateSuspended means the connection was lost; the session may still be
	// alive on the server, so ephemeral nodes and holds may still exist.
	StateSuspended = State(zkstate.StateSuspended)
	// StateReconnected means a connection is back: either the same session
	// (after SUSPENDED) or a new one (after LOST).
	StateReconnected = State(zkstate.StateReconnected)
	// StateLost means the session ended: the server expired it, or no
	// request of ours was answered for the negotiated session timeout.
	// Every ephemeral node of the session must be assumed gone.
	StateLost = State(zkstate.StateLost)
	// StateReadOnly means connected to a server in read-only mode.
	StateReadOnly = State(zkstate.StateReadOnly)
)

// String returns Curator's name for the state.
func (s State) String() string { return zkstate.State(s).String() }

// IsConnected reports whether the state is one in which requests reach a server.
func (s State) IsConnected() bool { return zkstate.State(s).IsConnected() }

// ErrorPolicy decides which connection states end a hold (a lock, lease or
// leadership), like Curator's ConnectionStateErrorPolicy.
type ErrorPolicy int

const (
	// PolicyStandard treats SUSPENDED and LOST as errors: a hold is reported
	// gone as soon as the connection is lost. This is the default and the
	// safe choice: while SUSPENDED nobody can tell whether the session lives.
	PolicyStandard = ErrorPolicy(zkstate.PolicyStandard)
	// PolicySession treats only LOST as an error: a hold survives a
	// connection blip as long as the session does.
	PolicySession = ErrorPolicy(zkstate.PolicySession)
)

// String names the policy.
func (p ErrorPolicy) String() string { return zkstate.ErrorPolicy(p).String() }

// IsError reports whether the policy treats s as the end of a hold.
func (p ErrorPolicy) IsError(s State) bool { return zkstate.ErrorPolicy(p).IsError(zkstate.State(s)) }
