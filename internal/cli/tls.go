package cli

import (
	"crypto/tls"
	"flag"
	"fmt"
	"strings"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// EnvJVMFlags is the environment variable ZooKeeper's own client scripts
// (zkCli.sh) take the client's JVM flags from. The TLS system properties
// among them are the defaults of the -tls flags where they map cleanly:
// zookeeper.client.secure=true turns TLS on, and PEM trust and key stores
// (zookeeper.ssl.trustStore.location, zookeeper.ssl.keyStore.location:
// one file with the key and its certificates) name -tls-ca and
// -tls-cert/-tls-key. JKS and PKCS12 stores, and encrypted keys, do not
// map: the command says so.
const EnvJVMFlags = "CLIENT_JVMFLAGS"

// tlsFlags are the -tls flags as given.
type tlsFlags struct {
	on                    bool
	ca, cert, key, server string
}

func (t *tlsFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&t.on, "tls", false, "connect over TLS (the servers' secureClientPort); implied by the other -tls flags and by zookeeper.client.secure=true in $"+EnvJVMFlags)
	fs.StringVar(&t.ca, "tls-ca", "", "trust the CAs in this PEM `file` (default: the system's roots)")
	fs.StringVar(&t.cert, "tls-cert", "", "present the client certificate (chain) in this PEM `file`, for ssl.clientAuth=need")
	fs.StringVar(&t.key, "tls-key", "", "the client certificate's unencrypted PEM key `file` (default: -tls-cert's file, as a PEM key store holds both)")
	fs.StringVar(&t.server, "tls-server-name", "", "check the servers' certificates for this `name` (default: the host of each address dialled)")
}

// resolve returns the client TLS configuration the flags, or else the
// Java client's properties in getenv(EnvJVMFlags), ask for; nil for none.
// Its errors wrap ErrUsage.
func (t tlsFlags) resolve(getenv func(string) string) (*tls.Config, error) {
	given := t.on || t.ca != "" || t.cert != "" || t.key != "" || t.server != ""
	if !given {
		j, err := fromJVMFlags(getenv(EnvJVMFlags))
		if err != nil {
			return nil, err
		}
		t = j
	}
	if !t.on && t.ca == "" && t.cert == "" && t.key == "" && t.server == "" {
		return nil, nil
	}
	if t.key == "" {
		t.key = t.cert
	}
	if t.cert == "" && t.key != "" {
		return nil, fmt.Errorf("%w: -tls-key without -tls-cert", ErrUsage)
	}
	cfg, err := recipes.TLSFromFiles(t.ca, t.cert, t.key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	cfg.ServerName = t.server
	return cfg, nil
}

// fromJVMFlags reads the TLS settings of ZooKeeper's Java client from
// JVM flags ("-Dzookeeper.client.secure=true -Dzookeeper.ssl...").
func fromJVMFlags(flags string) (tlsFlags, error) {
	props := map[string]string{}
	for _, f := range strings.Fields(flags) {
		if k, v, ok := strings.Cut(strings.TrimPrefix(f, "-D"), "="); ok && strings.HasPrefix(f, "-D") {
			props[k] = v
		}
	}
	var t tlsFlags
	if props["zookeeper.client.secure"] != "true" {
		return t, nil
	}
	t.on = true
	for _, s := range []struct {
		store string
		dst   *string
	}{{"trustStore", &t.ca}, {"keyStore", &t.cert}} {
		loc := props["zookeeper.ssl."+s.store+".location"]
		if loc == "" {
			continue
		}
		typ := strings.ToUpper(props["zookeeper.ssl."+s.store+".type"])
		if typ == "" { // ZooKeeper goes by the file's extension
			typ = "non-PEM"
			if strings.HasSuffix(strings.ToLower(loc), ".pem") {
				typ = "PEM"
			}
		}
		if typ != "PEM" {
			return t, fmt.Errorf("%w: $%s names a %s %s %s: give its PEM form with -tls-ca, -tls-cert and -tls-key", ErrUsage, EnvJVMFlags, typ, s.store, loc)
		}
		if props["zookeeper.ssl."+s.store+".password"] != "" && s.store == "keyStore" {
			return t, fmt.Errorf("%w: $%s names an encrypted PEM key (zookeeper.ssl.keyStore.password): give an unencrypted one with -tls-cert and -tls-key", ErrUsage, EnvJVMFlags)
		}
		*s.dst = loc
	}
	return t, nil
}
