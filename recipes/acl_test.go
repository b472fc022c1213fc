package recipes_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/cleanup"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/shared"
)

// The service principal of the ACL tests and its digest ACL.
const (
	svcUser   = "svc"
	svcSecret = "s3cret-Kp7w-svc"
	svcAuth   = svcUser + ":" + svcSecret
)

// svcACL is the ACL provider of the ACL tests, per path as Curator's
// getAclForPath: every node is the service principal's alone, and nodes
// under a "public" segment are readable by anyone too.
func svcACL(path string) []zk.ACL {
	acl := zk.DigestACL(zk.PermAll, svcUser, svcSecret)
	if strings.Contains(path, "/public") {
		acl = append(acl, zk.WorldACL(zk.PermRead)...)
	}
	return acl
}

// recordingProvider is svcACL, remembering the paths it was asked for.
type recordingProvider struct {
	mu    sync.Mutex
	asked map[string]bool
}

func (p *recordingProvider) ACLFor(path string) []zk.ACL {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.asked == nil {
		p.asked = map[string]bool{}
	}
	p.asked[path] = true
	return svcACL(path)
}

func (p *recordingProvider) wasAsked(path string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked[path]
}

// aclNode is a node found by walkACLs, with its ACL.
type aclNode struct {
	path string
	acl  []zk.ACL
}

// walkACLs returns every node at and under root with its ACL, read with
// c's credentials.
func walkACLs(t *testing.T, c *recipes.Client, root string) []aclNode {
	t.Helper()
	conn := c.UnsafeConn()
	acl, _, err := conn.GetACL(root)
	if err == zk.ErrNoNode {
		return nil // an empty container, reaped meanwhile
	}
	require.NoError(t, err, "GetACL %s", root)
	out := []aclNode{{root, acl}}
	kids, _, err := conn.Children(root)
	if err == zk.ErrNoNode {
		return out
	}
	require.NoError(t, err, "Children %s", root)
	for _, k := range kids {
		p := root + "/" + k
		if root == "/" {
			p = "/" + k
		}
		if p == "/zookeeper" {
			continue
		}
		out = append(out, walkACLs(t, c, p)...)
	}
	return out
}

// Every node a recipe creates, parents, containers and the namespace node
// included, gets the ACL the Client's provider gives for its server path
// (the path before the server's sequence suffix), as Curator's
// ACLProvider.getAclForPath: each recipe runs once, holding what it holds,
// and then a walk of the whole tree finds no node with another ACL.
func TestACLEveryNodeGetsTheProvidersACL(t *testing.T) {
	zkc := zktest.Start(t)
	prov := &recordingProvider{}
	c := connect(t, zkc.Servers(), recipes.WithNamespace("acl"),
		recipes.WithAuth("digest", []byte(svcAuth)), recipes.WithACLProvider(prov))
	runEveryRecipe(t, c)

	found := walkACLs(t, c, "/")
	paths := map[string]bool{}
	for _, n := range found {
		paths[n.path] = true
		if n.path == "/" {
			continue
		}
		assert.Equal(t, svcACL(n.path), n.acl, "the ACL of %s", n.path)
		assert.True(t, n.path == "/acl" || strings.HasPrefix(n.path, "/acl/"), "%s is outside the namespace", n.path)
	}
	for _, want := range []string{
		"/acl", "/acl/locks/mutex", "/acl/rwlock", "/acl/sem/leases", "/acl/latch",
		"/acl/selector", "/acl/pnode", "/acl/ttl", "/acl/group", "/acl/services/orders/o-1", "/acl/queue",
		"/acl/queue-locks", "/acl/simple", "/acl/idq", "/acl/prio", "/acl/delay", "/acl/count",
		"/acl/public/value", "/acl/atomic", "/acl/barrier", "/acl/double/ready", "/acl/reaper-leader",
		"/acl/client/a/b", "/acl/multi",
	} {
		assert.True(t, paths[want], "%s was not made", want)
	}
	assert.True(t, prov.wasAsked("/acl"), "the provider is asked for the namespace node's server path")
	assert.True(t, prov.wasAsked("/acl/public/value"), "the provider is asked for each node's server path")
	assert.Greater(t, len(found), 40, "nodes found")
	if testing.Verbose() {
		for _, n := range found {
			t.Logf("%s %v", n.path, n.acl)
		}
	}
}

