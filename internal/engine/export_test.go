package engine

import "github.com/go-zookeeper/zk"

// Hooks for the external tests (package engine_test), which see what the
// library does not need exported.
var (
	LastAnswered = (*Client).lastAnswered
	LastReceived = (*Client).lastReceived
	// WireRequests returns how many requests the Wire made itself (the
	// others went through go-zookeeper's calls).
	WireRequests = func(c *Client) uint64 {
		if c == nil || c.wire == nil {
			return 0
		}
		return c.wire.made.Load()
	}
	Watching       = (*Client).watching
	FollowChildren = (*Client).followChildren
)

// Wire is the Wire, for the tests that dial through one themselves.
type Wire = wire

// NewWire returns a Wire around dial (nil: a net.Dialer).
func NewWire(dial zk.Dialer) *Wire { return newWire(dial) }

// WithWire returns cfg with the Wire an adopted connection was dialled
// through, for NewClient.
func WithWire(cfg Config, w *Wire) Config {
	cfg.wire = w
	return cfg
}
