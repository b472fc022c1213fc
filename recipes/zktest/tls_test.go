package zktest

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestTLSEnsemble: WithTLS starts an ensemble that serves clients over TLS
// only: a client with the cluster's certificate gets a session, four-letter
// words go over TLS, and the same port refuses a plain client.
func TestTLSEnsemble(t *testing.T) {
	c := StartEnsemble(t, 3, WithTLS())
	if !c.TLS() || c.ClientTLS() == nil {
		t.Fatal("a WithTLS cluster says it is not TLS")
	}
	if _, err := c.Leader(); err != nil {
		t.Fatal(err)
	}
	cl := connect(t, c.Servers(), 4*time.Second)
	if _, err := cl.Create("/tls", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.ZnodeCount(0); err != nil || n < 1 {
		t.Fatalf("ZnodeCount over TLS = %d, %v", n, err)
	}
	for i, addr := range c.Servers() {
		if out, err := plainRuok(addr); err == nil && out == "imok" {
			t.Errorf("member %d answers a plain client", i)
		}
	}
	if ca, cert, key := c.TLSFiles(); ca == "" || cert == "" || key == "" {
		t.Errorf("TLSFiles = %q, %q, %q", ca, cert, key)
	}
	if _, err := tls.LoadX509KeyPair(c.tls.files.ClientCert, c.tls.files.ClientKey); err != nil {
		t.Errorf("the client files: %v", err)
	}
}

// plainRuok sends "ruok" without TLS.
func plainRuok(addr string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(conn, "ruok"); err != nil {
		return "", err
	}
	out, err := io.ReadAll(conn)
	return string(out), err
}
