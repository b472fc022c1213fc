package recipes_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// Credentials of the two principals of these tests.
const (
	aliceAuth = "alice:s3cr3t-Zq9x-alice"
	bobAuth   = "bob:0ther-Wv4k-bob"
)

// creatorOnly is an ACL provider that gives every node it creates, parents
// included, to the creator's authenticated identities alone (ZooKeeper's
// CREATOR_ALL_ACL; go-zookeeper's zk.AuthACL). ZooKeeper checks a delete
// against the parent's ACL and a write against the node's, so both must be
// closed to others.
var creatorOnly = recipes.WithACLProvider(recipes.ACLProviderFunc(func(string) []zk.ACL {
	return zk.AuthACL(zk.PermAll)
}))

// notAuthorized says what a foreign principal's attempt must end with: an
// error wrapping zk.ErrNoAuth, returned at once rather than at the deadline.
func notAuthorized(t *testing.T, what string, err error, start time.Time) {
	t.Helper()
	require.Error(t, err, "%s succeeded", what)
	assert.ErrorIs(t, err, zk.ErrNoAuth, "%s", what)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "%s waited for its deadline", what)
	assert.Less(t, time.Since(start), 5*time.Second, "%s took too long to fail", what)
}

// bobTamper makes a foreign principal try to delete, overwrite, re-create,
// re-ACL and revoke node, and checks that every attempt is refused and
// that the node and its data are untouched.
func bobTamper(t *testing.T, alice, bob *recipes.Client, node string) {
	t.Helper()
	before, st, err := alice.Get(context.Background(), node)
	require.NoError(t, err)
	start := time.Now()
	notAuthorized(t, "bob's delete", bob.Delete(context.Background(), node, -1), start)
	notAuthorized(t, "bob's versioned delete", bob.Delete(context.Background(), node, st.Version), start)
	_, err = bob.Set(context.Background(), node, []byte("bob was here"), -1)
	notAuthorized(t, "bob's overwrite", err, start)
	_, err = bob.UnsafeConn().SetACL(node, zk.WorldACL(zk.PermAll), -1)
	notAuthorized(t, "bob's SetACL", err, start)
	_, _, err = bob.Get(context.Background(), node)
	notAuthorized(t, "bob's read", err, start)
	_, err = bob.Create(context.Background(), node+"-copy", nil, zk.FlagEphemeral)
	notAuthorized(t, "bob's create beside it", err, start)
	notAuthorized(t, "bob's revoke", mutex.Revoke(context.Background(), bob, node), start)

	after, st2, err := alice.Get(context.Background(), node)
	require.NoError(t, err, "alice's node is gone")
	assert.Equal(t, before, after, "alice's node data changed")
	assert.Equal(t, st.Version, st2.Version, "alice's node was written")
}

