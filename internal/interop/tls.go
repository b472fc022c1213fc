package interop

import (
	"context"
	"fmt"
	"os"
)

// TLS for the Java programs: ZooKeeper's Java client reaches a TLS-only
// ensemble (a secureClientPort, ssl.clientAuth=need) through system
// properties, the ones an operator puts in CLIENT_JVMFLAGS for zkCli.sh.

// ClientTLSProperties returns the java options that make ZooKeeper's Java
// client (and so Curator) connect over TLS with PEM stores: trustStore
// holds the CAs that sign the servers' certificates, keyStore the
// client's unencrypted private key and its certificate chain in one file
// (WritePEMKeyStore). The client checks the server's certificate against
// the host it dials, as it does by default.
func ClientTLSProperties(trustStore, keyStore string) []string {
	return []string{
		"-Dzookeeper.client.secure=true",
		"-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
		"-Dzookeeper.ssl.trustStore.location=" + trustStore,
		"-Dzookeeper.ssl.trustStore.type=PEM",
		"-Dzookeeper.ssl.keyStore.location=" + keyStore,
		"-Dzookeeper.ssl.keyStore.type=PEM",
	}
}

// WritePEMKeyStore writes the PEM key store a Java client reads
// (ssl.keyStore.type=PEM): the private key of keyFile, then the
// certificates of certFile, into path (mode 0600).
func WritePEMKeyStore(path, certFile, keyFile string) error {
	var store []byte
	for _, f := range []string{keyFile, certFile} {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("interop: PEM key store: %w", err)
		}
		store = append(store, data...)
	}
	if err := os.WriteFile(path, store, 0o600); err != nil {
		return fmt.Errorf("interop: PEM key store: %w", err)
	}
	return nil
}

// StartCuratorWith is StartCurator with java options props (system
// properties such as ClientTLSProperties gives) before the class path.
func StartCuratorWith(ctx context.Context, dir string, props []string, args ...string) (*Proc, error) {
	return startJava(ctx, "curator", dir, CuratorSourceName, curatorSource, props, args)
}

// StartCuratorDiscoveryWith is StartCuratorDiscovery with java options
// props, as StartCuratorWith.
func StartCuratorDiscoveryWith(ctx context.Context, dir string, props []string, args ...string) (*Proc, error) {
	return startJava(ctx, "curator-discovery", dir, CuratorDiscoverySourceName, curatorDiscoverySource, props, args)
}
