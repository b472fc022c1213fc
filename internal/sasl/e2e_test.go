package sasl_test

// The end-to-end proof against real servers (zktest), without the engine:
// go-zookeeper dials through saslDialer, which runs the DIGEST-MD5
// exchange on each connection.

// The servers here stay plain under ZK_TEST_TLS: these tests drive the
// SASL exchange on connections of their own (raw dials, go-zookeeper
// without the Wire, Java clients).

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/sasl"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

const (
	user     = "bob"
	password = "b0b's \"pass\\word\""
	waitFor  = 20 * time.Second
)

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// connect opens a go-zookeeper session to addr through d (nil: a plain
// dial), closed at the end of the test.
func connect(t *testing.T, addr string, d *saslDialer) *zk.Conn {
	t.Helper()
	dial := zk.Dialer(net.DialTimeout)
	if d != nil {
		dial = d.Dial
	}
	conn, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(quiet{}), zk.WithDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range events {
		}
	}()
	t.Cleanup(conn.Close)
	return conn
}

func digest(pw string) func() sasl.Mechanism {
	return func() sasl.Mechanism { return sasl.NewDigestMD5(user, pw) }
}

func hasSession(c *zk.Conn) func() bool {
	return func() bool { return c.State() == zk.StateHasSession }
}

var bobOnly = []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: user}}

// The right password: the session is sasl:bob, reads a node only bob may
// read, and is authenticated anew after its connection is cut; a plain
// session is refused; a wrong password is an error and no session.
func TestDigestEndToEnd(t *testing.T) {
	c := zktest.Start(t, zktest.WithSASLDigest(map[string]string{user: password, "alice": "a"}), zktest.WithoutTLS())
	proxy := zktest.NewProxy(t, c.Servers()[0])

	d := newSASLDialer(digest(password))
	good := connect(t, proxy.Addr(), d)
	zktest.Eventually(t, waitFor, "the SASL session", hasSession(good))
	if _, err := good.Create("/sasl-proof", []byte("bob's"), 0, bobOnly); err != nil {
		t.Fatalf("create with ACL sasl:%s:cdrwa: %v", user, err)
	}
	if data, _, err := good.Get("/sasl-proof"); err != nil || string(data) != "bob's" {
		t.Fatalf("bob reads his node: %q, %v", data, err)
	}
	acl, _, err := good.GetACL("/sasl-proof")
	if err != nil || len(acl) != 1 || acl[0] != bobOnly[0] {
		t.Fatalf("ACL %v, %v", acl, err)
	}

	plain := connect(t, c.Servers()[0], nil)
	zktest.Eventually(t, waitFor, "the plain session", hasSession(plain))
	if _, _, err := plain.Get("/sasl-proof"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("a session without SASL read bob's node: %v", err)
	}

	// A new connection, the same session: authenticated again.
	session := good.SessionID()
	proxy.Cut()
	if err := d.wait(waitFor, func(ok int, _ []error) bool { return ok >= 2 }); err != nil {
		t.Fatalf("no second exchange after the cut: %v", err)
	}
	zktest.Eventually(t, waitFor, "the session back", hasSession(good))
	if good.SessionID() != session {
		t.Fatalf("session %x became %x", session, good.SessionID())
	}
	if _, _, err := good.Get("/sasl-proof"); err != nil {
		t.Fatalf("bob reads his node after the reconnection: %v", err)
	}

	wrongPassword(t, c.Servers()[0], sasl.CodeAuthFailed)
	if ok, _, err := plain.Exists("/sasl-wrong"); ok || err != nil {
		t.Fatalf("/sasl-wrong exists (%v) or %v", ok, err)
	}
}