// runEveryRecipe runs every recipe once on c, under paths the test names,
// leaving what each holds in place until the test ends.
func runEveryRecipe(t *testing.T, c *recipes.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	runLocks(t, ctx, c)
	runElections(t, ctx, c)
	runNodes(t, ctx, c)
	runQueues(t, ctx, c)
	runValues(t, ctx, c)

	_, err := c.CreateWithParents(ctx, "/client/a/b", nil, 0)
	require.NoError(t, err)
	_, err = c.Multi(ctx, recipes.CreateOp("/multi", nil, 0))
	require.NoError(t, err)
	// A cache creates nothing: it reads what is there.
	tc, err := cache.NewTreeCache(c, "/locks")
	require.NoError(t, err)
	require.NoError(t, tc.Start(ctx))
	t.Cleanup(func() { _ = tc.Close(context.Background()) })
	require.NoError(t, tc.WaitReady(ctx))
}

// runLocks takes a mutex, a write lock and a read lock, a semaphore lease,
// and a lease of the semaphore's mutex, and keeps them.
func runLocks(t *testing.T, ctx context.Context, c *recipes.Client) {
	m, err := mutex.New(c, "/locks/mutex")
	require.NoError(t, err)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	rw, err := rwlock.New(c, "/rwlock")
	require.NoError(t, err)
	w, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Release(context.Background()) })
	r, err := rw.ReadLock().Acquire(ctx) // the writer's own read lock
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Release(context.Background()) })
	s, err := semaphore.New(c, "/sem", 2)
	require.NoError(t, err)
	sl, err := s.Acquire(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sl.Release(context.Background()) })
	sm, err := semaphore.NewMutex(c, "/semmutex")
	require.NoError(t, err)
	sml, err := sm.Acquire(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sml.Release(context.Background()) })
}

// runElections leads a latch, a selector and a reaper's election.
func runElections(t *testing.T, ctx context.Context, c *recipes.Client) {
	l, err := election.NewLatch(c, "/latch", "a")
	require.NoError(t, err)
	require.NoError(t, l.Start(ctx))
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	_, err = l.Await(ctx)
	require.NoError(t, err)
	leading := make(chan struct{})
	sel, err := election.NewSelector(c, "/selector", "a", func(ctx context.Context, _ *election.Term) error {
		close(leading)
		<-ctx.Done()
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, sel.Start(ctx))
	t.Cleanup(func() { _ = sel.Close(context.Background()) })
	select {
	case <-leading:
	case <-ctx.Done():
		t.Fatal("the selector never led")
	}
	rp, err := cleanup.New(c, cleanup.WithLeaderElection("/reaper-leader", "a"), cleanup.WithPaths("/locks"))
	require.NoError(t, err)
	require.NoError(t, rp.Start(ctx))
	t.Cleanup(func() { _ = rp.Close(context.Background()) })
	require.Eventually(t, func() bool {
		kids, _, err := c.Children(ctx, "/reaper-leader")
		return err == nil && len(kids) > 0
	}, 10*time.Second, 20*time.Millisecond, "the reaper's latch node")
}

// runNodes starts a persistent node, a TTL node, a group member and a
// discovery registration.
func runNodes(t *testing.T, ctx context.Context, c *recipes.Client) {
	pn, err := nodes.NewPersistentNode(c, "/pnode/n-", nodes.EphemeralSequential, []byte("x"), nodes.WithProtection())
	require.NoError(t, err)
	require.NoError(t, pn.Start(ctx))
	t.Cleanup(func() { _ = pn.Close(context.Background()) })
	require.NoError(t, pn.WaitReady(ctx))
	tn, err := nodes.NewPersistentTTLNode(c, "/ttl", time.Minute, []byte("x"))
	require.NoError(t, err)
	require.NoError(t, tn.Start(ctx))
	t.Cleanup(func() { _ = tn.Close(context.Background()) })
	require.NoError(t, tn.WaitReady(ctx))
	g, err := nodes.NewGroupMember(c, "/group", "m1", []byte("x"))
	require.NoError(t, err)
	require.NoError(t, g.Start(ctx))
	t.Cleanup(func() { _ = g.Close(context.Background()) })
	require.NoError(t, g.WaitReady(ctx))
	d, err := discovery.New(c, "/services")
	require.NoError(t, err)
	require.NoError(t, d.Start(ctx))
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "orders", ID: "o-1", Address: "10.0.0.5", Port: 8080}))
}

