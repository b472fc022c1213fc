package zktest

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
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

func TestSASLKerberosOptions(t *testing.T) {
	var c config
	if err := WithSASLKerberos(nil)(&c); err == nil {
		t.Error("WithSASLKerberos(nil) accepted")
	}
	k := &KDC{dir: "/k"}
	if err := WithSASLKerberos(k)(&c); err != nil {
		t.Fatal(err)
	}
	if err := c.sasl.check(modeLocal); err != nil {
		t.Error(err)
	}
	jaas := c.sasl.jaas()
	for _, want := range []string{"Krb5LoginModule required", `keyTab="/k/zookeeper.keytab"`, `principal="zookeeper/localhost@ZK.TEST";`} {
		if !strings.Contains(jaas, want) {
			t.Errorf("JAAS %s lacks %s", jaas, want)
		}
	}
	args := strings.Join((&localCluster{cfg: c, root: "/r"}).saslJVMArgs(), " ")
	if !strings.Contains(args, "-Djava.security.krb5.conf=/k/krb5.conf") || strings.Contains(args, "fips") {
		t.Errorf("JVM args %s", args)
	}
	if err := WithSASLDigest(map[string]string{"bob": "pw"})(&c); err != nil {
		t.Fatal(err)
	}
	if err := c.sasl.check(modeLocal); err == nil {
		t.Error("Digest and Kerberos together accepted")
	}
}

func TestKDCStartClose(t *testing.T) {
	k, err := LaunchKDC(map[string]string{"bob": "pw with spaces \"and quotes\""})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(k.Keytab()); err != nil {
		t.Errorf("keytab: %v", err)
	}
	conn, err := net.DialTimeout("tcp", k.Addr(), time.Second)
	if err != nil {
		t.Fatalf("the KDC does not listen: %v", err)
	}
	conn.Close()
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(k.dir); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", k.dir, err)
	}
	if _, err := LaunchKDC(map[string]string{"a b": "pw"}); err == nil {
		t.Error("a user name with a space accepted")
	}
}
