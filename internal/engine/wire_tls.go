package engine

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/go-zookeeper/zk"
)

// tlsDialer returns a dialer that dials with dial (the TCP connection,
// through the user's dialer if any) and then makes a TLS handshake on it
// with cfg, so the Wire, which wraps what this returns, sees plaintext
// frames. The server name checked is the host of the address dialled
// unless cfg names one. The handshake shares the dial's timeout: dial and
// handshake together end within it.
func tlsDialer(dial zk.Dialer, cfg *tls.Config) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		start := time.Now()
		raw, err := dial(network, address, timeout)
		if err != nil {
			return nil, err
		}
		c := cfg.Clone()
		if c.ServerName == "" {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				host = address
			}
			c.ServerName = host
		}
		ctx := context.Background()
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout-time.Since(start))
			defer cancel()
		}
		conn := tls.Client(raw, c)
		if err := conn.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("tls handshake: %w", err)
		}
		return conn, nil
	}
}

// failedBeforeSession records a read error that ends a connection before
// its handshake granted a session as the last dial's error: a TLS server
// that refuses the client's certificate says so in an alert the client
// reads after its own side of the handshake is done (TLS 1.3), so Connect
// can name the cause instead of only timing out.
func (c *wireConn) failedBeforeSession(err error) {
	c.mu.Lock()
	active := c.active
	c.mu.Unlock()
	if !active && !c.w.shut.Load() {
		c.w.dialErr.Store(&dialError{address: c.addr, err: err})
	}
}
