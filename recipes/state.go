package recipes

import "github.com/zkrecipes/zkrecipes/internal/engine"

// State is a connection state as Curator names them.
type State int32

const (
	// StateLatent is the state before the first session was established.
	StateLatent = State(engine.StateLatent)
	// StateConnected is entered once, when the first session is established.
	StateConnected = State(engine.StateConnected)
	// StateSuspended means the connection was lost; the session may still be
	// alive on the server, so ephemeral nodes and holds may still exist.
	StateSuspended = State(engine.StateSuspended)
	// StateReconnected means a connection is back: either the same session
	// (after SUSPENDED) or a new one (after LOST).
	StateReconnected = State(engine.StateReconnected)
	// StateLost means the session ended: the server expired it, or no
	// request of ours was answered for the negotiated session timeout.
	// Every ephemeral node of the session must be assumed gone.
	StateLost = State(engine.StateLost)
	// StateReadOnly means connected to a server in read-only mode.
	StateReadOnly = State(engine.StateReadOnly)
)

// String returns Curator's name for the state.
func (s State) String() string { return engine.State(s).String() }

// IsConnected reports whether the state is one in which requests reach a server.
func (s State) IsConnected() bool { return engine.State(s).IsConnected() }

// ErrorPolicy decides which connection states end a hold (a lock, lease or
// leadership), like Curator's ConnectionStateErrorPolicy.
type ErrorPolicy int

const (
	// PolicyStandard treats SUSPENDED and LOST as errors: a hold is reported
	// gone as soon as the connection is lost. This is the default and the
	// safe choice: while SUSPENDED nobody can tell whether the session lives.
	PolicyStandard = ErrorPolicy(engine.PolicyStandard)
	// PolicySession treats only LOST as an error: a hold survives a
	// connection blip as long as the session does.
	PolicySession = ErrorPolicy(engine.PolicySession)
)

// String names the policy.
func (p ErrorPolicy) String() string { return engine.ErrorPolicy(p).String() }

// IsError reports whether the policy treats s as the end of a hold.
func (p ErrorPolicy) IsError(s State) bool { return engine.ErrorPolicy(p).IsError(engine.State(s)) }
