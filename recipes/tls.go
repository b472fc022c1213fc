package recipes

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"
)

// WithTLS makes every connection the Client makes a TLS connection with
// cfg: go-zookeeper's and the Client's own requests, on every server of
// the ensemble and after every reconnection. Use it for servers that
// listen on a secureClientPort (ZooKeeper's Netty connection factory).
// Each connection is dialled as without it (through WithDialer's dialer,
// if given), then handshaken within the same dial timeout. The server's
// certificate is checked against cfg.RootCAs (the system's roots when nil)
// and the host of the address dialled (an IP address is checked against
// the certificate's IP SANs), unless cfg.ServerName names another.
// Give a client certificate (cfg.Certificates or GetClientCertificate) for
// servers with ssl.clientAuth=need; servers with X509AuthenticationProvider
// then know the client by its certificate's subject (the "x509" scheme in
// ACLs). TLSFromFiles makes a cfg from PEM files. cfg is cloned for each
// connection and must not be changed after the call.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) error {
		if cfg == nil {
			return fmt.Errorf("%w: nil TLS config", ErrInvalidArgument)
		}
		if cfg.MinVersion != 0 && cfg.MinVersion < tls.VersionTLS12 {
			return fmt.Errorf("%w: TLS MinVersion %#x (want TLS 1.2 or later)", ErrInvalidArgument, cfg.MinVersion)
		}
		o.cfg.TLS = cfg
		return nil
	}
}

// TLSFromFiles returns a client TLS configuration read from PEM files, as
// ZooKeeper's Java client takes them with ssl.trustStore.type=PEM and
// ssl.keyStore.type=PEM. caFile holds the certificates of the CAs trusted
// to sign servers' certificates ("" for the system's roots). certFile and
// keyFile hold the client's certificate chain and its unencrypted private
// key (both "" for no client certificate; the same file when it holds
// both, as a Java PEM key store does). The certificate and key are read
// again at the next handshake when either file's modification time
// changed, so a rotated client certificate is used by the next connection
// without a restart (the CA file is read once).
func TLSFromFiles(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		data, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%w: TLS CA file: %w", ErrInvalidArgument, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("%w: TLS CA file %s: no PEM certificate in it", ErrInvalidArgument, caFile)
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("%w: TLS client certificate %q and key %q: give both or neither", ErrInvalidArgument, certFile, keyFile)
	}
	if certFile != "" {
		kp := &keyPairFiles{cert: certFile, key: keyFile}
		if _, err := kp.get(); err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.get() }
	}
	return cfg, nil
}

// keyPairFiles is a client certificate read from files, read again when
// either file's modification time changes.
type keyPairFiles struct {
	cert, key string

	mu      sync.Mutex
	loaded  *tls.Certificate
	modCert time.Time
	modKey  time.Time
}

func (k *keyPairFiles) get() (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ci, err1 := os.Stat(k.cert)
	ki, err2 := os.Stat(k.key)
	if err1 == nil && err2 == nil && k.loaded != nil && ci.ModTime().Equal(k.modCert) && ki.ModTime().Equal(k.modKey) {
		return k.loaded, nil
	}
	pair, err := tls.LoadX509KeyPair(k.cert, k.key)
	if err != nil {
		if k.loaded != nil { // mid-rotation (one file written, not the other): keep the last good pair
			return k.loaded, nil
		}
		return nil, fmt.Errorf("%w: TLS client certificate: %w", ErrInvalidArgument, err)
	}
	k.loaded = &pair
	if err1 == nil && err2 == nil {
		k.modCert, k.modKey = ci.ModTime(), ki.ModTime()
	}
	return k.loaded, nil
}
