package sasl_test

// The servers here stay plain under ZK_TEST_TLS: these tests drive the
// SASL exchange on connections of their own (raw dials, go-zookeeper
// without the Wire, Java clients).

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// ZooKeeper's Java client and ours, both SASL DIGEST-MD5 as bob on a
// zktest server: each reads the node the other made with the ACL
// sasl:bob.
func TestDigestJavaInterop(t *testing.T) {
	cp, err := interop.JavaClasspath()
	if errors.Is(err, interop.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	c := zktest.Start(t, zktest.WithSASLDigest(map[string]string{user: password}), zktest.WithoutTLS())
	conn := connect(t, c.Servers()[0], newSASLDialer(digest(password)))
	zktest.Eventually(t, waitFor, "the SASL session", hasSession(conn))
	if _, err := conn.Create("/from-go", []byte("go's"), 0, bobOnly); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	jaas := filepath.Join(dir, "client.jaas")
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(password)
	text := "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  username=\"" + user + "\"\n  password=\"" + esc + "\";\n};\n"
	if err := os.WriteFile(jaas, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append(append([]string{}, interop.JVMFlags...),
		"-Djava.security.auth.login.config="+jaas,
		"-Dzookeeper.fips-mode=false", // 3.9's client refuses DIGEST-MD5 in FIPS mode too
		"-cp", cp, filepath.Join("testdata", "SaslJava.java"), c.Servers()[0], "/from-go", "/from-java")
	out, err := exec.CommandContext(ctx, "java", args...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "READ go's") || !strings.Contains(string(out), "CREATED /from-java") {
		t.Fatalf("the Java client: %v\n%s", err, out)
	}
	if data, _, err := conn.Get("/from-java"); err != nil || string(data) != "java's" {
		t.Fatalf("the Go session reads Java's node: %q, %v", data, err)
	}
}
