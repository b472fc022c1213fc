package engine_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// own starts an owned node, closed at the end of the test.
func own(t *testing.T, c *recipes.Client, spec engine.OwnedSpec) *engine.OwnedNode {
	t.Helper()
	o, err := (*engine.Client)(c).Own(spec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = o.Close(context.Background()) })
	return o
}

func awaitNode(t *testing.T, o *engine.OwnedNode) engine.Owned {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	n, err := o.Await(ctx)
	require.NoError(t, err)
	return n
}

// dataOf reads path through admin ("" and false when it does not exist).
func dataOf(t *testing.T, admin *recipes.Client, path string) (string, *zk.Stat, bool) {
	t.Helper()
	data, st, err := admin.Get(context.Background(), path)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil, false
	}
	require.NoError(t, err)
	return string(data), st, true
}

// An owned node is made again, with the latest data, each time someone
// deletes it (with its parent too); listeners hear the current node
// first, then each node made; Close deletes it.
func TestOwnedNodeRecreatedWithLatestData(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	admin := connect(t, zkc.Servers())
	ctx := context.Background()

	o := own(t, c, engine.OwnedSpec{Path: "/owned/a/node", Mode: zk.FlagEphemeral, Data: []byte("v1")})
	first := awaitNode(t, o)
	assert.Equal(t, engine.Owned{Path: "/owned/a/node", Session: c.SessionID(), Gen: 1}, first)
	assert.False(t, first.Recreated())
	got, st, ok := dataOf(t, admin, first.Path)
	require.True(t, ok)
	assert.Equal(t, "v1", got)
	assert.Equal(t, c.SessionID(), st.EphemeralOwner)

	heard := make(chan engine.Owned, 10)
	remove := o.Listen(func(n engine.Owned) { heard <- n })
	defer remove()
	assert.Equal(t, first, receive(t, heard), "the current node first")

	require.NoError(t, o.SetData(ctx, []byte("v2")))
	got, _, _ = dataOf(t, admin, first.Path)
	assert.Equal(t, "v2", got)

	require.NoError(t, admin.Delete(ctx, first.Path, -1))
	second := receive(t, heard)
	assert.Equal(t, uint64(2), second.Gen)
	assert.True(t, second.Recreated())
	eventually(t, 10*time.Second, "made again with v2", func() bool {
		got, _, ok := dataOf(t, admin, first.Path)
		return ok && got == "v2"
	})

	// The parent deleted too: made again with its parent.
	_, err := admin.Multi(ctx, recipes.DeleteOp(first.Path, -1), recipes.DeleteOp("/owned/a", -1)) // at once: the node is made again at once
	require.NoError(t, err)
	third := receive(t, heard)
	assert.Equal(t, uint64(3), third.Gen)
	v, err := o.Verify(ctx)
	require.NoError(t, err)
	assert.Equal(t, third, v)

	require.NoError(t, o.Close(ctx))
	_, _, ok = dataOf(t, admin, first.Path)
	assert.False(t, ok, "Close deletes the node")
	_, err = o.Await(ctx)
	assert.ErrorIs(t, err, recipes.ErrClosed)
	assert.ErrorIs(t, o.SetData(ctx, []byte("x")), recipes.ErrClosed)
	assert.NoError(t, o.Close(ctx), "Close twice")
}

func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(15 * time.Second):
		t.Fatal("nothing heard within 15s")
		var zero T
		return zero
	}
}

// A protected sequential owned node is made again as a new sequential
// node, with a new path, which the listeners hear.
func TestOwnedSequentialNodeGetsANewPath(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	admin := connect(t, zkc.Servers())
	ctx := context.Background()

	o := own(t, c, engine.OwnedSpec{Path: "/owned/seq/member-", Mode: zk.FlagEphemeral | zk.FlagSequence, Protected: true, Data: []byte("m")})
	heard := make(chan engine.Owned, 10)
	defer o.Listen(func(n engine.Owned) { heard <- n })()
	first := receive(t, heard)
	assert.True(t, strings.HasPrefix(first.Path, "/owned/seq/"+zkpath.ProtectedPrefix), first.Path)
	assert.Regexp(t, `-member-\d{10}$`, first.Path)

	require.NoError(t, admin.Delete(ctx, first.Path, -1))
	second := receive(t, heard)
	assert.NotEqual(t, first.Path, second.Path, "a new sequential node")
	assert.Equal(t, uint64(2), second.Gen)
	kids, _, err := admin.Children(ctx, "/owned/seq")
	require.NoError(t, err)
	assert.Equal(t, []string{second.Path[len("/owned/seq/"):]}, kids)
	got, _, _ := dataOf(t, admin, second.Path)
	assert.Equal(t, "m", got)
}

