package engine

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The Wire sends its own requests only once the handshake has granted a
// session and, when the client has credentials, once go-zookeeper has
// re-sent them (its send loop, which starts after them, has sent a
// frame); it numbers them 2^30 ahead of go-zookeeper's last xid.
func TestWireWaitsForCredentials(t *testing.T) {
	for _, auths := range []int32{0, 1} {
		client, server := net.Pipe()
		go func() { _, _ = io.Copy(io.Discard, server) }()
		w := &wire{}
		w.auths.Store(auths)
		c := &wireConn{Conn: client, w: w, wlock: make(chan struct{}, 1)}
		c.out.init(connectRequestLen, reqHeaderLen)
		c.in.init(handshakeLen, replyHeaderLen)
		get := func() (*wireCall, error) {
			return c.call(context.Background(), zopGetData, newFrame(8).str("/a").boolean(false), nil)
		}
		if _, err := c.Write(frame(41, 0)); err != nil { // the ConnectRequest
			t.Fatal(err)
		}
		if _, err := get(); !errors.Is(err, errWireNotReady) {
			t.Fatalf("auths %d: before the handshake: %v", auths, err)
		}
		c.received(connectResponse(4000, 1))
		if auths > 0 {
			if _, err := get(); !errors.Is(err, errWireNotReady) {
				t.Fatalf("before the credentials: %v", err)
			}
			if _, err := c.Write(frame(30, 1, opSetAuth)); err != nil { // go-zookeeper re-sends them
				t.Fatal(err)
			}
			if _, err := get(); !errors.Is(err, errWireNotReady) {
				t.Fatalf("during the credentials: %v", err)
			}
			if _, err := c.Write(frame(0, -2, 11)); err != nil { // a ping: the send loop runs
				t.Fatal(err)
			}
		}
		r, err := get()
		if err != nil {
			t.Fatalf("auths %d: %v", auths, err)
		}
		want := int32(wireXidAhead)
		if auths > 0 {
			want++ // after go-zookeeper's xid 1
		}
		if r.xid != want || w.made.Load() != 1 || w.auths.Load() != auths {
			t.Fatalf("auths %d: xid %#x, made %d", auths, r.xid, w.made.Load())
		}
		_ = c.Close()
		<-r.done
		if _, err := r.result(); !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("auths %d: after Close: %v", auths, err)
		}
		if _, err := get(); !errors.Is(err, errWireNotReady) {
			t.Fatalf("auths %d: after Close: %v", auths, err)
		}
		_ = server.Close()
	}
}

// Credentials added on the zk.Conn itself (an adopted connection) count
// too: the Wire sees their setAuth go out.
func TestWireSeesCredentials(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	go func() { _, _ = io.Copy(io.Discard, server) }()
	w := &wire{}
	c := &wireConn{Conn: client, w: w, wlock: make(chan struct{}, 1)}
	defer c.Close()
	c.out.init(connectRequestLen, reqHeaderLen)
	c.in.init(handshakeLen, replyHeaderLen)
	for _, f := range [][]byte{frame(41, 0), frame(30, 1, 4), frame(30, 2, opSetAuth)} {
		if _, err := c.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	if w.auths.Load() != 1 {
		t.Fatalf("auths %d", w.auths.Load())
	}
}

// A frame the Wire is writing when its ctx ends is let finish on a link
// that takes it: the connection, which every request of the client
// shares, is kept. (The Wire used to fail such a write at once and cut
// the connection mid-frame; under load an owned node's Close lost its
// connection so, and handed its delete to the background.) The pipe's
// peer reads the frame only once the write was poked; the grace is made
// long, so that the test does not depend on how soon that is.
func TestWireWriteSurvivesItsCtx(t *testing.T) {
	defer func(g time.Duration) { pokeGrace = g }(pokeGrace)
	pokeGrace = time.Minute
	client, server := net.Pipe()
	defer server.Close()
	c := &wireConn{Conn: client, w: &wire{}, wlock: make(chan struct{}, 1)}
	defer c.Close()
	c.out.init(connectRequestLen, reqHeaderLen)
	c.in.init(handshakeLen, replyHeaderLen)
	cr := frame(41, 0)
	read := make(chan struct{})
	go func() { _, _ = io.CopyN(io.Discard, server, int64(len(cr))); close(read) }()
	if _, err := c.Write(cr); err != nil {
		t.Fatal(err)
	}
	<-read
	c.received(connectResponse(30000, 1)) // the Wire's own writes bounded by 20s

	ctx, cancel := context.WithCancel(context.Background())
	f := newFrame(8).str("/a").boolean(false)
	done := make(chan error, 1)
	go func() {
		_, err := c.call(ctx, zopGetData, f, nil)
		done <- err
	}()
	waitFor(t, "the frame being written", func() bool { return c.writingState(false) })
	cancel()
	waitFor(t, "the write poked", func() bool { return c.writingState(true) })
	if _, err := io.ReadFull(server, make([]byte, len(f))); err != nil {
		t.Fatalf("the frame was not written whole: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the write failed: %v", err)
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		t.Fatal("the connection was cut")
	}
}

// writingState reports whether the Wire is writing a frame of its own
// (and, with poked, whether its ctx ended meanwhile).
func (c *wireConn) writingState(poked bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writing && (!poked || c.poked)
}

// waitFor waits up to 5s for cond, checking every millisecond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
