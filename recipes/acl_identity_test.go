package recipes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// SASL DIGEST-MD5 users of the identity table's SASL server.
const (
	saslAlicePassword = "s4sl-Tq3v-alice"
	saslBobPassword   = "s4sl-Hm8c-bob"
)

// aclIdentity is one kind of identity TestACLCreatorOnly gives its
// principals: the server that knows it, the options that make alice
// (identity A) and bob (another identity of the same kind), whether the
// server also serves a client without any identity of the kind (nobody),
// and the id the server writes in the creator-only ACL of alice's nodes.
type aclIdentity struct {
	kind      string
	server    []zktest.Option
	alice     func(t *testing.T, zkc *zktest.Cluster) []recipes.Option
	bob       func(t *testing.T, zkc *zktest.Cluster) []recipes.Option
	anonymous bool
	aliceID   string // scheme:id
}

// certOf is the option of a client presenting a certificate for CN=cn.
func certOf(cn string) func(*testing.T, *zktest.Cluster) []recipes.Option {
	return func(t *testing.T, zkc *zktest.Cluster) []recipes.Option {
		cfg, err := zkc.ClientTLSAs(cn)
		require.NoError(t, err)
		return []recipes.Option{recipes.WithTLS(cfg)}
	}
}

// options returns a fixed list of options.
func options(opts ...recipes.Option) func(*testing.T, *zktest.Cluster) []recipes.Option {
	return func(*testing.T, *zktest.Cluster) []recipes.Option { return opts }
}

// aclIdentities is the identity dimension of TestACLCreatorOnly.
func aclIdentities() []aclIdentity {
	alicePW := aliceAuth[strings.IndexByte(aliceAuth, ':')+1:]
	digest := zk.DigestACL(zk.PermAll, "alice", alicePW)[0]
	return []aclIdentity{{
		// The server's own kind (plain, or TLS under ZK_TEST_TLS, where
		// every client has a certificate of its own too).
		kind:      "digest",
		alice:     options(recipes.WithAuth("digest", []byte(aliceAuth))),
		bob:       options(recipes.WithAuth("digest", []byte(bobAuth))),
		anonymous: true,
		aliceID:   "digest:" + digest.ID,
	}, {
		// A TLS-only server with ssl.clientAuth=need: a client without a
		// certificate is refused at the handshake, so there is no nobody.
		kind:    "x509",
		server:  []zktest.Option{zktest.WithTLS()},
		alice:   certOf("alice"),
		bob:     certOf("bob"),
		aliceID: "x509:CN=alice",
	}, {
		// Plain even under ZK_TEST_TLS: the identity is SASL's alone.
		kind: "sasl",
		server: []zktest.Option{zktest.WithoutTLS(),
			zktest.WithSASLDigest(map[string]string{"alice": saslAlicePassword, "bob": saslBobPassword})},
		alice:     options(recipes.WithSASLDigest("alice", saslAlicePassword)),
		bob:       options(recipes.WithSASLDigest("bob", saslBobPassword)),
		anonymous: true,
		aliceID:   "sasl:alice",
	}}
}

// principal is a client of TestACLCreatorOnly other than alice.
type principal struct {
	name string
	c    *recipes.Client
}

// With creator-only ACLs (zk.AuthACL through WithACLProvider), whatever
// alice's identity (a digest, an x509 client certificate, a SASL
// DIGEST-MD5 user), another principal (bob, of the same kind; nobody,
// without credentials, where the server serves one) can neither delete
// nor overwrite the nodes of a held lock, lease or leadership, nor take
// them: its own attempt fails at once with an error wrapping
// zk.ErrNoAuth (it cannot create its node under a parent it has no
// CREATE permission on), so mutual exclusion holds, nobody waits for
// ever, and alice keeps working.
func TestACLCreatorOnly(t *testing.T) {
	for _, id := range aclIdentities() {
		t.Run(id.kind, func(t *testing.T) {
			zkc := zktest.Start(t, id.server...)
			alice := connect(t, zkc.Servers(), append(id.alice(t, zkc), creatorOnly)...)
			others := []principal{{"bob", connect(t, zkc.Servers(), append(id.bob(t, zkc), creatorOnly)...)}}
			if id.anonymous {
				others = append(others, principal{"nobody", connect(t, zkc.Servers())})
			}
			t.Run("mutex", func(t *testing.T) { creatorOnlyMutex(t, id, alice, others) })
			t.Run("semaphore", func(t *testing.T) { creatorOnlySemaphore(t, alice, others) })
			t.Run("latch", func(t *testing.T) { creatorOnlyLatch(t, alice, others) })
		})
	}
}

// hasACLID checks that node's ACL grants id (scheme:id) every permission.
func hasACLID(t *testing.T, c *recipes.Client, node, id string) {
	t.Helper()
	acl, _, err := c.UnsafeConn().GetACL(node)
	require.NoError(t, err)
	var ids []string
	for _, a := range acl {
		ids = append(ids, a.Scheme+":"+a.ID)
		if a.Scheme+":"+a.ID == id && a.Perms == zk.PermAll {
			return
		}
	}
	t.Fatalf("the ACL of %s is %q, want %q among them", node, ids, id)
}

