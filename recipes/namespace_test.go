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

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// One path rule, both ways: every path a user passes, to a recipe or to a
// Client method (fenced ops included), is inside the namespace; paths
// returned and named in errors are without it.
func TestNamespaceAppliesToEveryClientMethod(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers(), recipes.WithNamespace("ns"))
	admin := connect(t, zkc.Servers())
	ctx := context.Background()
	at := func(p string) bool {
		ok, _, err := admin.Exists(ctx, p)
		require.NoError(t, err)
		return ok
	}

	p, err := c.Create(ctx, "/a", []byte("1"), 0)
	require.NoError(t, err, "the namespace node is created by the first create")
	assert.Equal(t, "/a", p, "the path returned is without the namespace")
	assert.True(t, at("/ns/a"))
	assert.False(t, at("/a"), "nothing at the root")
	seq, err := c.Create(ctx, "/s-", nil, zk.FlagSequence)
	require.NoError(t, err)
	assert.Regexp(t, `^/s-\d{10}$`, seq)

	data, _, err := c.Get(ctx, "/a")
	require.NoError(t, err)
	assert.Equal(t, "1", string(data))
	ok, _, err := c.Exists(ctx, "/a")
	require.NoError(t, err)
	assert.True(t, ok)
	kids, _, err := c.Children(ctx, "/")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", seq[1:]}, kids, "the namespace's root")
	_, err = c.Set(ctx, "/a", []byte("2"), -1)
	require.NoError(t, err)
	data, _, err = admin.Get(ctx, "/ns/a")
	require.NoError(t, err)
	assert.Equal(t, "2", string(data))
	require.NoError(t, c.Sync(ctx, "/a"))

	res, err := c.Multi(ctx, recipes.CreateOp("/b", nil, 0),
		recipes.CheckOp("/a", -1))
	require.NoError(t, err)
	assert.Equal(t, "/b", res[0].String)
	assert.True(t, at("/ns/b"))
	_, err = c.Multi(ctx, recipes.CheckOp("/a", -1), recipes.DeleteOp("/missing", -1))
	assert.ErrorIs(t, err, zk.ErrNoNode)
	assert.ErrorContains(t, err, "zkrecipes: multi: delete /missing:", "the failing op and its path")
	_, err = c.Multi(ctx, recipes.DeleteOp("relative", -1))
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)
	_, err = c.Multi(ctx, recipes.CheckOp("/a", -1), recipes.Op{})
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	assert.ErrorContains(t, err, "multi op 1 is the zero Op")

	require.NoError(t, c.Delete(ctx, "/b", -1))
	assert.False(t, at("/ns/b"))
	_, _, err = c.Get(ctx, "/missing")
	assert.ErrorIs(t, err, zk.ErrNoNode)
	assert.EqualError(t, err, "zkrecipes: get /missing: zk: node does not exist")
	_, err = c.Create(ctx, "relative", nil, 0)
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)

	// Fenced ops are on recipe paths too, and their errors name the path.
	m, err := mutex.New(c, "/lock")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(lease.Node(), "/lock/"), "Node is inside the namespace: %s", lease.Node())
	_, _, err = c.Get(ctx, lease.Node())
	require.NoError(t, err, "a returned path passed back")
	_, err = lease.Fenced(ctx, recipes.SetOp("/a", []byte("3"), -1))
	require.NoError(t, err)
	data, _, err = admin.Get(ctx, "/ns/a")
	require.NoError(t, err)
	assert.Equal(t, "3", string(data))
	_, err = lease.Fenced(ctx, recipes.SetOp("/nowhere", nil, -1))
	assert.ErrorIs(t, err, zk.ErrNoNode)
	assert.NotErrorIs(t, err, recipes.ErrFenced)
	assert.ErrorContains(t, err, "zkrecipes: mutex /lock: fenced multi: set /nowhere:")
	_, err = lease.Fenced(ctx, recipes.SetOp("relative", nil, -1))
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)
	_, err = lease.Fenced(ctx, recipes.Op{})
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	assert.ErrorContains(t, err, "fenced op 0 is the zero Op")
	require.NoError(t, lease.Release(ctx))
	_, err = lease.Fenced(ctx, recipes.SetOp("/a", nil, -1))
	assert.ErrorIs(t, err, recipes.ErrFenced)
}

// A create in a transaction, plain or fenced, gets the ACL the client's
// provider gives for its server path, as Client.Create does.
func TestMultiCreatesUseTheACLProvider(t *testing.T) {
	zkc := zktest.Start(t)
	readOnly := zk.WorldACL(zk.PermRead)
	var asked []string
	var mu sync.Mutex
	c := connect(t, zkc.Servers(), recipes.WithNamespace("ns"), recipes.WithACLProvider(recipes.ACLProviderFunc(func(p string) []zk.ACL {
		mu.Lock()
		asked = append(asked, p)
		mu.Unlock()
		if strings.HasPrefix(p, "/ns/ro") {
			return readOnly
		}
		return zk.WorldACL(zk.PermAll)
	})))
	admin := connect(t, zkc.Servers())
	ctx := context.Background()
	_, err := c.Multi(ctx, recipes.CreateOp("/ro-multi", []byte("m"), 0))
	require.NoError(t, err)
	m, err := mutex.New(c, "/lock")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	_, err = lease.Fenced(ctx, recipes.CreateOp("/ro-fenced", []byte("f"), 0))
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))

	for _, p := range []string{"/ns/ro-multi", "/ns/ro-fenced"} {
		acl, _, err := admin.UnsafeConn().GetACL(p)
		require.NoError(t, err, p)
		assert.Equal(t, readOnly, acl, p)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, asked, "/ns/ro-multi", "the provider is asked for the server path")
	assert.Contains(t, asked, "/ns/ro-fenced")
}

