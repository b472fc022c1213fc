package engine_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// gate is a dialer for one client's connections that a test can cut, hold
// at the next dial, and read: it records each connection's ConnectRequest
// lastZxidSeen and the relativeZxid of its setWatches, and makes the
// second request after the ConnectRequest late (lateWrite), as a busy
// machine may.
type gate struct {
	mu      sync.Mutex
	conn    net.Conn
	hold    chan struct{} // non-nil: the next dial waits for it to close
	dialing chan struct{} // closed when a held dial has begun
	conns   []*gateConn
}

// lateWrite delays go-zookeeper's send goroutine before the connection's
// second request (after the queued read: the setWatches), before it
// reaches the Wire: replies are read meanwhile.
const lateWrite = 100 * time.Millisecond

func (g *gate) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	g.mu.Lock()
	hold, dialing := g.hold, g.dialing
	g.hold, g.dialing = nil, nil
	g.mu.Unlock()
	if hold != nil {
		close(dialing)
		<-hold
	}
	conn, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	gc := &gateConn{Conn: conn}
	g.mu.Lock()
	g.conn = conn
	g.conns = append(g.conns, gc)
	g.mu.Unlock()
	return gc, nil
}

// cut closes the current connection, holding the next dial until release
// is closed; it returns a channel closed once that dial has begun.
func (g *gate) cut(release chan struct{}) <-chan struct{} {
	dialing := make(chan struct{})
	g.mu.Lock()
	g.hold, g.dialing = release, dialing
	conn := g.conn
	g.mu.Unlock()
	_ = conn.Close()
	return dialing
}

func (g *gate) last() *gateConn {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.conns[len(g.conns)-1]
}

// gateConn is below the Wire, and sees whole frames per Write (the Wire
// passes go-zookeeper's writes on as they come: one frame each).
type gateConn struct {
	net.Conn
	mu          sync.Mutex
	writes      int
	lastZxid    int64   // the ConnectRequest's lastZxidSeen
	setWatches  []int64 // each setWatches' relativeZxid
	connectSeen bool
	wasLate     bool
}

func (c *gateConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	first := c.writes == 0
	c.writes++
	if first && len(p) >= 16 {
		c.lastZxid, c.connectSeen = int64(binary.BigEndian.Uint64(p[8:16])), true
	}
	isSetWatches := !first && len(p) >= 20 && binary.BigEndian.Uint32(p[8:12]) == 101
	if isSetWatches {
		c.setWatches = append(c.setWatches, int64(binary.BigEndian.Uint64(p[12:20])))
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// SetWriteDeadline comes before each of go-zookeeper's writes, ahead of
// the Wire.
func (c *gateConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	late := !t.IsZero() && c.writes == 2 && !c.wasLate
	c.wasLate = c.wasLate || late
	c.mu.Unlock()
	if late {
		time.Sleep(lateWrite)
	}
	return c.Conn.SetWriteDeadline(t)
}

func (c *gateConn) seen() (lastZxid int64, setWatches []int64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastZxid, append([]int64(nil), c.setWatches...), c.connectSeen
}

// queuedGet is a read issued while disconnected; its name marks its
// goroutine in stack dumps.
//
//go:noinline
func queuedGet(conn *zk.Conn, path string, done chan<- error) {
	_, _, err := conn.Get(path)
	done <- err
}

// queued tells whether a queuedGet is past go-zookeeper's send queue and
// waiting for its reply.
func queued() bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("queuedGet")) && bytes.Contains(g, []byte("(*Conn).request(")) &&
			!bytes.Contains(g, []byte("(*Conn).queueRequest(")) {
			return true
		}
	}
	return false
}

// A session with watches resumes on a new connection while a request
// queued meanwhile is answered before go-zookeeper's setWatches goes out.
// go-zookeeper v1.0.4 then writes its lastZxid from the reply (recvLoop)
// while it reads it for setWatches (sendSetWatches): a data race the race
// detector reports. The Wire keeps the zxid bookkeeping itself: it hides
// the zxid of replies from go-zookeeper and writes the zxid it saw into
// the ConnectRequest and setWatches. This test checks both halves: no race
// (under -race), and the zxids on the wire are right: the ConnectRequest
// carries the last zxid seen, setWatches the one the connection began
// with, so a watch on a node changed while cut fires on resume and one on
// an unchanged node does not.
func TestResumeWithWatchesAndRepliesInFlight(t *testing.T) {
	// A plain server even under ZK_TEST_TLS: the gate reads the frames
	// go-zookeeper writes as the dialer sees them, which over TLS are
	// records.
	zkc := zktest.Start(t, zktest.WithoutTLS())
	addr := zkc.Servers()[0]
	g := &gate{}
	// The same server twice: go-zookeeper redials at once instead of
	// pausing a second after trying every address.
	c := connect(t, []string{addr, addr}, recipes.WithDialer(g.Dial), recipes.WithSessionTimeout(10*time.Second))
	conn := (*engine.Client)(c).Conn()
	other := (*engine.Client)(connect(t, zkc.Servers())).Conn()

	for _, p := range []string{"/quiet", "/changed"} {
		_, err := other.Create(p, []byte("0"), 0, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
	}
	_, _, quiet, err := conn.GetW("/quiet")
	require.NoError(t, err)

	const cycles = 8
	for i := 0; i < cycles; i++ {
		_, st, changed, err := conn.GetW("/changed")
		require.NoError(t, err)
		seenBefore := st.Mzxid

		release := make(chan struct{})
		<-g.cut(release)
		// While go-zookeeper dials: the node changes, and a read waits in
		// go-zookeeper's queue for the new connection.
		st, err = other.Set("/changed", []byte{byte(i)}, -1)
		require.NoError(t, err)
		changedAt := st.Mzxid
		done := make(chan error, 1)
		go queuedGet(conn, "/quiet", done)
		eventually(t, 5*time.Second, "the read to be queued", queued)
		close(release)

		select {
		case err := <-done:
			require.NoError(t, err, "cycle %d: the queued read", i)
		case <-time.After(10 * time.Second):
			t.Fatalf("cycle %d: the queued read never came back", i)
		}
		select {
		case ev := <-changed:
			require.Equal(t, zk.EventNodeDataChanged, ev.Type, "cycle %d: %+v", i, ev)
		case <-time.After(10 * time.Second):
			t.Fatalf("cycle %d: the watch on the node changed while cut never fired", i)
		}

		gc := g.last()
		eventually(t, 5*time.Second, "setWatches to be written", func() bool {
			_, sw, _ := gc.seen()
			return len(sw) > 0
		})
		lastZxid, sw, ok := gc.seen()
		require.True(t, ok)
		require.GreaterOrEqual(t, lastZxid, seenBefore, "cycle %d: the ConnectRequest's lastZxidSeen is behind a zxid the client saw", i)
		require.Less(t, lastZxid, changedAt, "cycle %d: the ConnectRequest claims a zxid the client never saw", i)
		require.Equal(t, []int64{lastZxid}, sw, "cycle %d: setWatches is relative to the zxid the connection began with", i)
	}

	// A change after all that reaches the client, and by then any event
	// the resumes caused has come: the unchanged node's watch never fired.
	_, _, changed, err := conn.GetW("/changed")
	require.NoError(t, err)
	_, err = other.Set("/changed", nil, -1)
	require.NoError(t, err)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the last change never reached the client")
	}
	select {
	case ev := <-quiet:
		t.Fatalf("the watch on the unchanged node fired: %+v", ev)
	default:
	}
}