// Data set while the client cannot reach the server, before the first
// create has succeeded, is what the node is made with.
func TestOwnedNodeDataSetBeforeTheFirstCreate(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(10*time.Second))
	admin := connect(t, zkc.Servers())
	ctx := context.Background()

	proxy.Blackhole()
	o := own(t, c, engine.OwnedSpec{Path: "/owned/early", Mode: zk.FlagEphemeral, Data: []byte("first")})
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := o.SetData(sctx, []byte("latest"))
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded, "no node yet: SetData waits within its ctx")
	assert.Equal(t, "latest", string(o.Data()), "recorded all the same")
	_, _, ok := dataOf(t, admin, "/owned/early")
	assert.False(t, ok)

	proxy.Restore()
	n := awaitNode(t, o)
	eventually(t, 10*time.Second, "the node holds the latest data", func() bool {
		got, _, ok := dataOf(t, admin, n.Path)
		return ok && got == "latest"
	})
}

// After a session expiry the owned node is made again in the new session,
// with the data set while the session was gone; Verify's owner check
// names the new session.
func TestOwnedNodeAfterSessionExpiry(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second))
	admin := connect(t, zkc.Servers())
	ctx := context.Background()

	o := own(t, c, engine.OwnedSpec{Path: "/owned/expiry/node", Mode: zk.FlagEphemeral, Data: []byte("v1")})
	first := awaitNode(t, o)
	oldSession := first.Session

	proxy.Blackhole()
	eventually(t, 20*time.Second, "the server expires the session", func() bool {
		_, _, ok := dataOf(t, admin, first.Path)
		return !ok
	})
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_ = o.SetData(sctx, []byte("v2")) // while the session is gone
	cancel()
	proxy.Restore()

	vctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	n, err := o.Verify(vctx)
	require.NoError(t, err)
	assert.NotEqual(t, oldSession, n.Session, "a new session")
	assert.Equal(t, c.SessionID(), n.Session)
	assert.Greater(t, n.Gen, first.Gen)
	eventually(t, 10*time.Second, "made again with v2, owned by the new session", func() bool {
		got, st, ok := dataOf(t, admin, n.Path)
		return ok && got == "v2" && st.EphemeralOwner == c.SessionID()
	})
}

// The owner check: a node under our protected name that another session
// made is not ours (Curator's CURATOR-696): a new node is made, and the
// other's is left alone. A fixed path another session holds is waited
// for, then taken over.
func TestOwnedNodeOwnerCheck(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	other := connect(t, zkc.Servers())
	admin := connect(t, zkc.Servers())
	ctx := context.Background()

	t.Run("protected", func(t *testing.T) {
		o := own(t, c, engine.OwnedSpec{Path: "/owned/owner/latch-", Mode: zk.FlagEphemeral | zk.FlagSequence, Protected: true})
		first := awaitNode(t, o)
		// Delete ours and make the same name in another session, in one
		// transaction, so that the owned node never sees it missing.
		_, err := other.Multi(ctx, recipes.DeleteOp(first.Path, -1), recipes.CreateOp(first.Path, nil, zk.FlagEphemeral))
		require.NoError(t, err)
		vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		n, err := o.Verify(vctx)
		require.NoError(t, err)
		assert.NotEqual(t, first.Path, n.Path, "not ours: a new node")
		_, st, ok := dataOf(t, admin, n.Path)
		require.True(t, ok)
		assert.Equal(t, c.SessionID(), st.EphemeralOwner)
		_, st, ok = dataOf(t, admin, first.Path)
		require.True(t, ok, "the other session's node is left alone")
		assert.Equal(t, other.SessionID(), st.EphemeralOwner)
	})

	t.Run("fixed path", func(t *testing.T) {
		_, err := other.Create(ctx, "/owned-fixed", nil, 0)
		require.NoError(t, err)
		_, err = other.Create(ctx, "/owned-fixed/node", []byte("theirs"), zk.FlagEphemeral)
		require.NoError(t, err)
		o := own(t, c, engine.OwnedSpec{Path: "/owned-fixed/node", Mode: zk.FlagEphemeral, Data: []byte("ours")})
		sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err = o.Verify(sctx)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded, "another session's node is not ours")
		got, _, _ := dataOf(t, admin, "/owned-fixed/node")
		assert.Equal(t, "theirs", got, "and is left alone")

		require.NoError(t, other.Delete(ctx, "/owned-fixed/node", -1))
		vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		n, err := o.Verify(vctx)
		require.NoError(t, err)
		assert.Equal(t, "/owned-fixed/node", n.Path)
		got, st, ok := dataOf(t, admin, n.Path)
		require.True(t, ok)
		assert.Equal(t, "ours", got)
		assert.Equal(t, c.SessionID(), st.EphemeralOwner)
	})
}

