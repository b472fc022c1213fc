package zktest

import (
	"errors"
	"strings"
	"testing"
)

func TestSASLOptions(t *testing.T) {
	for _, bad := range []map[string]string{
		nil, {}, {"": "pw"}, {"a b": "pw"}, {"ü": "pw"}, {`a"`: "pw"}, {"bob": "p\nw"},
	} {
		var c config
		if err := WithSASLDigest(bad)(&c); err == nil {
			t.Errorf("WithSASLDigest(%q) accepted", bad)
		}
	}
	users := map[string]string{"bob": `b"\`, "alice.x-1_": "ä"}
	var c config
	if err := WithSASLDigest(users)(&c); err != nil {
		t.Fatal(err)
	}
	users["bob"] = "changed"
	want := "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n" +
		"  user_alice.x-1_=\"ä\"\n  user_bob=\"b\\\"\\\\\";\n};\n"
	if got := c.sasl.jaas(); got != want {
		t.Errorf("JAAS\n%s\nwant\n%s", got, want)
	}
	if err := c.sasl.check(modeLocal); err != nil {
		t.Error(err)
	}
	for _, m := range []mode{modeExternal, modeContainer} {
		if err := c.sasl.check(m); !errors.Is(err, ErrUnavailable) {
			t.Errorf("SASL with %s: %v, want ErrUnavailable", m, err)
		}
	}
	var req config
	_ = WithSASLRequired()(&req)
	if err := req.sasl.check(modeLocal); err == nil || !strings.Contains(err.Error(), "WithSASLDigest") {
		t.Errorf("WithSASLRequired alone: %v", err)
	}
	lc := &localCluster{cfg: c, root: "/r"}
	if args := strings.Join(lc.saslJVMArgs(), " "); !strings.Contains(args, "-Djava.security.auth.login.config=/r/jaas.conf") ||
		strings.Contains(args, "enforce") {
		t.Errorf("JVM args %s", args)
	}
	lc.cfg.sasl.required = true
	if args := strings.Join(lc.saslJVMArgs(), " "); !strings.Contains(args, "-Dzookeeper.enforce.auth.schemes=sasl") {
		t.Errorf("JVM args %s", args)
	}
	if (&localCluster{}).saslJVMArgs() != nil {
		t.Error("SASL flags without SASL")
	}
}
