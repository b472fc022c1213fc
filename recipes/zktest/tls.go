package zktest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// EnvTLS, when set to a true value ("1", "true"), makes every cluster
// this package starts TLS-only, as WithTLS does, unless WithoutTLS says
// otherwise: the switch that runs a whole test suite against secure
// servers.
const EnvTLS = "ZK_TEST_TLS"

// WithTLS starts servers that accept clients only over TLS, on a
// secureClientPort (ZooKeeper's Netty connection factory), with
// ssl.clientAuth=need and the x509 authentication provider: a client must
// present a certificate the cluster's CA signed, and is known in ACLs by
// its subject (scheme "x509"). The CA, the servers' and the clients'
// certificates are made for the cluster (ECDSA P-256) and written as PEM
// files into its directory. Connect with ClientTLS. Four-letter words
// (FourLetter, ZnodeCount, ...) go over TLS too. It needs a local
// installation: a cluster named by ZK_TEST_SERVERS or started in Docker
// cannot be made TLS-only.
func WithTLS() Option { return func(c *config) error { c.tls = tlsOn; return nil } }

// WithoutTLS starts plain servers even when ZK_TEST_TLS is set: for tests
// that cannot speak TLS by nature (a Java or Python client, raw
// go-zookeeper connections).
func WithoutTLS() Option { return func(c *config) error { c.tls = tlsOff; return nil } }

const (
	tlsFromEnv = iota
	tlsOn
	tlsOff
)

// wantTLS reports whether the cluster is to be TLS-only.
func (c config) wantTLS() bool {
	switch c.tls {
	case tlsOn:
		return true
	case tlsOff:
		return false
	}
	on, _ := strconv.ParseBool(os.Getenv(EnvTLS))
	return on
}

// clusterTLS is what a TLS cluster keeps: its CA and its files.
type clusterTLS struct {
	pki    *pki
	files  tlsFiles
	client *tls.Config // trusts the CA, presents ClientCommonName's certificate
}

// newClusterTLS makes a CA and certificates and writes them into dir.
func newClusterTLS(dir string) (*clusterTLS, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p, err := newPKI("zktest-ca")
	if err != nil {
		return nil, fmt.Errorf("zktest: making the test CA: %w", err)
	}
	files, err := p.writeFiles(dir)
	if err != nil {
		return nil, err
	}
	client, err := p.clientTLS("", time.Time{}, time.Time{})
	if err != nil {
		return nil, err
	}
	pair, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
	if err != nil {
		return nil, err
	}
	client.Certificates = []tls.Certificate{pair}
	return &clusterTLS{pki: p, files: files, client: client}, nil
}

// jvmArgs are the system properties of a TLS-only server.
func (ct *clusterTLS) jvmArgs() []string {
	return []string{
		"-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"-Dzookeeper.ssl.keyStore.location=" + ct.files.KeyStore,
		"-Dzookeeper.ssl.keyStore.type=PEM",
		"-Dzookeeper.ssl.trustStore.location=" + ct.files.TrustStore,
		"-Dzookeeper.ssl.trustStore.type=PEM",
		"-Dzookeeper.ssl.clientAuth=need",
		"-Dzookeeper.authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider",
	}
}

// TLS reports whether the cluster accepts clients only over TLS (WithTLS,
// or ZK_TEST_TLS).
func (c *Cluster) TLS() bool { return c.tls != nil }

// ClientTLS returns a client TLS configuration for a TLS cluster: it
// trusts the cluster's CA and presents a certificate for
// ClientCommonName. It returns nil for a plain cluster. Each call returns
// a new copy.
func (c *Cluster) ClientTLS() *tls.Config {
	if c.tls == nil {
		return nil
	}
	return c.tls.client.Clone()
}

// ClientTLSAs returns a client TLS configuration, as ClientTLS, that
// presents a new certificate for the subject "CN=" + cn: a second identity
// for tests of x509 ACLs.
func (c *Cluster) ClientTLSAs(cn string) (*tls.Config, error) {
	if c.tls == nil {
		return nil, fmt.Errorf("zktest: ClientTLSAs on a cluster without TLS")
	}
	now := time.Now()
	return c.tls.pki.clientTLS(cn, now.Add(-time.Hour), now.Add(24*time.Hour))
}

// BadTLS names a way for a client's TLS configuration to be wrong.
type BadTLS int

const (
	// TLSWrongCA trusts another CA than the one that signed the servers'
	// certificates (its own certificate is good).
	TLSWrongCA BadTLS = iota + 1
	// TLSNoClientCert presents no client certificate.
	TLSNoClientCert
	// TLSExpiredCert presents a client certificate, signed by the
	// cluster's CA, that expired an hour ago.
	TLSExpiredCert
)