// wrongPassword shows that a wrong password fails the exchange with the
// server's code, the session never reaches HasSession and nothing it
// asked is done.
func wrongPassword(t *testing.T, addr string, code int32) {
	t.Helper()
	bad := newSASLDialer(digest("wrong"))
	var states []zk.State
	conn, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(quiet{}), zk.WithDialer(bad.Dial))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		for ev := range events {
			states = append(states, ev.State)
		}
		close(done)
	}()
	if err := bad.wait(waitFor, func(_ int, errs []error) bool { return len(errs) > 0 }); err != nil {
		t.Fatalf("the wrong password: %v", err)
	}
	_, errs := bad.counts()
	var se *sasl.ServerError
	if !errors.Is(errs[0], sasl.ErrAuthFailed) || !errors.As(errs[0], &se) || se.Code != code {
		t.Fatalf("the wrong password: %v; want ErrAuthFailed with server code %d", errs[0], code)
	}
	t.Logf("the wrong password: %v", errs[0])
	conn.Close()
	<-done
	for _, s := range states {
		if s == zk.StateHasSession {
			t.Fatalf("the wrong password reached a session: states %v", states)
		}
	}
	if _, err := conn.Create("/sasl-wrong", nil, 0, zk.WorldACL(zk.PermAll)); err == nil {
		t.Fatal("the refused client created a node")
	}
}

// Why the Wire must authenticate every connection: a session whose new
// connection skips SASL has lost its rights (the server keeps auth per
// connection).
func TestDigestFirstConnectionOnly(t *testing.T) {
	c := zktest.Start(t, zktest.WithSASLDigest(map[string]string{user: password}), zktest.WithoutTLS())
	proxy := zktest.NewProxy(t, c.Servers()[0])
	d := newSASLDialer(digest(password))
	d.firstOnly = true
	conn := connect(t, proxy.Addr(), d)
	zktest.Eventually(t, waitFor, "the SASL session", hasSession(conn))
	if _, err := conn.Create("/once", nil, 0, bobOnly); err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	var err error
	zktest.Eventually(t, waitFor, "a reply on the new connection", func() bool {
		_, _, err = conn.Get("/once")
		return !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer)
	})
	if !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("a connection without SASL read bob's node: %v", err)
	}
}

// With SASL required, a session without it is refused at its first
// request and a wrong password with SESSIONCLOSEDREQUIRESASLAUTH.
func TestDigestRequired(t *testing.T) {
	c := zktest.Start(t, zktest.WithSASLDigest(map[string]string{user: password}), zktest.WithSASLRequired(), zktest.WithoutTLS())
	good := connect(t, c.Servers()[0], newSASLDialer(digest(password)))
	zktest.Eventually(t, waitFor, "the SASL session", hasSession(good))
	if _, err := good.Create("/required", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	plain := connect(t, c.Servers()[0], nil)
	zktest.Eventually(t, waitFor, "the plain session", hasSession(plain))
	_, _, err := plain.Get("/required")
	if err == nil {
		t.Fatal("a session without SASL was served")
	}
	t.Logf("the plain session's read: %v", err)
	wrongPassword(t, c.Servers()[0], sasl.CodeSessionClosedRequireSASLAuth)
}

// An ensemble with SASL: each member authenticates bob (each reads the
// same JAAS file), and a node bob made through one member is his
// through every other.
func TestDigestEnsemble(t *testing.T) {
	c := zktest.StartEnsemble(t, 3, zktest.WithSASLDigest(map[string]string{user: password}), zktest.WithoutTLS())
	first := connect(t, c.Servers()[0], newSASLDialer(digest(password)))
	zktest.Eventually(t, waitFor, "the SASL session on member 0", hasSession(first))
	if _, err := first.Create("/ensemble", []byte("x"), 0, bobOnly); err != nil {
		t.Fatal(err)
	}
	for i, addr := range c.Servers()[1:] {
		d := newSASLDialer(digest(password))
		conn := connect(t, addr, d)
		zktest.Eventually(t, waitFor, "the SASL session", hasSession(conn))
		if _, err := conn.Sync("/ensemble"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := conn.Get("/ensemble"); err != nil {
			t.Fatalf("member %d: bob reads his node: %v", i+1, err)
		}
	}
	wrongPassword(t, c.Servers()[2], sasl.CodeAuthFailed)
}
