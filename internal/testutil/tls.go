package testutil

// The TLS switch: with ZK_TEST_TLS set, zktest starts TLS-only servers
// (ssl.clientAuth=need), and every client a test makes through Connect or
// Dial, in the test process or in a helper process it starts, presents
// the cluster's client certificate; the recipe tests run unchanged over
// TLS.

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// envHelperTLS carries to a helper process the PEM files ("ca|cert|key")
// of the TLS cluster its parent named in its environment.
const envHelperTLS = "ZKRECIPES_TEST_HELPER_TLS"

// Dial is recipes.Connect for tests: before opts, it adds WithTLS with
// the client configuration of the TLS cluster servers belong to
// (zktest.ClientTLSFor), or, in a helper process of a parent whose
// cluster is one, of the files the parent passed (Helpers.Start); nothing
// for a plain cluster.
func Dial(ctx context.Context, servers []string, opts ...recipes.Option) (*recipes.Client, error) {
	if cfg := zktest.ClientTLSFor(servers); cfg != nil {
		return recipes.Connect(ctx, servers, append([]recipes.Option{recipes.WithTLS(cfg)}, opts...)...)
	}
	if files := strings.Split(os.Getenv(envHelperTLS), "|"); len(files) == 3 {
		cfg, err := recipes.TLSFromFiles(files[0], files[1], files[2])
		if err != nil {
			return nil, err
		}
		return recipes.Connect(ctx, servers, append([]recipes.Option{recipes.WithTLS(cfg)}, opts...)...)
	}
	return recipes.Connect(ctx, servers, opts...)
}

// helperTLSEnv returns the environment entry that passes to a helper the
// TLS files of a cluster one of whose addresses appears in env (as a
// value, or in a comma-separated list), or "" when none does.
func helperTLSEnv(env []string) string {
	for _, kv := range env {
		_, v, _ := strings.Cut(kv, "=")
		if ca, cert, key := zktest.TLSFilesFor(strings.Split(v, ",")); ca != "" {
			return envHelperTLS + "=" + ca + "|" + cert + "|" + key
		}
	}
	return ""
}

// TLSDialer returns a go-zookeeper dialer that makes TLS connections with
// the client configuration of the TLS cluster servers belong to, for
// tests that dial raw go-zookeeper connections; nil for a plain cluster.
func TLSDialer(servers []string) zk.Dialer {
	cfg := zktest.ClientTLSFor(servers)
	if cfg == nil {
		return nil
	}
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		c := cfg.Clone()
		c.ServerName, _, _ = net.SplitHostPort(address)
		d := tls.Dialer{Config: c}
		return d.DialContext(ctx, network, address)
	}
}

// ZKTLS returns a go-zookeeper option for a raw connection to servers:
// zk.WithDialer(TLSDialer(servers)) for a TLS cluster, nothing for a
// plain one.
func ZKTLS(servers []string) func(*zk.Conn) {
	if d := TLSDialer(servers); d != nil {
		return zk.WithDialer(d)
	}
	return func(*zk.Conn) {}
}

// TLSEnv returns the environment a child process (this test binary run
// again) needs for Dial to reach servers over TLS: the cluster's PEM files
// when servers belong to a TLS cluster, nothing otherwise.
func TLSEnv(servers []string) []string {
	if e := helperTLSEnv([]string{"servers=" + strings.Join(servers, ",")}); e != "" {
		return []string{e}
	}
	return nil
}
