package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/cli"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// tlsFlags are the flags that reach a TLS cluster (none for a plain one).
func tlsFlags(zkc *zktest.Cluster) []string {
	ca, cert, key := zkc.TLSFiles()
	if ca == "" {
		return nil
	}
	return []string{"-tls-ca", ca, "-tls-cert", cert, "-tls-key", key}
}

// TestInspectOverTLS: an operator inspects a TLS-only ensemble with
// ssl.clientAuth=need, through the -tls flags or the Java client's
// properties in $CLIENT_JVMFLAGS (a PEM key store: the key and the
// certificate in one file); without them zkinspect says why it cannot
// connect.
func TestInspectOverTLS(t *testing.T) {
	zkc := zktest.Start(t, zktest.WithTLS())
	ctx := testCtx(t)
	m, err := mutex.New(connectT(t, zkc), "/tls/lock", mutex.WithData([]byte("holder")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"/tls/lock: mutex"}, {"1", "HOLDS", `"holder"`}}
	wantLines(t, "-tls flags", inspectOut(t, zkc, "/tls/lock"), want)

	ca, cert, key := zkc.TLSFiles()
	store := filepath.Join(t.TempDir(), "keystore.pem")
	var pemStore []byte
	for _, f := range []string{key, cert} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pemStore = append(pemStore, data...)
	}
	if err := os.WriteFile(store, pemStore, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(cli.EnvJVMFlags, "-Dzookeeper.client.secure=true -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty "+
		"-Dzookeeper.ssl.trustStore.location="+ca+" -Dzookeeper.ssl.trustStore.type=PEM "+
		"-Dzookeeper.ssl.keyStore.location="+store+" -Dzookeeper.ssl.keyStore.type=PEM")
	var out bytes.Buffer
	if err := run(ctx, []string{"-servers", zkc.ConnectString(), "/tls/lock"}, &out); err != nil {
		t.Fatalf("zkinspect with %s: %v", cli.EnvJVMFlags, err)
	}
	wantLines(t, cli.EnvJVMFlags, out.String(), want)

	t.Setenv(cli.EnvJVMFlags, "")
	err = run(ctx, []string{"-servers", zkc.ConnectString(), "-connect-timeout", "2s", "-tls-ca", ca, "/tls/lock"}, &out)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("zkinspect without a client certificate: %v, want an error naming the certificate", err)
	}
	t.Log(err)
}
