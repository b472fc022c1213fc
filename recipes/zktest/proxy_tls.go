package zktest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"time"
)

// A Proxy to a TLS server ends TLS on both sides, so that it sees the
// plaintext frames CutAfterClientSends looks for: to clients it is the
// server (the cluster's server certificate, a client certificate the
// cluster's CA signed required), and to the server it is the client, with
// a certificate it has the cluster's CA sign for the client's own subject,
// so the server knows each session by the identity its client presented.
type proxyTLS struct {
	ct     *clusterTLS
	server *tls.Config // the clients' side
}

func newProxyTLS(ct *clusterTLS) (*proxyTLS, error) {
	pair, err := tls.X509KeyPair(ct.pki.server, ct.pki.server)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ct.pki.ca)
	return &proxyTLS{ct: ct, server: &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    roots,
		MinVersion:   tls.VersionTLS12,
	}}, nil
}

// dialTarget connects to the proxy's target for client's link: over TCP,
// or, to a TLS server, after client's handshake, over TLS as the client.
func (p *Proxy) dialTarget(client net.Conn) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	target := p.targetAddr()
	if p.tls == nil {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", target)
	}
	tc, ok := client.(*tls.Conn)
	if !ok {
		return nil, errors.New("zktest: a plain client on a TLS proxy")
	}
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	cn := tc.ConnectionState().PeerCertificates[0].Subject.CommonName
	now := time.Now()
	cfg, err := p.tls.ct.pki.clientTLS(cn, now.Add(-time.Hour), now.Add(24*time.Hour))
	if err != nil {
		return nil, err
	}
	cfg.ServerName, _, _ = net.SplitHostPort(target)
	d := tls.Dialer{Config: cfg}
	return d.DialContext(ctx, "tcp", target)
}
