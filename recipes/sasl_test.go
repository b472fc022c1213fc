package recipes_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

const (
	saslUser     = "bob"
	saslPassword = "b0b's secret"
)

// bobOnly gives every node the ACL sasl:bob, all permissions.
var bobOnly = recipes.ACLProviderFunc(func(string) []zk.ACL {
	return []zk.ACL{{Perms: zk.PermAll, Scheme: "sasl", ID: saslUser}}
})

// A client WithSASLDigest on a server that requires SASL: its session is
// sasl:bob on every connection (a lock taken and released, a node only
// bob may read read again after the connection was cut), where a plain
// client is refused.
func TestSASLDigest(t *testing.T) {
	zkc := zktest.Start(t, zktest.WithSASLDigest(map[string]string{saslUser: saslPassword}), zktest.WithSASLRequired())
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := testutil.Connect(t, []string{proxy.Addr()}, recipes.WithSASLDigest(saslUser, saslPassword),
		recipes.WithACLProvider(bobOnly), recipes.WithSessionTimeout(10*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, err := c.Create(ctx, "/bob", []byte("mine"), 0)
	require.NoError(t, err)
	m, err := mutex.New(c, "/locks/sasl")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))

	sid := c.SessionID()
	proxy.Cut() // a new connection, authenticated anew
	testutil.Eventually(t, 20*time.Second, "the session back on a new connection", func() bool {
		data, _, err := c.Get(ctx, "/bob")
		return err == nil && string(data) == "mine"
	})
	assert.Equal(t, sid, c.SessionID(), "the same session")

	plain, err := testutil.Dial(ctx, zkc.Servers())
	require.NoError(t, err, "the server grants the session; it refuses its first request")
	defer plain.Close(context.Background())
	_, _, err = plain.Get(ctx, "/bob")
	assert.Error(t, err, "a client without SASL is refused")
}

// The wrong password: Connect fails at once (not at its connect timeout)
// with ErrAuthFailed, and nothing is made on the server.
func TestSASLDigestRefused(t *testing.T) {
	zkc := zktest.Start(t, zktest.WithSASLDigest(map[string]string{saslUser: saslPassword}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	c, err := testutil.Dial(ctx, zkc.Servers(), recipes.WithSASLDigest(saslUser, "wrong"),
		recipes.WithConnectTimeout(20*time.Second))
	if err == nil {
		c.Close(context.Background())
		t.Fatal("Connect with the wrong password succeeded")
	}
	assert.True(t, errors.Is(err, recipes.ErrAuthFailed), "%v wraps ErrAuthFailed", err)
	assert.Less(t, time.Since(start), 10*time.Second, "at once, not at the connect timeout: %v", err)
	t.Logf("the wrong password: %v", err)

	_, err = testutil.Dial(ctx, zkc.Servers(), recipes.WithSASLDigest("", "x"))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "an empty user")
	_, err = testutil.Dial(ctx, zkc.Servers(), recipes.WithSASL(nil))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "a nil mechanism func")
	_, err = testutil.Dial(ctx, zkc.Servers(), recipes.WithSASL(func(string) recipes.SASLMechanism { return nil }))
	assert.ErrorIs(t, err, recipes.ErrAuthFailed, "a mechanism func that gives none")

	admin := testutil.Connect(t, zkc.Servers())
	kids, _, err := admin.Children(ctx, "/")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"zookeeper"}, kids, "nothing made")
}

// SASL over TLS: a TLS-only server with client certificates that also
// requires SASL; the exchange runs inside the TLS connection.
func TestSASLDigestOverTLS(t *testing.T) {
	zkc := zktest.Start(t, zktest.WithTLS(), zktest.WithSASLDigest(map[string]string{saslUser: saslPassword}), zktest.WithSASLRequired())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := recipes.Connect(ctx, zkc.Servers(), recipes.WithTLS(zkc.ClientTLS()),
		recipes.WithSASLDigest(saslUser, saslPassword), recipes.WithACLProvider(bobOnly))
	require.NoError(t, err)
	defer c.Close(context.Background())
	_, err = c.Create(ctx, "/bob", []byte("mine"), 0)
	require.NoError(t, err)
	data, _, err := c.Get(ctx, "/bob")
	require.NoError(t, err)
	assert.Equal(t, "mine", string(data))
}
