package zktest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// ClientCommonName is the subject common name of the client certificate
// ClientTLS gives: a server with the x509 authentication provider knows
// its holder as the x509 id "CN=" + ClientCommonName.
const ClientCommonName = "zktest-client"

// pki is a test certificate authority: its certificate and key, and the
// server's certificate, which names 127.0.0.1, ::1 and localhost. All are
// ECDSA P-256, made with the standard library, never written but into a
// cluster's own directory.
type pki struct {
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte
	server []byte // the server's PEM key store: its private key, then its certificate
}

// newPKI makes a CA named name and a server certificate it signs.
func newPKI(name string) (*pki, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &pki{ca: ca, caKey: key, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	srv, err := p.issue("zktest-server", now.Add(-time.Hour), now.Add(24*time.Hour), x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	p.server = append(srv.keyPEM, srv.certPEM...)
	return p, nil
}

// issued is a certificate the CA signed, with its key, in PEM.
type issued struct{ certPEM, keyPEM []byte }

// issue signs a certificate for cn valid from notBefore to notAfter.
// Every certificate names 127.0.0.1, ::1 and localhost, so that it also
// passes a check of the holder's address.
func (p *pki) issue(cn string, notBefore, notAfter time.Time, usage ...x509.ExtKeyUsage) (issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return issued{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		return issued{}, err
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return issued{}, err
	}
	return issued{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}),
	}, nil
}

// clientTLS returns a client configuration that trusts the CA and
// presents a certificate for cn valid from notBefore to notAfter (none
// when cn is "").
func (p *pki) clientTLS(cn string, notBefore, notAfter time.Time) (*tls.Config, error) {
	roots := x509.NewCertPool()
	roots.AddCert(p.ca)
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if cn == "" {
		return cfg, nil
	}
	c, err := p.issue(cn, notBefore, notAfter, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(c.certPEM, c.keyPEM)
	if err != nil {
		return nil, err
	}
	cfg.Certificates = []tls.Certificate{pair}
	return cfg, nil
}

// writeFiles writes the server's key store, the trust store (the CA) and
// a client's certificate and key for ClientCommonName into dir.
func (p *pki) writeFiles(dir string) (tlsFiles, error) {
	f := tlsFiles{
		KeyStore:   filepath.Join(dir, "keystore.pem"),
		TrustStore: filepath.Join(dir, "truststore.pem"),
		ClientCert: filepath.Join(dir, "client.pem"),
		ClientKey:  filepath.Join(dir, "client-key.pem"),
	}
	now := time.Now()
	c, err := p.issue(ClientCommonName, now.Add(-time.Hour), now.Add(24*time.Hour), x509.ExtKeyUsageClientAuth)
	if err != nil {
		return f, err
	}
	for path, data := range map[string][]byte{f.KeyStore: p.server, f.TrustStore: p.caPEM, f.ClientCert: c.certPEM, f.ClientKey: c.keyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return f, fmt.Errorf("zktest: writing %s: %w", path, err)
		}
	}
	return f, nil
}

// tlsFiles are the PEM files of a TLS cluster.
type tlsFiles struct {
	KeyStore, TrustStore  string // the servers'
	ClientCert, ClientKey string // a client's, for ClientCommonName
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}
