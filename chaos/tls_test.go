//go:build chaos

package chaos

// -tls: the whole suite over TLS. The ensemble is TLS-only
// (zktest.WithTLS: a secureClientPort, ssl.clientAuth=need, the x509
// provider), the proxies end TLS on both sides (zktest's TLS proxy), and
// every client presents a client certificate the cluster's CA signed:
// the test process's (admin, checkers, cache worker, the in-process
// workers) through zktest.ClientTLSFor, the worker processes through the
// PEM files their parent names in envTLS (recipes.TLSFromFiles).

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

var flagTLS = flag.Bool("tls", false, "start the ensemble TLS-only with client certificates (zktest.WithTLS) and connect every client, worker processes included, over TLS")

// envTLS carries to a worker process the cluster's PEM files, "ca|cert|key".
const envTLS = "ZKCHAOS_TLS"

// ensembleOpts are the options of the suite's ensemble.
func ensembleOpts(opts ...zktest.Option) []zktest.Option {
	if *flagTLS {
		return append(opts, zktest.WithTLS())
	}
	return opts
}

// workerTLSEnv returns the environment entry that hands a worker process
// the TLS files of zkc, or "" for a plain ensemble.
func workerTLSEnv(zkc *zktest.Cluster) string {
	ca, cert, key := zkc.TLSFiles()
	if ca == "" {
		return ""
	}
	return envTLS + "=" + ca + "|" + cert + "|" + key
}

// filesTLS is the worker process's TLS configuration, read once from the
// files envTLS names.
var filesTLS = sync.OnceValues(func() (recipes.Option, error) {
	v := os.Getenv(envTLS)
	if v == "" {
		return nil, nil
	}
	f := strings.Split(v, "|")
	if len(f) != 3 {
		return nil, fmt.Errorf("%s=%q: want ca|cert|key", envTLS, v)
	}
	cfg, err := recipes.TLSFromFiles(f[0], f[1], f[2])
	if err != nil {
		return nil, err
	}
	return recipes.WithTLS(cfg), nil
})

// dial is recipes.Connect over TLS when the servers (or the proxies to
// them) are a TLS cluster's, or the process is a worker of one.
func dial(ctx context.Context, servers []string, opts ...recipes.Option) (*recipes.Client, error) {
	if cfg := zktest.ClientTLSFor(servers); cfg != nil {
		return recipes.Connect(ctx, servers, append([]recipes.Option{recipes.WithTLS(cfg)}, opts...)...)
	}
	tlsOpt, err := filesTLS()
	if err != nil {
		return nil, err
	}
	if tlsOpt != nil {
		opts = append([]recipes.Option{tlsOpt}, opts...)
	}
	return recipes.Connect(ctx, servers, opts...)
}
