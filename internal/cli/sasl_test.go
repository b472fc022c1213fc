package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// operator parses args with the environment env.
func operator(t *testing.T, env map[string]string, args ...string) (*Operator, error) {
	t.Helper()
	var o Operator
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return &o, o.Resolve(func(k string) string { return env[k] })
}

// The SASL flags: what each mechanism needs, refused as usage errors
// when missing; the Kerberos defaults from MIT's variables.
func TestSASLFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-sasl", "plain"},
		{"-sasl", "digest"},
		{"-sasl", "kerberos", "-sasl-user", "bob"},
		{"-sasl", "kerberos", "-sasl-user", "bob", "-kerberos-realm", "R"}, // no keytab, no password
	} {
		if _, err := operator(t, map[string]string{EnvServers: "h:1"}, args...); !errors.Is(err, ErrUsage) {
			t.Errorf("%q: got %v, want a usage error", args, err)
		}
	}
	env := map[string]string{EnvServers: "h:1", EnvKrb5Config: "/k.conf", EnvKrb5Keytab: "/bob.keytab"}
	o, err := operator(t, env, "-sasl", "kerberos", "-sasl-user", "bob", "-kerberos-realm", "R")
	if err != nil || o.SASL.Krb5Config != "/k.conf" || o.SASL.Keytab != "/bob.keytab" {
		t.Errorf("kerberos from the environment: %+v, %v", o.SASL, err)
	}
}

// An operator with -sasl digest reaches a server that requires SASL; the
// wrong password in $ZK_SASL_PASSWORD is refused at once.
func TestSASLDigestConnect(t *testing.T) {
	zkc := zktest.Start(t, zktest.WithSASLDigest(map[string]string{"ops": "s3cret"}), zktest.WithSASLRequired())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for pw, ok := range map[string]bool{"s3cret": true, "wrong": false} {
		env := map[string]string{EnvServers: zkc.Servers()[0], EnvSASLPassword: pw}
		o, err := operator(t, env, "-sasl", "digest", "-sasl-user", "ops")
		if err != nil {
			t.Fatal(err)
		}
		c, err := o.Connect(ctx, log)
		if !ok {
			if !errors.Is(err, recipes.ErrAuthFailed) {
				t.Errorf("the wrong password: %v, want ErrAuthFailed", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Children(ctx, "/"); err != nil {
			t.Errorf("a request on the authenticated session: %v", err)
		}
		c.Close(ctx)
	}
}
