package engine

import (
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/sasl"
)

// wireAuth is the Wire's SASL: every connection it dials is wrapped in a
// sasl.Conn with a new mechanism, so that the session is authenticated
// anew on each connection before go-zookeeper or the Wire sends anything
// on it (the wireConn sits above the sasl.Conn and sees the
// ConnectResponse only after the exchange). A refused exchange closes the
// connection: the session is never handed a connection without its
// rights.
type wireAuth struct {
	mech   func(address string) sasl.Mechanism
	log    *slog.Logger
	last   atomic.Pointer[dialError] // the last refused exchange; nil after one succeeds
	failed chan struct{}             // closed at the first refusal
	once   sync.Once
}

func newWireAuth(mech func(address string) sasl.Mechanism, log *slog.Logger) *wireAuth {
	return &wireAuth{mech: mech, log: log, failed: make(chan struct{})}
}

// wrap returns conn, dialled to address, authenticating within timeout of
// the handshake reply.
func (a *wireAuth) wrap(conn net.Conn, address string, timeout time.Duration) net.Conn {
	m := a.mech(address)
	return sasl.NewConn(conn, m, timeout, func(err error) {
		if err == nil {
			a.last.Store(nil)
			return
		}
		a.last.Store(&dialError{address: address, err: err})
		a.log.Error("zkrecipes: the server refused the SASL authentication; the connection is closed",
			"server", address, "mechanism", m.Name(), "err", err)
		a.once.Do(func() { close(a.failed) })
	})
}

// lastError returns the last refused exchange, naming the server; nil
// when the last one succeeded (or none was made).
func (a *wireAuth) lastError() error {
	if d := a.last.Load(); d != nil {
		return fmt.Errorf("SASL authentication with %s: %w", d.address, d.err)
	}
	return nil
}
