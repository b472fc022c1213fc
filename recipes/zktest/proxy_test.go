package zktest

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestProxyForwards(t *testing.T) {
	t.Parallel()
	c := Start(t)
	p := NewProxy(t, c.Servers()[0])
	// A four-letter word exercises the half-close path: the server answers
	// and closes, the proxy passes the close on.
	if out, err := fourLetter(p.Addr(), "ruok", 5*time.Second); err != nil || out != "imok" {
		t.Fatalf("ruok through proxy = %q, %v", out, err)
	}
	cl := connect(t, []string{p.Addr()}, 4*time.Second)
	big := make([]byte, 200<<10) // several copy buffers
	for i := range big {
		big[i] = byte(i)
	}
	conn := cl.Conn
	if _, err := conn.Create("/zktest-big", big, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	got, _, err := conn.Get("/zktest-big")
	if err != nil || len(got) != len(big) || string(got) != string(big) {
		t.Fatalf("Get through proxy: %d bytes, %v", len(got), err)
	}
	if err := conn.Delete("/zktest-big", -1); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("closed proxy still accepts")
	}
}

func TestProxyTargetDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := NewProxy(t, target)
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatal("read from a proxy whose target is down succeeded")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("proxy did not close the client when the target refused")
	}
}

func TestProxyCut(t *testing.T) {
	t.Parallel()
	c := Start(t)
	p := NewProxy(t, c.Servers()[0])
	cl := connect(t, []string{p.Addr()}, 4*time.Second)
	sid := cl.SessionID()
	if _, err := cl.Create("/zktest-eph", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	cl.resetStates()
	p.Cut()
	waitFor(t, 10*time.Second, "disconnect and reconnect", func() bool {
		return cl.sawState(zk.StateDisconnected) && cl.State() == zk.StateHasSession
	})
	if cl.SessionID() != sid || cl.sawState(zk.StateExpired) {
		t.Fatal("session changed across a short cut")
	}
	if ok, _, err := cl.Exists("/zktest-eph"); err != nil || !ok {
		t.Fatalf("ephemeral after cut: %v, %v", ok, err)
	}
}

func TestProxyBlackholeExpiresSession(t *testing.T) {
	t.Parallel()
	c := Start(t)
	p := NewProxy(t, c.Servers()[0])
	direct := connect(t, c.Servers(), 4*time.Second)
	cl := connect(t, []string{p.Addr()}, time.Second) // negotiated: 1s
	if _, err := cl.Create("/zktest-bh", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	cl.resetStates()
	p.Blackhole()

	// New connections get nowhere either.
	if out, err := fourLetter(p.Addr(), "ruok", 300*time.Millisecond); err == nil {
		t.Fatalf("ruok through a black-hole = %q", out)
	}
	// The server expires the session: its ephemeral goes.
	waitFor(t, 10*time.Second, "session expiry on the server", func() bool {
		ok, _, err := direct.Exists("/zktest-bh")
		return err == nil && !ok
	})
	if cl.sawState(zk.StateExpired) {
		t.Fatal("client saw expiry through a black-hole")
	}
	p.Restore()
	waitFor(t, 15*time.Second, "client sees expiry", func() bool {
		return cl.sawState(zk.StateExpired)
	})
	if out, err := fourLetter(p.Addr(), "ruok", 5*time.Second); err != nil || out != "imok" {
		t.Fatalf("ruok after Restore = %q, %v", out, err)
	}
}

func TestProxyBlackholeRestoreQuickly(t *testing.T) {
	t.Parallel()
	// Raw TCP: an echo server behind the proxy.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })

	p := NewProxy(t, ln.Addr().String())
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	echo := func(c net.Conn, msg string, d time.Duration) (string, error) {
		_ = c.SetDeadline(time.Now().Add(d))
		if _, err := c.Write([]byte(msg)); err != nil {
			return "", err
		}
		buf := make([]byte, len(msg))
		_, err := io.ReadFull(c, buf)
		return string(buf), err
	}
	if got, err := echo(conn, "one", 5*time.Second); err != nil || got != "one" {
		t.Fatalf("echo = %q, %v", got, err)
	}
	p.Blackhole()
	if got, err := echo(conn, "two", 300*time.Millisecond); err == nil {
		t.Fatalf("echo through black-hole = %q", got)
	}
	conn2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	if got, err := echo(conn2, "three", 300*time.Millisecond); err == nil {
		t.Fatalf("echo on new conn through black-hole = %q", got)
	}
	p.Restore()
	// Both black-holed connections are closed by Restore.
	for _, c := range []net.Conn{conn, conn2} {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := c.Read(make([]byte, 16))
		var ne net.Error
		if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
			t.Fatalf("black-holed connection not closed by Restore: %v", err)
		}
	}
	conn3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn3.Close()
	if got, err := echo(conn3, "four", 5*time.Second); err != nil || got != "four" {
		t.Fatalf("echo after Restore = %q, %v", got, err)
	}
}

func TestProxyCutAfterClientSends(t *testing.T) {
	t.Parallel()
	c := Start(t)
	p := NewProxy(t, c.Servers()[0])
	direct := connect(t, c.Servers(), 4*time.Second)
	cl := connect(t, []string{p.Addr()}, 4*time.Second)
	other := connect(t, []string{p.Addr()}, 4*time.Second)
	sid := cl.SessionID()
	other.resetStates()

	p.CutAfterClientSends([]byte("/zktest-lost-reply"))
	_, err := cl.Create("/zktest-lost-reply", []byte("x"), 0, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("Create through the armed proxy: %v, want ErrConnectionClosed", err)
	}
	// The request took effect all the same.
	waitFor(t, 5*time.Second, "node created", func() bool {
		ok, _, err := direct.Exists("/zktest-lost-reply")
		return err == nil && ok
	})
	// Every connection was cut, and the session survives.
	waitFor(t, 10*time.Second, "other client reconnects", func() bool {
		return other.sawState(zk.StateDisconnected) && other.State() == zk.StateHasSession
	})
	waitFor(t, 10*time.Second, "client reconnects", func() bool {
		return cl.State() == zk.StateHasSession
	})
	if cl.SessionID() != sid {
		t.Fatal("session changed")
	}
	// One shot: the next request passes.
	if _, err := cl.Create("/zktest-lost-reply/next", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("Create after the fault fired: %v", err)
	}
	for _, path := range []string{"/zktest-lost-reply/next", "/zktest-lost-reply"} {
		if err := direct.Delete(path, -1); err != nil {
			t.Fatal(err)
		}
	}
}

// TestProxyRetarget: connections accepted after Retarget go to the new
// target; one accepted before keeps going to the old.
func TestProxyRetarget(t *testing.T) {
	t.Parallel()
	serve := func(tag string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { // tag, then echo: which server a link reaches
					defer c.Close()
					if _, err := io.WriteString(c, tag); err == nil {
						_, _ = io.Copy(c, c)
					}
				}()
			}
		}()
		return ln.Addr().String()
	}
	a, b := serve("A"), serve("B")
	p := NewProxy(t, a)
	reach := func(conn net.Conn) string {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 1)
		if _, err := io.ReadFull(conn, buf); err != nil {
			t.Fatal(err)
		}
		return string(buf)
	}
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	old := dial()
	if got := reach(old); got != "A" {
		t.Fatalf("before Retarget: reached %q, want A", got)
	}
	p.Retarget(b)
	if got := reach(dial()); got != "B" {
		t.Fatalf("after Retarget: reached %q, want B", got)
	}
	if _, err := io.WriteString(old, "x"); err != nil {
		t.Fatal(err)
	}
	if got := reach(old); got != "x" {
		t.Fatalf("the link made before Retarget echoed %q, want x (still to A)", got)
	}
}
