package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// A frame the Wire writes itself, with no ctx deadline, on a link whose
// peer reads nothing, fails after go-zookeeper's own write bound (2/3 of
// the session timeout) instead of holding the write lock, and with it
// go-zookeeper's sender, for ever; go-zookeeper's deadline is put back
// after it.
func TestWireOwnWriteHasADeadline(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	w := &wire{}
	c := &wireConn{Conn: client, w: w, wlock: make(chan struct{}, 1)}
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
	c.received(connectResponse(300, 1)) // writes bounded by 200ms

	done := make(chan error, 1)
	go func() {
		r, err := c.call(context.Background(), zopGetData, newFrame(8).str("/a").boolean(false), nil)
		if err == nil {
			<-r.done
			_, err = r.result()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("the stalled write ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Wire's write stalled without a deadline")
	}
}

// go-zookeeper's write deadline stays in force across a frame the Wire
// writes between its frames.
func TestWireKeepsGoZookeepersDeadline(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	w := &wire{}
	c := &wireConn{Conn: client, w: w, wlock: make(chan struct{}, 1)}
	defer c.Close()
	c.out.init(connectRequestLen, reqHeaderLen)
	c.in.init(handshakeLen, replyHeaderLen)
	stop := make(chan struct{})
	go func() { // read until told to stop
		buf := make([]byte, 1)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := server.Read(buf); err != nil {
				return
			}
		}
	}()
	if _, err := c.Write(frame(41, 0)); err != nil {
		t.Fatal(err)
	}
	c.received(connectResponse(60000, 1)) // the Wire's own bound: 40s
	_ = c.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	r, err := c.call(context.Background(), zopGetData, newFrame(8).str("/a").boolean(false), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = r
	close(stop)
	start := time.Now()
	_, err = c.Write(frame(100, 5, 4)) // go-zookeeper's next frame, nobody reading
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || time.Since(start) > 5*time.Second {
		t.Fatalf("go-zookeeper's write: %v after %v", err, time.Since(start))
	}
}

// Events reach the watches they concern: a recursive one anywhere under
// its root (never NodeChildrenChanged), a plain one on its own node only.
func TestPersistentRoute(t *testing.T) {
	var p pwatches
	p.init(nil)
	mk := func(path string, recursive bool) *PersistentWatch {
		w := &PersistentWatch{path: path, recursive: recursive, q: notify.NewQueue[PersistentEvent]()}
		if p.entries == nil {
			p.entries = map[string]*pwEntry{}
		}
		p.entries[path] = &pwEntry{path: path, recursive: recursive, owners: map[*PersistentWatch]struct{}{w: {}}}
		p.n.Add(1)
		return w
	}
	root := mk("/", true)
	tree := mk("/a/b", true)
	plain := mk("/a", false)
	for _, ev := range []zk.Event{
		{Type: zk.EventNodeCreated, Path: "/a/b/c/d"},
		{Type: zk.EventNodeChildrenChanged, Path: "/a/b"},
		{Type: zk.EventNodeDataChanged, Path: "/a"},
		{Type: zk.EventNodeChildrenChanged, Path: "/a"},
		{Type: zk.EventNodeDeleted, Path: "/a/bb"},
		{Type: zk.EventSession, State: zk.StateHasSession},
		{Type: zk.EventNotWatching, Path: "/a/b"},
	} {
		p.route(ev)
	}
	got := func(w *PersistentWatch) []string {
		evs, _ := w.q.Poll()
		var out []string
		for _, ev := range evs {
			out = append(out, fmt.Sprintf("%d %s %s", ev.Seq, ev.Type, ev.Path))
		}
		return out
	}
	check := func(name string, w *PersistentWatch, want ...string) {
		if g := got(w); !slices.Equal(g, want) {
			t.Errorf("%s: got %q, want %q", name, g, want)
		}
	}
	// Seq numbers the node events in the connection's order, whoever
	// hears them.
	check("root", root, "1 EventNodeCreated /a/b/c/d", "3 EventNodeDataChanged /a", "5 EventNodeDeleted /a/bb")
	check("tree", tree, "1 EventNodeCreated /a/b/c/d")
	check("plain", plain, "3 EventNodeDataChanged /a", "4 EventNodeChildrenChanged /a")
	if p.seq.Load() != 5 {
		t.Errorf("routed %d node events, want 5", p.seq.Load())
	}
}

// While the removeWatches of a persistent watch is on the way, a one-shot
// watch on its root waits for the answer (type Any would remove it too
// if the server saw it first), until its ctx ends; other paths do not
// wait; the root of a live persistent watch is refused.
func TestGuardOneShotWaitsForRemoval(t *testing.T) {
	c := &Client{}
	c.pw.init(c)
	c.pw.mu.Lock()
	answered := c.pw.leave("/a")
	c.pw.mu.Unlock()
	if err := c.pw.guardOneShot(context.Background(), "/b"); err != nil {
		t.Fatalf("another path: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.pw.guardOneShot(ctx, "/a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the root during its removal: %v, want the ctx's end", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.pw.guardOneShot(context.Background(), "/a") }()
	answered()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after the answer: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting after the answer")
	}
	if n := c.pw.nLeaving.Load(); n != 0 {
		t.Fatalf("%d removals left marked", n)
	}
	c.pw.entries = map[string]*pwEntry{"/a": {path: "/a", owners: map[*PersistentWatch]struct{}{}}}
	c.pw.n.Store(1)
	if err := c.pw.guardOneShot(context.Background(), "/a"); !errors.Is(err, zkerr.ErrInvalidArgument) {
		t.Fatalf("a persistent root: %v", err)
	}
}