// A persistent owned node is made again when deleted, and deleted by
// Close; bad specs are refused.
func TestOwnedPersistentNodeAndBadSpecs(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	admin := connect(t, zkc.Servers())
	ctx := context.Background()

	o := own(t, c, engine.OwnedSpec{Path: "/owned/persistent", Data: []byte("p")})
	first := awaitNode(t, o)
	assert.Zero(t, first.Session)
	_, st, ok := dataOf(t, admin, first.Path)
	require.True(t, ok)
	assert.Zero(t, st.EphemeralOwner)
	require.NoError(t, admin.Delete(ctx, first.Path, -1))
	eventually(t, 10*time.Second, "made again", func() bool { return o.Node().Gen == 2 })
	require.NoError(t, o.Close(ctx))
	_, _, ok = dataOf(t, admin, first.Path)
	assert.False(t, ok, "Close deletes it")

	// Protected and persistent sequential: made again at a new path; the
	// node outlives a session, and Close deletes it.
	ps := own(t, c, engine.OwnedSpec{Path: "/owned/pseq/item-", Mode: zk.FlagSequence, Protected: true, Data: []byte("q")})
	n := awaitNode(t, ps)
	assert.Zero(t, n.Session)
	assert.Regexp(t, `^/owned/pseq/_c_[0-9a-f-]{36}-item-\d{10}$`, n.Path)
	require.NoError(t, admin.Delete(ctx, n.Path, -1))
	eventually(t, 10*time.Second, "made again", func() bool { return ps.Node().Gen == 2 })
	n2 := ps.Node()
	assert.NotEqual(t, n.Path, n2.Path)
	got, _, ok := dataOf(t, admin, n2.Path)
	assert.True(t, ok)
	assert.Equal(t, "q", got)
	require.NoError(t, ps.Close(ctx))
	kids, _, err := admin.Children(ctx, "/owned/pseq")
	if !errors.Is(err, zk.ErrNoNode) {
		require.NoError(t, err)
		assert.Empty(t, kids, "Close deletes it")
	}

	for name, spec := range map[string]engine.OwnedSpec{
		"relative path":      {Path: "owned"},
		"root":               {Path: "/"},
		"unknown mode":       {Path: "/owned/x", Mode: 7},
		"TTL mode, no TTL":   {Path: "/owned/x", Mode: zk.FlagTTL},
		"TTL, not TTL mode":  {Path: "/owned/x", Mode: zk.FlagContainer, TTL: time.Second},
		"TTL under a ms":     {Path: "/owned/x", Mode: zk.FlagTTL, TTL: time.Microsecond},
		"TTL over the limit": {Path: "/owned/x", Mode: zk.FlagTTL, TTL: engine.MaxTTL + time.Millisecond},
	} {
		_, err := (*engine.Client)(c).Own(spec)
		assert.True(t, errors.Is(err, recipes.ErrInvalidArgument) || errors.Is(err, recipes.ErrInvalidPath), "%s: %v", name, err)
	}
}

