package engine

// Hooks for the external tests (package engine_test), which see what the
// library does not need exported.
var (
	LastAnswered   = (*Client).lastAnswered
	LastReceived   = (*Client).lastReceived
	WireRequests   = (*Client).wireRequests
	Watching       = (*Client).watching
	FollowChildren = (*Client).followChildren
)