// BadClientTLS returns a client TLS configuration for a TLS cluster that
// is wrong in the way bad says, for tests of what a client sees when the
// server or the client refuses the handshake.
func (c *Cluster) BadClientTLS(bad BadTLS) (*tls.Config, error) {
	if c.tls == nil {
		return nil, fmt.Errorf("zktest: BadClientTLS on a cluster without TLS")
	}
	now := time.Now()
	switch bad {
	case TLSWrongCA:
		other, err := newPKI("zktest-other-ca")
		if err != nil {
			return nil, err
		}
		cfg, err := c.tls.pki.clientTLS(ClientCommonName, now.Add(-time.Hour), now.Add(24*time.Hour))
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		cfg.RootCAs.AddCert(other.ca)
		return cfg, nil
	case TLSNoClientCert:
		return c.tls.pki.clientTLS("", now, now)
	case TLSExpiredCert:
		return c.tls.pki.clientTLS(ClientCommonName, now.Add(-48*time.Hour), now.Add(-time.Hour))
	}
	return nil, fmt.Errorf("zktest: BadTLS %d: no such kind", bad)
}

// TLSFiles returns the PEM files of a TLS cluster a client (a tool, a
// process in another language) can use: the CA that signed the servers'
// certificates, and a client certificate for ClientCommonName and its
// key. It returns empty names for a plain cluster.
func (c *Cluster) TLSFiles() (caFile, certFile, keyFile string) {
	if c.tls == nil {
		return "", "", ""
	}
	return c.tls.files.TrustStore, c.tls.files.ClientCert, c.tls.files.ClientKey
}

// tlsAddrs maps the addresses of the TLS servers (and of proxies to them)
// this process runs to the client configuration they accept.
var tlsAddrs = struct {
	sync.Mutex
	m map[string]*clusterTLS
}{m: map[string]*clusterTLS{}}

// registerTLS records addrs as TLS servers of ct (or proxies to them).
func registerTLS(ct *clusterTLS, addrs ...string) {
	tlsAddrs.Lock()
	defer tlsAddrs.Unlock()
	for _, a := range addrs {
		tlsAddrs.m[a] = ct
	}
}

// tlsOf returns the TLS state of the first of addrs registered, or nil.
func tlsOf(addrs ...string) *clusterTLS {
	tlsAddrs.Lock()
	defer tlsAddrs.Unlock()
	for _, a := range addrs {
		if ct := tlsAddrs.m[a]; ct != nil {
			return ct
		}
	}
	return nil
}

func unregisterTLS(addrs ...string) {
	tlsAddrs.Lock()
	defer tlsAddrs.Unlock()
	for _, a := range addrs {
		delete(tlsAddrs.m, a)
	}
}

// ClientTLSFor returns a client TLS configuration for the TLS cluster
// this process started that one of servers belongs to, a Proxy's address
// to one of its members included, and nil when none does: a test helper
// can add recipes.WithTLS(ClientTLSFor(s)) when it is not nil, so the same
// test runs against plain and TLS clusters. Each call presents a
// certificate of a subject of its own (CN=zktest-client-<n>): with the
// x509 provider every client is then a principal of its own, as clients
// without credentials are on a plain server, and the creator-only ACLs of
// one are closed to the others.
func ClientTLSFor(servers []string) *tls.Config {
	ct := tlsOf(servers...)
	if ct == nil {
		return nil
	}
	now := time.Now()
	cn := fmt.Sprintf("%s-%d", ClientCommonName, clientSerial.Add(1))
	cfg, err := ct.pki.clientTLS(cn, now.Add(-time.Hour), now.Add(24*time.Hour))
	if err != nil { // crypto/rand and ECDSA do not fail
		return ct.client.Clone()
	}
	return cfg
}

var clientSerial atomic.Int64

// TLSFilesFor returns the PEM files (as TLSFiles) of the TLS cluster
// this process started that one of servers belongs to, a Proxy's address
// to one of its members included, and empty names when none does: for a
// test that hands the servers to another process or a tool.
func TLSFilesFor(servers []string) (caFile, certFile, keyFile string) {
	if ct := tlsOf(servers...); ct != nil {
		return ct.files.TrustStore, ct.files.ClientCert, ct.files.ClientKey
	}
	return "", "", ""
}

// tlsDir is where a local cluster's TLS files go.
func tlsDir(root string) string { return filepath.Join(root, "tls") }
