package zktest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// creatorACL creates path with the creator-only ACL (zk.AuthACL) and
// prints the identity the server put in its place: how the server knows
// the client.
func creatorACL(ctx context.Context, c *recipes.Client, path string) {
	if _, err := c.Create(ctx, path, nil, 0); err != nil {
		fmt.Println(err)
		return
	}
	acl, _, err := c.UnsafeConn().GetACL(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range acl {
		fmt.Printf("%s:%s\n", a.Scheme, a.ID)
	}
}

// A TLS-only server (a secureClientPort, ssl.clientAuth=need, the x509
// provider): the client presents the certificate ClientTLS gives, and the
// server knows it by its subject, scheme x509. ClientTLSAs gives a
// certificate of another subject, TLSFiles the PEM files for a process in
// another language (a Java client's ssl.keyStore and ssl.trustStore).
func ExampleWithTLS() {
	zkc, err := zktest.Launch(1, zktest.WithTLS())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer zkc.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := recipes.Connect(ctx, zkc.Servers(), recipes.WithTLS(zkc.ClientTLS()),
		recipes.WithACLProvider(recipes.ACLProviderFunc(func(string) []zk.ACL { return zk.AuthACL(zk.PermAll) })))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())
	creatorACL(ctx, c, "/tls-example")
	// Output: x509:CN=zktest-client
}

// A server with SASL DIGEST-MD5 users (a JAAS DigestLoginModule): the
// client authenticates on every connection with WithSASLDigest, and the
// server knows it as sasl:<user>. Clients without SASL are still served,
// unless WithSASLRequired.
func ExampleWithSASLDigest() {
	zkc, err := zktest.Launch(1, zktest.WithSASLDigest(map[string]string{"bob": "bob-secret"}),
		zktest.WithoutTLS()) // plain, even under ZK_TEST_TLS: the identity is SASL's alone
	if err != nil {
		fmt.Println(err)
		return
	}
	defer zkc.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := recipes.Connect(ctx, zkc.Servers(), recipes.WithSASLDigest("bob", "bob-secret"),
		recipes.WithACLProvider(recipes.ACLProviderFunc(func(string) []zk.ACL { return zk.AuthACL(zk.PermAll) })))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())
	creatorACL(ctx, c, "/sasl-example")
	// Output: sasl:bob
}

// In a test, Start does the same and stops the server when the test ends.
func ExampleStart_secure() {
	testSecure := func(t *testing.T) {
		zkc := zktest.Start(t, zktest.WithTLS())
		c, err := recipes.Connect(context.Background(), zkc.Servers(), recipes.WithTLS(zkc.ClientTLS()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())

		users := map[string]string{"alice": "alice-secret"}
		sc := zktest.Start(t, zktest.WithSASLDigest(users), zktest.WithSASLRequired())
		s, err := recipes.Connect(context.Background(), sc.Servers(), recipes.WithSASLDigest("alice", users["alice"]))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(context.Background())
	}
	_ = testSecure // func TestSecure(t *testing.T) { ... }
}
