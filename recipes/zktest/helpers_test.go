package zktest

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// quietLogger drops go-zookeeper's log lines.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// tlsDialer dials servers over TLS when they are a TLS cluster's, as
// ClientTLSFor says, over TCP otherwise.
func tlsDialer(servers []string) zk.Dialer {
	cfg := ClientTLSFor(servers)
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		if cfg == nil {
			return net.DialTimeout(network, address, timeout)
		}
		c := cfg.Clone()
		c.ServerName, _, _ = net.SplitHostPort(address)
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, c)
	}
}

// client is a go-zookeeper connection whose session states are recorded.
type client struct {
	*zk.Conn
	mu     sync.Mutex
	states []zk.State
	closed chan struct{} // closed when the event channel is (all goroutines gone)
}

// connect opens a go-zookeeper connection to servers and closes it (waiting
// for its goroutines) when the test ends. It waits until the session is
// established.
func connect(t *testing.T, servers []string, timeout time.Duration) *client {
	t.Helper()
	c := &client{closed: make(chan struct{})}
	conn, events, err := zk.Connect(servers, timeout,
		zk.WithDialer(tlsDialer(servers)),
		zk.WithLogger(quietLogger{}),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession {
				c.mu.Lock()
				c.states = append(c.states, ev.State)
				c.mu.Unlock()
			}
		}))
	if err != nil {
		t.Fatalf("zk.Connect: %v", err)
	}
	c.Conn = conn
	go func() {
		for range events {
		}
		close(c.closed)
	}()
	t.Cleanup(c.close)
	waitFor(t, 20*time.Second, "session established", func() bool {
		return conn.State() == zk.StateHasSession
	})
	return c
}

func (c *client) close() {
	c.Conn.Close()
	select {
	case <-c.closed:
	case <-time.After(10 * time.Second):
	}
}

// sawState reports whether the session passed through state s since the
// recording was last reset.
func (c *client) sawState(s zk.State) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.states {
		if st == s {
			return true
		}
	}
	return false
}

func (c *client) resetStates() {
	c.mu.Lock()
	c.states = nil
	c.mu.Unlock()
}

// waitFor is Eventually, under the name these tests use.
var waitFor = Eventually

// waitExplained is Eventually whose failure also says what explain returns
// then (the last error seen, the client's states), so that a failure on a
// busy machine leaves its cause in the log.
func waitExplained(t *testing.T, timeout time.Duration, what string, cond func() bool, explain func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, explain())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// statesSeen returns a copy of the session states recorded so far.
func (c *client) statesSeen() []zk.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]zk.State(nil), c.states...)
}

// probe says what one ruok to member 0 answers now.
func probe(c *Cluster) string {
	out, err := c.FourLetter(0, "ruok")
	return fmt.Sprintf("%q, %v", out, err)
}

// requireLocal skips a test that needs to control the server processes.
func requireLocal(t *testing.T, c *Cluster) {
	t.Helper()
	if !c.Controllable() {
		t.Skipf("cluster not controllable (%s set or container mode)", EnvServers)
	}
}

func usingExternal() bool { return os.Getenv(EnvServers) != "" }