// runQueues puts an item on each kind of queue, and holds one item of a
// locking queue in its consumer (so its lock nodes exist).
func runQueues(t *testing.T, ctx context.Context, c *recipes.Client) {
	inHand, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	q, err := queue.New(c, "/queue", queue.WithLockPath("/queue-locks"), queue.WithConsumer(queue.ConsumerFunc(
		func(ctx context.Context, m *queue.Message) error {
			once.Do(func() { close(inHand) })
			select {
			case <-release:
			case <-ctx.Done():
			}
			return ctx.Err()
		})))
	require.NoError(t, err)
	require.NoError(t, q.Start(ctx))
	t.Cleanup(func() { close(release); _ = q.Close(context.Background()) })
	require.NoError(t, q.Put(ctx, []byte("job")))
	select {
	case <-inHand:
	case <-ctx.Done():
		t.Fatal("the consumer never got the item")
	}
	require.NoError(t, q.Put(ctx, []byte("waiting")))
	sq, err := queue.NewSimple(c, "/simple")
	require.NoError(t, err)
	require.NoError(t, sq.Offer(ctx, []byte("x")))
	iq, err := queue.NewID(c, "/idq")
	require.NoError(t, err)
	require.NoError(t, iq.Put(ctx, "id-1", []byte("x")))
	pq, err := queue.NewPriority(c, "/prio")
	require.NoError(t, err)
	require.NoError(t, pq.Put(ctx, 3, []byte("x")))
	dq, err := queue.NewDelay(c, "/delay")
	require.NoError(t, err)
	require.NoError(t, dq.Put(ctx, time.Now().Add(time.Hour), []byte("x")))
}

// runValues starts a shared count and value, increments an atomic long,
// sets a barrier and enters a double barrier.
func runValues(t *testing.T, ctx context.Context, c *recipes.Client) {
	cnt, err := shared.NewCount(c, "/count", 3)
	require.NoError(t, err)
	require.NoError(t, cnt.Start(ctx))
	t.Cleanup(func() { _ = cnt.Close(context.Background()) })
	v, err := shared.NewValue(c, "/public/value", []byte("v"))
	require.NoError(t, err)
	require.NoError(t, v.Start(ctx))
	t.Cleanup(func() { _ = v.Close(context.Background()) })
	a, err := atomicval.NewInt64(c, "/atomic")
	require.NoError(t, err)
	_, err = a.Increment(ctx)
	require.NoError(t, err)
	b, err := barrier.New(c, "/barrier")
	require.NoError(t, err)
	require.NoError(t, b.Set(ctx))
	db, err := barrier.NewDouble(c, "/double", 1)
	require.NoError(t, err)
	require.NoError(t, db.Enter(ctx))
	t.Cleanup(func() { _ = db.Leave(context.Background()) })
}

// A provider that gives no ACL for a path is refused by the server
// (InvalidACL), at once and saying so; Curator would use the provider's
// default ACL there, which ACLProvider does not have: give it in ACLFor.
func TestACLProviderGivingNoACL(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers(), recipes.WithACLProvider(recipes.ACLProviderFunc(func(p string) []zk.ACL {
		if strings.HasPrefix(p, "/none") {
			return nil
		}
		return zk.WorldACL(zk.PermAll)
	})))
	ctx := context.Background()
	_, err := c.Create(ctx, "/none", nil, 0)
	require.ErrorIs(t, err, zk.ErrInvalidACL)
	assert.Contains(t, err.Error(), "ACL provider")
	m, err := mutex.New(c, "/none/lock")
	require.NoError(t, err)
	_, err = m.Acquire(ctx)
	require.ErrorIs(t, err, zk.ErrInvalidACL)
	assert.Equal(t, 1, strings.Count(err.Error(), "ACL provider"), "%v", err)
	_, err = c.Create(ctx, "/some", nil, 0)
	require.NoError(t, err)
}
