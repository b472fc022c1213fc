package gssapi_test

// The end-to-end proof of GSSAPI against a real MIT KDC and real
// ZooKeeper servers (zktest), without the engine: go-zookeeper dials
// through sasl.NewConn with this package's mechanism.

// The servers here stay plain under ZK_TEST_TLS: these tests drive the
// SASL exchange on connections of their own (raw dials, go-zookeeper
// without the Wire, Java clients).

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"

	"github.com/zkrecipes/zkrecipes/internal/sasl"
	"github.com/zkrecipes/zkrecipes/internal/sasl/gssapi"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

const waitFor = 20 * time.Second

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// login logs user in to kdc with password.
func login(t *testing.T, kdc *zktest.KDC, user, password string) (*client.Client, error) {
	t.Helper()
	cfg, err := config.Load(kdc.Krb5Conf())
	if err != nil {
		t.Fatal(err)
	}
	cl := client.NewWithPassword(user, kdc.Realm(), password, cfg, client.DisablePAFXFAST(true))
	t.Cleanup(cl.Destroy)
	return cl, cl.Login()
}

// session connects to addr, authenticating each connection as cl (nil:
// no SASL), and returns the connection and a channel of the exchanges'
// outcomes.
func session(t *testing.T, addr string, cl *client.Client) (*zk.Conn, chan error) {
	t.Helper()
	outcomes := make(chan error, 16)
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil || cl == nil {
			return c, err
		}
		m := gssapi.New(cl, zktest.KDCService, zktest.KDCServiceHost)
		return sasl.NewConn(c, m, 10*time.Second, func(err error) { outcomes <- err }), nil
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
	return conn, outcomes
}

func outcome(t *testing.T, ch chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitFor):
		t.Fatal("no SASL exchange")
		return nil
	}
}

func hasSession(c *zk.Conn) func() bool {
	return func() bool { return c.State() == zk.StateHasSession }
}

// bob authenticates with a ticket, owns a node with the ACL
// sasl:bob@ZK.TEST, keeps it across a reconnection; eve, also
// authenticated, and a plain session may not read it; a wrong password
// never gets a ticket.
func TestKerberosEndToEnd(t *testing.T) {
	kdc := zktest.StartKDC(t, map[string]string{"bob": "bob-pw", "eve": "eve-pw"})
	c := zktest.Start(t, zktest.WithSASLKerberos(kdc), zktest.WithoutTLS())
	proxy := zktest.NewProxy(t, c.Servers()[0])

	bob, err := login(t, kdc, "bob", "bob-pw")
	if err != nil {
		t.Fatalf("bob's login: %v", err)
	}
	conn, outcomes := session(t, proxy.Addr(), bob)
	if err := outcome(t, outcomes); err != nil {
		t.Fatalf("bob's exchange: %v", err)
	}
	zktest.Eventually(t, waitFor, "bob's session", hasSession(conn))
	acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: "bob@" + zktest.KDCRealm}}
	if _, err := conn.Create("/krb", []byte("bob's"), 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, _, err := conn.Get("/krb"); err != nil {
		t.Fatalf("bob reads his node: %v", err)
	}

	proxy.Cut()
	if err := outcome(t, outcomes); err != nil {
		t.Fatalf("bob's exchange after the cut: %v", err)
	}
	zktest.Eventually(t, waitFor, "bob's session back", hasSession(conn))
	if _, _, err := conn.Get("/krb"); err != nil {
		t.Fatalf("bob reads his node after the reconnection: %v", err)
	}

	eve, err := login(t, kdc, "eve", "eve-pw")
	if err != nil {
		t.Fatal(err)
	}
	econn, eouts := session(t, c.Servers()[0], eve)
	if err := outcome(t, eouts); err != nil {
		t.Fatalf("eve's exchange: %v", err)
	}
	zktest.Eventually(t, waitFor, "eve's session", hasSession(econn))
	if _, _, err := econn.Get("/krb"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("eve read bob's node: %v", err)
	}

	if _, err := login(t, kdc, "bob", "wrong"); err == nil {
		t.Fatal("a wrong password got a ticket")
	} else {
		t.Logf("a wrong password: %v", err)
	}
}

// With SASL required, a session without it is refused; an ensemble's
// members all accept bob's tickets (one service principal and keytab).
func TestKerberosRequiredEnsemble(t *testing.T) {
	kdc := zktest.StartKDC(t, map[string]string{"bob": "bob-pw"})
	c := zktest.StartEnsemble(t, 3, zktest.WithSASLKerberos(kdc), zktest.WithSASLRequired(), zktest.WithoutTLS())
	bob, err := login(t, kdc, "bob", "bob-pw")
	if err != nil {
		t.Fatal(err)
	}
	for i, addr := range c.Servers() {
		conn, outs := session(t, addr, bob)
		if err := outcome(t, outs); err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		zktest.Eventually(t, waitFor, "bob's session", hasSession(conn))
		if _, _, err := conn.Exists("/"); err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
	}
	plain, _ := session(t, c.Servers()[0], nil)
	zktest.Eventually(t, waitFor, "the plain session", hasSession(plain))
	if _, _, err := plain.Exists("/"); err == nil {
		t.Fatal("a session without SASL was served")
	} else {
		t.Logf("the plain session: %v", err)
	}
}

// A ticket from another KDC (same realm and names, other keys) is
// refused by the server: the exchange fails with AUTHFAILED and the
// client never has a session.
func TestKerberosForeignTicket(t *testing.T) {
	kdc := zktest.StartKDC(t, map[string]string{"bob": "bob-pw"})
	other := zktest.StartKDC(t, map[string]string{"bob": "bob-pw"})
	c := zktest.Start(t, zktest.WithSASLKerberos(kdc), zktest.WithoutTLS())
	bob, err := login(t, other, "bob", "bob-pw")
	if err != nil {
		t.Fatal(err)
	}
	conn, outs := session(t, c.Servers()[0], bob)
	err = outcome(t, outs)
	var se *sasl.ServerError
	if !errors.Is(err, sasl.ErrAuthFailed) || !errors.As(err, &se) || se.Code != sasl.CodeAuthFailed {
		t.Fatalf("a foreign ticket: %v; want the server's AUTHFAILED", err)
	}
	t.Logf("a foreign ticket: %v", err)
	if conn.State() == zk.StateHasSession {
		t.Fatal("a foreign ticket has a session")
	}
}
