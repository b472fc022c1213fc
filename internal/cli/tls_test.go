package cli

import (
	"errors"
	"testing"
)

// TestJVMFlags: the Java client's TLS properties map to the -tls flags
// where they can; what cannot map is a usage error, not a silent plain
// connection.
func TestJVMFlags(t *testing.T) {
	for flags, want := range map[string]tlsFlags{
		"":       {},
		"-Xmx1g": {},
		"-Dzookeeper.client.secure=false -Dzookeeper.ssl.trustStore.location=/ca.pem": {},
		"-Dzookeeper.client.secure=true":                                              {on: true},
		"-Dzookeeper.client.secure=true -Dzookeeper.ssl.trustStore.location=/ca.pem -Dzookeeper.ssl.keyStore.location=/ks -Dzookeeper.ssl.keyStore.type=PEM": {on: true, ca: "/ca.pem", cert: "/ks"},
	} {
		got, err := fromJVMFlags(flags)
		if err != nil || got != want {
			t.Errorf("%q: got %+v, %v; want %+v", flags, got, err, want)
		}
	}
	for _, flags := range []string{
		"-Dzookeeper.client.secure=true -Dzookeeper.ssl.trustStore.location=/ca.jks",
		"-Dzookeeper.client.secure=true -Dzookeeper.ssl.keyStore.location=/ks.p12 -Dzookeeper.ssl.keyStore.type=PKCS12",
		"-Dzookeeper.client.secure=true -Dzookeeper.ssl.keyStore.location=/ks.pem -Dzookeeper.ssl.keyStore.password=x",
	} {
		if _, err := fromJVMFlags(flags); !errors.Is(err, ErrUsage) {
			t.Errorf("%q: got %v, want a usage error", flags, err)
		}
	}
	if _, err := parse(t, "", "-servers", "h:1", "-tls-key", "/k.pem"); !errors.Is(err, ErrUsage) {
		t.Errorf("-tls-key alone: %v", err)
	}
	if _, err := parse(t, "", "-servers", "h:1", "-tls-ca", "/nonexistent.pem"); !errors.Is(err, ErrUsage) {
		t.Errorf("a missing CA file: %v", err)
	}
	if o, err := parse(t, "", "-servers", "h:1", "-tls"); err != nil || o.TLS == nil {
		t.Errorf("-tls: %v, %v", o.TLS, err)
	}
}