// Namespaces keep two applications apart: the same recipe path in two
// namespaces is two locks, two semaphores, two elections, held at once.
// A namespace is a path prefix, not a wall: a client without one reaches
// the same lock through the full path, and so does a client with the same
// namespace spelt with a leading slash.
func TestSecurityNamespacesKeepApplicationsApart(t *testing.T) {
	zkc := zktest.Start(t)
	servers := zkc.Servers()
	ctx := context.Background()
	app1 := connect(t, servers, recipes.WithNamespace("app1"))
	app2 := connect(t, servers, recipes.WithNamespace("app2"))
	app1again := connect(t, servers, recipes.WithNamespace("/app1"))
	raw := connect(t, servers)

	m1, err := mutex.New(app1, "/locks/shared")
	require.NoError(t, err)
	m2, err := mutex.New(app2, "/locks/shared")
	require.NoError(t, err)
	l1, err := m1.Acquire(ctx)
	require.NoError(t, err)
	l2, err := m2.TryAcquire(ctx)
	require.NoError(t, err, "app2's lock is not app1's")
	assert.True(t, strings.HasPrefix(l1.Node(), "/locks/shared/"), l1.Node())
	assert.True(t, strings.HasPrefix(l2.Node(), "/locks/shared/"), l2.Node())
	full1, err := app1.FullPath(l1.Node())
	require.NoError(t, err)
	ok, _, err := raw.Exists(ctx, full1)
	require.NoError(t, err)
	assert.True(t, ok && strings.HasPrefix(full1, "/app1/locks/shared/"), full1)
	full2, err := app2.FullPath(l2.Node())
	require.NoError(t, err)
	ok, _, err = raw.Exists(ctx, full2)
	require.NoError(t, err)
	assert.True(t, ok && strings.HasPrefix(full2, "/app2/locks/shared/"), full2)
	for _, c := range []struct {
		c    *recipes.Client
		path string
	}{{app1again, "/locks/shared"}, {raw, "/app1/locks/shared"}} {
		m, err := mutex.New(c.c, c.path)
		require.NoError(t, err)
		_, err = m.TryAcquire(ctx)
		assert.ErrorIs(t, err, recipes.ErrNotAcquired, "%s%s is app1's lock", c.c.Namespace(), c.path)
	}

	s1, err := semaphore.New(app1, "/sem/shared", 1)
	require.NoError(t, err)
	s2, err := semaphore.New(app2, "/sem/shared", 1)
	require.NoError(t, err)
	sl1, err := s1.Acquire(ctx)
	require.NoError(t, err)
	sl2, err := s2.TryAcquire(ctx)
	require.NoError(t, err, "app2's semaphore is not app1's")
	s1again, err := semaphore.New(app1again, "/sem/shared", 1)
	require.NoError(t, err)
	_, err = s1again.TryAcquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired)

	var terms []*election.Term
	for _, c := range []*recipes.Client{app1, app2} {
		l, err := election.NewLatch(c, "/election/shared", c.Namespace())
		require.NoError(t, err)
		defer l.Close(ctx)
		require.NoError(t, l.Start(ctx))
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		term, err := l.Await(actx)
		cancel()
		require.NoError(t, err, "the latch of %s leads", c.Namespace())
		terms = append(terms, term)
	}
	for _, term := range terms {
		select {
		case <-term.Done():
			t.Fatalf("the term of %s ended", term.ID())
		default:
		}
	}

	require.NoError(t, l1.Release(ctx))
	require.NoError(t, l2.Release(ctx))
	require.NoError(t, semaphore.ReleaseAll(ctx, []*semaphore.Lease{sl1, sl2}))
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Auth data never reaches the logs, at any level: a client logging at
// Debug (go-zookeeper's own lines included, which the client forwards at
// debug level) connects with digest credentials, locks and unlocks under a
// creator-only ACL, loses its connection, reconnects (go-zookeeper sends
// the credentials again, or the second lock would be refused), locks again
// and closes; nor do the errors of a failed authentication carry them.
func TestSecurityAuthNeverLogged(t *testing.T) {
	zkc := zktest.Start(t)
	servers := zkc.Servers()
	ctx := context.Background()
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	password := aliceAuth[strings.IndexByte(aliceAuth, ':')+1:]
	secrets := []string{
		aliceAuth, password,
		base64.StdEncoding.EncodeToString([]byte(aliceAuth)),
		base64.StdEncoding.EncodeToString([]byte(password)),
		hex.EncodeToString([]byte(password)),
	}
	noSecret := func(what, s string) {
		t.Helper()
		for _, sec := range secrets {
			if strings.Contains(s, sec) {
				t.Errorf("%s contains the secret %q:\n%s", what, sec, s)
			}
		}
	}

	proxy := zktest.NewProxy(t, servers[0])
	c, err := testutil.Dial(context.Background(), []string{proxy.Addr()}, recipes.WithAuth("digest", []byte(aliceAuth)),
		creatorOnly, recipes.WithLogger(logger), recipes.WithSessionTimeout(4*time.Second))
	require.NoError(t, err)
	defer c.Close(context.Background())
	states, stop := c.Subscribe()
	defer stop()

	m, err := mutex.New(c, "/secure/logged")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))

	proxy.Cut()
	deadline := time.After(20 * time.Second)
	for reconnected := false; !reconnected; {
		select {
		case s := <-states:
			reconnected = s == recipes.StateReconnected
		case <-deadline:
			t.Fatal("no RECONNECTED within 20s of the cut")
		}
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lease, err = m.Acquire(lctx)
	require.NoError(t, err, "locking under the creator-only parent after the reconnect")
	require.NoError(t, lease.Release(ctx))
	require.NoError(t, c.Close(context.Background()))
	stop()

	// Errors that involve the credentials do not carry them either.
	err = c.AddAuth(context.Background(), "digest", []byte(aliceAuth))
	require.ErrorIs(t, err, recipes.ErrClosed)
	noSecret("AddAuth's error on a closed client", err.Error())
	_, err = testutil.Dial(context.Background(), servers, recipes.WithAuth("no-such-scheme", []byte(aliceAuth)),
		recipes.WithLogger(logger), recipes.WithConnectTimeout(10*time.Second))
	require.Error(t, err, "an unknown auth scheme is refused")
	t.Logf("unknown scheme: %v", err)
	noSecret("Connect's error for an unknown scheme", err.Error())

	out := logs.String()
	noSecret("the debug log", out)
	assert.Contains(t, out, "go-zookeeper: ", "go-zookeeper's lines are forwarded at debug level")
	assert.Contains(t, out, "credentials after reconnect", "go-zookeeper logged the credentials being sent again")
	assert.Contains(t, out, "state=RECONNECTED")
	if t.Failed() || testing.Verbose() {
		t.Logf("captured log:\n%s", out)
	}
}
