package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// Re-authentication on a cut connection (issue 35): a client whose
// identity is its SASL login or its TLS client certificate loses its
// connection (the proxy cuts it) and reconnects within its session. On
// the new connection the session still has its rights, and the cache's
// persistent watch is back:
//
//   - a write to a node only its creator may touch (zk.AuthACL), made
//     before the cut, succeeds after it, once, without a retry;
//   - the cache resyncs on the new connection, and a node another client
//     creates after that reaches the cache through the watch.
//
// Why it fails without re-authentication. ZooKeeper keeps authentication
// per connection, not per session: a reconnected session has no ids
// until the new connection authenticates. With SASL, the client runs the
// exchange on each connection before anything else (engine wireAuth);
// were it run on the first connection only, the write would be refused
// with NoAuth on a server where SASL is optional (the ACL is sasl:bob;
// the connection would be anonymous), and on a server that requires SASL
// every request of the new connection, the write, the watch's re-add and
// the resync's reads, would be refused and the connection closed (the
// resync would never complete). Checked once by hand: with wireAuth.wrap
// authenticating the first connection only, both fail at the write, the
// optional case with zk.ErrNoAuth, the required one with "connection
// closed" (the server's SESSIONCLOSEDREQUIRESASLAUTH). With TLS, the server's X509AuthenticationProvider takes the
// identity from the certificate each handshake presents (ssl.clientAuth=
// need): a reconnection without the certificate is refused, and one with
// another subject would be refused the write (the other client below
// shows it is).
func TestReauthAfterCut(t *testing.T) {
	users := map[string]string{"bob": "b0b's secret", "carol": "carol's"}
	cases := []struct {
		name string
		opts []zktest.Option
		// as is the owner's identity option, other another client's.
		as, other []recipes.Option
	}{
		{"SASL optional", []zktest.Option{zktest.WithSASLDigest(users)},
			[]recipes.Option{recipes.WithSASLDigest("bob", users["bob"])},
			[]recipes.Option{recipes.WithSASLDigest("carol", users["carol"])}},
		{"SASL required", []zktest.Option{zktest.WithSASLDigest(users), zktest.WithSASLRequired()},
			[]recipes.Option{recipes.WithSASLDigest("bob", users["bob"])},
			[]recipes.Option{recipes.WithSASLDigest("carol", users["carol"])}},
		// testutil.Connect gives each client of a TLS cluster a
		// certificate of a subject of its own (zktest.ClientTLSFor).
		{"TLS client certificate", []zktest.Option{zktest.WithTLS()}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			zkc := zktest.Start(t, tc.opts...)
			reauthAfterCut(t, zkc, tc.as, tc.other)
		})
	}
}

// mineOnly gives /reauth/mine to its creator alone (zk.AuthACL: the
// creating connection's own ids), every other node to anyone.
var mineOnly = recipes.WithACLProvider(recipes.ACLProviderFunc(func(path string) []zk.ACL {
	if path == "/reauth/mine" {
		return zk.AuthACL(zk.PermAll)
	}
	return zk.WorldACL(zk.PermAll)
}))

func reauthAfterCut(t *testing.T, zkc *zktest.Cluster, as, other []recipes.Option) {
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	// go-zookeeper waits 1s before it dials its one server again: the
	// session must outlast that.
	c := connect(t, []string{proxy.Addr()}, append(as, mineOnly, recipes.WithSessionTimeout(10*time.Second))...)
	o := connect(t, zkc.Servers(), other...)
	states := testutil.WatchStates(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mustCreate(t, c, "/reauth", "")
	mustCreate(t, c, "/reauth/mine", "before")
	_, err := o.Set(ctx, "/reauth/mine", []byte("not yours"), -1)
	require.ErrorIs(t, err, zk.ErrNoAuth, "another identity may not write the creator's node")

	cc, err := cache.New(c, "/reauth")
	require.NoError(t, err)
	start(t, cc)
	resyncs := cc.Resyncs()
	sid := c.SessionID()

	from := len(states.Snapshot())
	proxy.Cut()
	states.WaitFor(t, from, 20*time.Second, recipes.StateSuspended, recipes.StateReconnected)
	require.Equal(t, sid, c.SessionID(), "the same session")
	_, err = c.Set(ctx, "/reauth/mine", []byte("after"), -1)
	require.NoError(t, err, "the creator's right to its node after the reconnect")

	eventually(t, 20*time.Second, "the cache's resync on the new connection", func() bool { return cc.Resyncs() > resyncs })
	_, err = o.Create(ctx, "/reauth/later", []byte("seen"), 0)
	require.NoError(t, err)
	eventually(t, 15*time.Second, "the change after the reconnect in the cache", func() bool {
		n, ok := cc.Get("/reauth/later")
		return ok && string(n.Data) == "seen"
	})
	n, ok := cc.Get("/reauth/mine")
	assert.True(t, ok && string(n.Data) == "after", "the cache has the write after the reconnect: %+v", n)
	assert.Equal(t, sid, c.SessionID(), "still the same session")
}