// The round trip: with a namespace set, every path any recipe returns (a
// hold's node, a participant's, a latch's) can be passed back to every
// Client method, to CheckOp and to mutex.Revoke; the namespace node is
// made by the first call that needs it, as a container.
func TestPathsRoundTrip(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers(), recipes.WithNamespace("rt"))
	admin := connect(t, zkc.Servers())
	ctx := context.Background()

	ok, _, err := admin.Exists(ctx, "/rt")
	require.NoError(t, err)
	require.False(t, ok, "no namespace node yet")
	_, err = c.CreateWithParents(ctx, "/deep/a/b", []byte("x"), 0)
	require.NoError(t, err, "the namespace node and the parents are made")
	ok, _, err = admin.Exists(ctx, "/rt/deep/a/b")
	require.NoError(t, err)
	assert.True(t, ok)
	_, err = c.Create(ctx, "/nope/x", nil, 0)
	assert.ErrorIs(t, err, zk.ErrNoNode, "Create makes no parent but the namespace")

	revoked := make(chan *mutex.Lease, 1)
	m, err := mutex.New(c, "/locks/report", mutex.WithRevocationListener(func(l *mutex.Lease) { revoked <- l }))
	require.NoError(t, err)
	ml, err := m.Acquire(ctx)
	require.NoError(t, err)
	rw, err := rwlock.New(c, "/rw")
	require.NoError(t, err)
	rl, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	sem, err := semaphore.New(c, "/sem", 2)
	require.NoError(t, err)
	sl, err := sem.Acquire(ctx)
	require.NoError(t, err)
	latch, err := election.NewLatch(c, "/leader", "me")
	require.NoError(t, err)
	require.NoError(t, latch.Start(ctx))
	defer latch.Close(ctx)
	term, err := latch.Await(ctx)
	require.NoError(t, err)

	paths := map[string]string{
		"mutex lease": ml.Node(), "rwlock lease": rl.Node(), "semaphore lease": sl.Node(),
		"latch node": latch.Node(), "term": term.Node(),
	}
	for what, ps := range map[string]func() ([]recipes.Participant, error){
		"mutex":     func() ([]recipes.Participant, error) { return m.Participants(ctx) },
		"rwlock":    func() ([]recipes.Participant, error) { return rw.Participants(ctx) },
		"semaphore": func() ([]recipes.Participant, error) { return sem.Participants(ctx) },
		"latch":     func() ([]recipes.Participant, error) { return latch.Participants(ctx) },
		"election":  func() ([]recipes.Participant, error) { return election.Participants(ctx, c, "/leader") },
	} {
		got, err := ps()
		require.NoError(t, err, what)
		require.NotEmpty(t, got, what)
		assert.True(t, got[0].Holds, what)
		paths[what+" participant"] = got[0].Node
	}
	holder, err := m.Holder(ctx)
	require.NoError(t, err)
	paths["mutex holder"] = holder.Node
	leader, err := election.CurrentLeader(ctx, c, "/leader")
	require.NoError(t, err)
	paths["current leader"] = leader.Node

	for what, p := range paths {
		assert.False(t, strings.HasPrefix(p, "/rt/"), "%s: %s", what, p)
		_, _, err := c.Get(ctx, p)
		assert.NoError(t, err, "Get(%s) of the %s", p, what)
		ok, _, err := c.Exists(ctx, p)
		assert.True(t, ok && err == nil, "Exists(%s) of the %s: %v", p, what, err)
		_, _, err = c.Children(ctx, p)
		assert.NoError(t, err, "Children(%s) of the %s", p, what)
		assert.NoError(t, c.Sync(ctx, p), "Sync(%s) of the %s", p, what)
		_, err = c.Multi(ctx, recipes.CheckOp(p, -1))
		assert.NoError(t, err, "CheckOp(%s) of the %s", p, what)
		_, _, _, err = c.GetW(ctx, p)
		assert.NoError(t, err, "GetW(%s) of the %s", p, what)
		_, err = ml.Fenced(ctx, recipes.CheckOp(p, -1))
		assert.NoError(t, err, "fenced CheckOp(%s) of the %s", p, what)
	}

	// A watch's event names the node inside the namespace too.
	_, _, ch, err := c.GetW(ctx, "/deep/a/b")
	require.NoError(t, err)
	_, err = c.Set(ctx, "/deep/a/b", []byte("y"), -1)
	require.NoError(t, err)
	ev := <-ch
	assert.Equal(t, zk.EventNodeDataChanged, ev.Type)
	assert.Equal(t, "/deep/a/b", ev.Path)

	require.NoError(t, mutex.Revoke(ctx, c, ml.Node()), "Revoke takes the node as Node returns it")
	select {
	case l := <-revoked:
		assert.Same(t, ml, l)
	case <-time.After(10 * time.Second):
		t.Fatal("the revocation listener was not called")
	}
	require.NoError(t, ml.Release(ctx))
	require.NoError(t, rl.Release(ctx))
	require.NoError(t, sl.Release(ctx))
}