func creatorOnlyMutex(t *testing.T, id aclIdentity, alice *recipes.Client, others []principal) {
	ctx := context.Background()
	am, err := mutex.New(alice, "/secure/mutex")
	require.NoError(t, err)
	lease, err := am.Acquire(ctx)
	require.NoError(t, err)
	hasACLID(t, alice, lease.Node(), id.aliceID)
	hasACLID(t, alice, "/secure/mutex", id.aliceID)
	for _, o := range others {
		bobTamper(t, alice, o.c, lease.Node())
		m, err := mutex.New(o.c, "/secure/mutex")
		require.NoError(t, err)
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		start := time.Now()
		l, err := m.Acquire(lctx)
		cancel()
		if err == nil {
			_ = l.Release(ctx)
		}
		notAuthorized(t, o.name+"'s Lock", err, start)
		if err != nil {
			assert.Contains(t, err.Error(), "check WithAuth", "the error says what to do")
		}
		start = time.Now()
		_, err = m.TryAcquire(ctx)
		notAuthorized(t, o.name+"'s TryLock", err, start)
		start = time.Now()
		_, err = m.Participants(ctx)
		notAuthorized(t, o.name+"'s Participants", err, start)
	}
	assert.True(t, am.IsHeld(ctx))
	select {
	case <-lease.Done():
		t.Fatal("alice's hold ended")
	default:
	}
	ps, err := am.Participants(ctx)
	require.NoError(t, err)
	assert.Len(t, ps, 1, "a foreign attempt left a node behind")
	require.NoError(t, lease.Release(ctx))
	again, err := am.TryAcquire(ctx)
	require.NoError(t, err, "alice locks again")
	require.NoError(t, again.Release(ctx))
}

func creatorOnlySemaphore(t *testing.T, alice *recipes.Client, others []principal) {
	ctx := context.Background()
	as, err := semaphore.New(alice, "/secure/sem", 1)
	require.NoError(t, err)
	lease, err := as.Acquire(ctx)
	require.NoError(t, err)
	for _, o := range others {
		bobTamper(t, alice, o.c, lease.Node())
		// o believes the maximum is 2: were it able to create a lease,
		// two would be held.
		bs, err := semaphore.New(o.c, "/secure/sem", 2)
		require.NoError(t, err)
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		start := time.Now()
		got, err := bs.Acquire(actx)
		cancel()
		if err == nil {
			_ = got.Release(ctx)
		}
		notAuthorized(t, o.name+"'s Acquire", err, start)
		start = time.Now()
		_, err = bs.TryAcquire(ctx)
		notAuthorized(t, o.name+"'s TryAcquire", err, start)
	}
	ps, err := as.Participants(ctx)
	require.NoError(t, err)
	assert.Len(t, ps, 1, "one lease, alice's")
	data, err := lease.Data(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, "bob was here", string(data))
	require.NoError(t, lease.Release(ctx))
	again, err := as.TryAcquire(ctx)
	require.NoError(t, err, "alice takes a lease again")
	require.NoError(t, again.Release(ctx))
}

func creatorOnlyLatch(t *testing.T, alice *recipes.Client, others []principal) {
	ctx := context.Background()
	al, err := election.NewLatch(alice, "/secure/latch", "alice")
	require.NoError(t, err)
	defer al.Close(ctx)
	require.NoError(t, al.Start(ctx))
	term, err := al.Await(ctx)
	require.NoError(t, err)
	for _, o := range others {
		bobTamper(t, alice, o.c, al.Node())
		foreignLatch(t, o)
	}
	assert.True(t, al.HasLeadership(), "alice leads")
	select {
	case <-term.Done():
		t.Fatal("alice's term ended")
	default:
	}
	ps, err := al.Participants(ctx)
	require.NoError(t, err)
	assert.Len(t, ps, 1, "one participant, alice")
}

// foreignLatch checks that o's latch on alice's election cannot start,
// and that waiting for its leadership says so rather than waiting.
func foreignLatch(t *testing.T, o principal) {
	ctx := context.Background()
	bl, err := election.NewLatch(o.c, "/secure/latch", o.name)
	require.NoError(t, err)
	defer bl.Close(ctx)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	err = bl.Start(sctx)
	if err == nil {
		// Start returned: o's node exists, which it must not.
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, aerr := bl.Await(actx)
		cancel()
		t.Fatalf("%s's latch started (node %q); Await: %v", o.name, bl.Node(), aerr)
	}
	notAuthorized(t, o.name+"'s latch Start", err, start)
	actx, acancel := context.WithTimeout(ctx, 3*time.Second)
	start = time.Now()
	_, err = bl.Await(actx)
	acancel()
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "Await on a latch whose Start failed waits for ever")
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.False(t, bl.HasLeadership())
}