// The compare-and-set loop: concurrent writers on several clients each
// add to one counter, the node created by whichever comes first; the
// total is exact.
func TestCompareAndSetConcurrentWriters(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const writers, adds = 6, 15
	clients := []*recipes.Client{connect(t, zkc.Servers()), connect(t, zkc.Servers()), connect(t, zkc.Servers())}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		tries int
	)
	for w := 0; w < writers; w++ {
		c := clients[w%len(clients)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < adds; i++ {
				res, err := (*engine.Client)(c).CompareAndSet(ctx, "/cas/total", engine.CAS{Create: true}, func(prev []byte, exists bool) ([]byte, error) {
					n := 0
					if exists {
						var err error
						if n, err = strconv.Atoi(string(prev)); err != nil {
							return nil, err
						}
					}
					return []byte(strconv.Itoa(n + 1)), nil
				})
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				tries += res.Tries
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	data, st, err := clients[0].Get(ctx, "/cas/total")
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(writers*adds), string(data))
	assert.Equal(t, int32(writers*adds-1), st.Version, "one write per add (the first created the node)")
	t.Logf("%d adds took %d tries", writers*adds, tries)
}

// The loop gives up with ErrConflict after CAS.Tries when another writer
// wins every time, returns update's error as it is, and needs the node
// without CAS.Create.
func TestCompareAndSetGivesUp(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	other := connect(t, zkc.Servers())
	ctx := context.Background()

	_, err := (*engine.Client)(c).CompareAndSet(ctx, "/cas/missing", engine.CAS{}, func([]byte, bool) ([]byte, error) { return nil, nil })
	assert.ErrorIs(t, err, zk.ErrNoNode)

	_, err = c.Create(ctx, "/cas-contended", []byte("0"), 0)
	require.NoError(t, err)
	calls := 0
	_, err = (*engine.Client)(c).CompareAndSet(ctx, "/cas-contended", engine.CAS{Tries: 3}, func(prev []byte, _ bool) ([]byte, error) {
		calls++
		_, err := other.Set(ctx, "/cas-contended", []byte("x"), -1) // another writer comes first
		require.NoError(t, err)
		return []byte("mine"), nil
	})
	assert.ErrorIs(t, err, zkerr.ErrConflict)
	assert.ErrorIs(t, err, zk.ErrBadVersion)
	assert.Equal(t, 3, calls)

	stop := errors.New("stop")
	_, err = (*engine.Client)(c).CompareAndSet(ctx, "/cas-contended", engine.CAS{}, func([]byte, bool) ([]byte, error) { return nil, stop })
	assert.Equal(t, stop, err)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = (*engine.Client)(c).CompareAndSet(cctx, "/cas-contended", engine.CAS{}, func(p []byte, _ bool) ([]byte, error) { return p, nil })
	assert.ErrorIs(t, err, context.Canceled)
}

// Close never blocks on a dead link: the delete goes on in the
// background and lands once the link is back, in the same session.
func TestOwnedNodeCloseWhileCutOff(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(10*time.Second))
	admin := connect(t, zkc.Servers())
	ctx := context.Background()

	o := own(t, c, engine.OwnedSpec{Path: "/owned/cut/member-", Mode: zk.FlagEphemeral | zk.FlagSequence, Protected: true})
	n := awaitNode(t, o)
	sid := c.SessionID()
	proxy.Blackhole()
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, o.Close(cctx), "the delete is handed to the background")
	assert.Less(t, time.Since(start), 3*time.Second, "Close returns within its ctx")
	_, _, ok := dataOf(t, admin, n.Path)
	assert.True(t, ok, "not deleted yet: the link is dead")
	proxy.Restore()
	eventually(t, 15*time.Second, "deleted once the link is back", func() bool {
		_, _, ok := dataOf(t, admin, n.Path)
		return !ok
	})
	assert.Equal(t, sid, c.SessionID(), "in the same session")
}

// Close made while the loop is making the node again (someone deleted
// it) leaves no node behind once it returns: the create in flight is
// let finish and its node deleted, not abandoned to land after Close
// (CI saw discovery's Unregister leave an instance so).
func TestOwnedNodeCloseDuringRecreate(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	admin := connect(t, zkc.Servers())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := "/owned/" + testutil.Namespace(t)
	for i := 0; i < 40; i++ {
		path := base + "/n" + strconv.Itoa(i)
		o, err := (*engine.Client)(c).Own(engine.OwnedSpec{Path: path, Mode: zk.FlagEphemeral})
		require.NoError(t, err)
		awaitNode(t, o)
		require.NoError(t, admin.Delete(ctx, path, -1))
		// Close as the loop hears of the delete and makes the node again.
		for j := 0; j < i%8; j++ {
			_, _, _ = c.Exists(ctx, base)
		}
		require.NoError(t, o.Close(ctx))
		// A write after Close: a create made before it is ordered first.
		_, err = admin.Create(ctx, base+"/marker"+strconv.Itoa(i), nil, 0)
		require.NoError(t, err)
		_, _, ok := dataOf(t, admin, path)
		require.False(t, ok, "round %d: the node is there after Close", i)
	}
}
