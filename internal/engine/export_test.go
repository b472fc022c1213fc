package engine

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Hooks for the external tests (package engine_test), which see what the
// library does not need exported.
var (
	LastAnswered = func(c *Client) (time.Time, bool) { return c.wire.LastAnswered() }
	LastReceived = func(c *Client) (time.Time, bool) { return c.wire.LastReceived() }
	// WireRequests returns how many requests the Wire made itself (the
	// others went through go-zookeeper's calls).
	WireRequests = func(c *Client) uint64 {
		if c == nil || c.wire == nil {
			return 0
		}
		return c.wire.made.Load()
	}
	Watching       = func(c *Client) int { return c.hub.watching() }
	FollowChildren = followChildren
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

// followChildren keeps a node's children current: fn gets the first view,
// then every view that differs from the one before, on Follow's
// goroutine. A missing node is watched for its creation. It returns as
// Follow does.
func followChildren(c *Client, ctx context.Context, path string, fn func(ChildrenView)) error {
	if err := c.Check(); err != nil {
		return err
	}
	f := c.NewFollower(path, nil)
	f.addChildren(path, path, fn)
	return f.Run(ctx)
}

// FollowEventKind is the engine's own, named for the external tests.
type FollowEventKind = followEventKind

// WatchData is the engine's own, named for the external tests.
const WatchData = watchData

// WatchExists is the engine's own, named for the external tests.
const WatchExists = watchExists

// ErrUntil is the engine's own, named for the external tests.
var ErrUntil = errUntil

// FollowInitialised is the engine's own, named for the external tests.
const FollowInitialised = followInitialised

// FollowWatch is the engine's own, named for the external tests.
const FollowWatch = followWatch

// ReadFunc is the engine's own, named for the external tests.
type ReadFunc = readFunc

// CreateProtected is the protected create of a contest's node (Enter),
// alone: an ephemeral-sequential node _c_<uuid>-<name><sequence> under
// parent, missing parents made as containers. It returns the node's path
// and the session that owns it.
func CreateProtected(c *Client, ctx context.Context, parent, name string, data []byte) (string, int64, error) {
	p, sid, _, err := c.createProtected(ctx, parent, zkpath.NewUUID(), name, data, ephemeralMode(true), 0)
	return p, sid, err
}

// CreateProtectedFixed is CreateProtected for an ephemeral node that is not
// sequential, _c_<uuid>-<name> (a contest EnterAtSequence makes one).
func CreateProtectedFixed(c *Client, ctx context.Context, parent, name string, data []byte) (string, int64, error) {
	p, sid, _, err := c.createProtected(ctx, parent, zkpath.NewUUID(), name, data, ephemeralMode(false), 0)
	return p, sid, err
}

// CreateContainer creates a container node, counted as a create.
func CreateContainer(c *Client, ctx context.Context, path string) (string, error) {
	return createContainer(c, ctx, reqCreate, path)
}
