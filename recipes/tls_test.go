package recipes_test

import (
	"context"
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// tlsCluster is one TLS-only server (ssl.clientAuth=need, the x509
// provider) shared by this file's tests, each under paths of its own.
func tlsCluster(t *testing.T) *zktest.Cluster {
	t.Helper()
	return zktest.Start(t, zktest.WithTLS())
}

func TestTLSConnectAndX509Identity(t *testing.T) {
	cl := tlsCluster(t)
	ctx := context.Background()
	alice := testutil.Connect(t, cl.Servers(), recipes.WithTLS(cl.ClientTLS()))
	bobTLS, err := cl.ClientTLSAs("bob")
	require.NoError(t, err)
	bob := testutil.Connect(t, cl.Servers(), recipes.WithTLS(bobTLS))

	// The creator's x509 identity is what zk.AuthACL ("auth", the
	// creator's own ids) stands for: bob, known by another certificate,
	// may not touch alice's node.
	aliceOnly := testutil.Connect(t, cl.Servers(), recipes.WithTLS(cl.ClientTLS()), creatorOnly)
	for _, path := range []string{"/x509-alice", "/x509-alice/node"} {
		_, err = aliceOnly.Create(ctx, path, []byte("hers"), 0)
		require.NoError(t, err)
	}
	bobTamper(t, alice, bob, "/x509-alice/node")

	// An explicit x509 ACL names the certificate's subject.
	acl := []zk.ACL{{Perms: zk.PermAll, Scheme: "x509", ID: "CN=" + zktest.ClientCommonName}}
	named := testutil.Connect(t, cl.Servers(), recipes.WithTLS(cl.ClientTLS()),
		recipes.WithACLProvider(recipes.ACLProviderFunc(func(string) []zk.ACL { return acl })))
	_, err = named.Create(ctx, "/x509-named", []byte("x"), 0)
	require.NoError(t, err)
	got, _, err := alice.Get(ctx, "/x509-named")
	require.NoError(t, err)
	assert.Equal(t, "x", string(got))
	_, _, err = bob.Get(ctx, "/x509-named")
	assert.ErrorIs(t, err, zk.ErrNoAuth)
}

// TestTLSServerName: the server's certificate is checked against the host
// dialled (its DNS name as well as its IP address), or against the
// configuration's ServerName when it sets one.
func TestTLSServerName(t *testing.T) {
	cl := tlsCluster(t)
	_, port, _ := splitHostPort(t, cl.Servers()[0])
	c := testutil.Connect(t, []string{"localhost:" + port}, recipes.WithTLS(cl.ClientTLS()))
	_, _, err := c.Exists(context.Background(), "/")
	require.NoError(t, err)

	wrong := cl.ClientTLS()
	wrong.ServerName = "zk.example.org"
	err = refusedConnect(t, cl, wrong)
	assert.ErrorContains(t, err, "zk.example.org")
}

// TestTLSRefused: a client whose TLS settings the server or the client
// refuses gets a clear error from Connect within its connect timeout, and
// creates nothing on the server.
func TestTLSRefused(t *testing.T) {
	cl := tlsCluster(t)
	cases := []struct {
		name string
		bad  zktest.BadTLS
		want []string // one of these in the error
	}{
		{"wrong CA", zktest.TLSWrongCA, []string{"certificate signed by unknown authority"}},
		{"no client certificate", zktest.TLSNoClientCert, []string{"certificate required", "bad certificate", "handshake failure"}},
		{"expired client certificate", zktest.TLSExpiredCert, []string{"certificate", "handshake failure"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := cl.BadClientTLS(tc.bad)
			require.NoError(t, err)
			err = refusedConnect(t, cl, cfg)
			found := false
			for _, w := range tc.want {
				found = found || containsFold(err.Error(), w)
			}
			assert.True(t, found, "error %q names none of %q", err, tc.want)
		})
	}
	good := testutil.Connect(t, cl.Servers(), recipes.WithTLS(cl.ClientTLS()))
	kids, _, err := good.Children(context.Background(), "/")
	require.NoError(t, err)
	assert.Equal(t, []string{"zookeeper"}, kids, "a refused client created something")
}

// refusedConnect connects with cfg, which must fail: within the connect
// timeout, with an error naming the address and not only the timeout.
func refusedConnect(t *testing.T, cl *zktest.Cluster, cfg *tls.Config) error {
	t.Helper()
	const limit = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	c, err := recipes.Connect(ctx, cl.Servers(), recipes.WithTLS(cfg), recipes.WithConnectTimeout(limit))
	if err == nil {
		c.Close(context.Background())
		t.Fatal("Connect succeeded")
	}
	assert.Less(t, time.Since(start), limit+2*time.Second, "Connect outlived its connect timeout")
	assert.ErrorContains(t, err, cl.Servers()[0])
	assert.False(t, errors.Is(err, context.Canceled))
	t.Logf("Connect: %v", err)
	return err
}

func TestWithTLSChecked(t *testing.T) {
	_, err := recipes.Connect(context.Background(), []string{"127.0.0.1:1"}, recipes.WithTLS(nil))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = recipes.Connect(context.Background(), []string{"127.0.0.1:1"}, recipes.WithTLS(&tls.Config{MinVersion: tls.VersionTLS10}))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = recipes.TLSFromFiles("", "cert.pem", "")
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = recipes.TLSFromFiles("/nonexistent/ca.pem", "", "")
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
}
