// Package launcher is the hook through which a package beside zktest (its
// Docker launcher, zkdocker) offers zktest a server it cannot start
// itself, so that zktest imports nothing of what that launcher needs.
// zktest asks the registered Launcher only after ZK_TEST_SERVERS and a
// local installation; it waits for the server to serve, reads its version
// and reports its log as it does for its own servers.
package launcher

import (
	"sync"
	"time"
)

// Spec is what zktest asks of a standalone server.
type Spec struct {
	// TickTime is the server's tickTime; its sessions last between 2 and
	// 20 ticks.
	TickTime time.Duration
}

// Server is a standalone server a Launcher started.
type Server interface {
	// Addr is its client address, host:port.
	Addr() string
	// Log returns its output so far (nil if it cannot be read).
	Log() []byte
	// Close stops it and removes what it left. zktest calls it once.
	Close() error
}

// Launcher starts standalone servers.
type Launcher interface {
	// Available reports whether Start can work now (a Docker engine
	// answers). It is asked before every Start and may cache its answer.
	Available() bool
	// Unavailable says what would make it available, for the error zktest
	// returns when no server can be had.
	Unavailable() string
	// Start starts a server with spec's settings and four-letter words
	// enabled. It may return before the server serves: zktest waits.
	Start(spec Spec) (Server, error)
}

var (
	mu      sync.Mutex
	current Launcher
)

// Register makes l the launcher zktest asks; the last one registered wins.
func Register(l Launcher) {
	mu.Lock()
	defer mu.Unlock()
	current = l
}

// Registered returns the registered launcher, or nil.
func Registered() Launcher {
	mu.Lock()
	defer mu.Unlock()
	return current
}
