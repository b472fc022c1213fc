package nodes_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var (
	connect    = testutil.Connect
	eventually = testutil.Eventually
)

// events collects a PersistentNode's events.
type events struct {
	mu  sync.Mutex
	got []nodes.Event
}

func (e *events) add(ev nodes.Event) { e.mu.Lock(); e.got = append(e.got, ev); e.mu.Unlock() }

func (e *events) all() []nodes.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]nodes.Event(nil), e.got...)
}

func (e *events) last() (nodes.Event, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.got) == 0 {
		return nodes.Event{}, false
	}
	return e.got[len(e.got)-1], true
}

func start(t *testing.T, c *recipes.Client, path string, mode nodes.Mode, data []byte, opts ...nodes.Option) (*nodes.PersistentNode, *events) {
	t.Helper()
	n, err := nodes.NewPersistentNode(c, path, mode, data, opts...)
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { n.Close(context.Background()) })
	ev := &events{}
	n.Listen(ev.add)
	return n, ev
}

func waitCreated(t *testing.T, n *nodes.PersistentNode) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, n.WaitReady(ctx))
	return n.ActualPath()
}

func dataAt(t *testing.T, c *recipes.Client, path string) ([]byte, *zk.Stat, bool) {
	t.Helper()
	d, st, err := c.Get(context.Background(), path)
	if err == zk.ErrNoNode || (err != nil && errorsIsNoNode(err)) {
		return nil, nil, false
	}
	require.NoError(t, err)
	return d, st, true
}

// A node deleted by another client is made again at the same path with
// the latest data (CURATOR-241); listeners hear the first node, then the
// re-created one; Close deletes it.
func TestPersistentNodeRecreatedAfterDeletion(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	a := connect(t, zkc.Servers(), recipes.WithNamespace("pn"))
	b := connect(t, zkc.Servers(), recipes.WithNamespace("pn"))
	n, ev := start(t, a, "/del/node", nodes.Ephemeral, []byte("v1"))
	assert.Equal(t, "/del/node", waitCreated(t, n))
	assert.Equal(t, "/del/node", n.ActualPath())
	require.NoError(t, n.SetData(ctx, []byte("v2")))
	d, st, ok := dataAt(t, b, "/del/node")
	require.True(t, ok)
	assert.Equal(t, "v2", string(d))
	assert.Equal(t, a.SessionID(), st.EphemeralOwner)

	require.NoError(t, b.Delete(ctx, "/del/node", -1))
	eventually(t, 10*time.Second, "the node made again with the latest data", func() bool {
		d, _, ok := dataAt(t, b, "/del/node")
		return ok && string(d) == "v2"
	})
	eventually(t, 5*time.Second, "two events", func() bool { return len(ev.all()) == 2 })
	got := ev.all()
	assert.Equal(t, nodes.Event{Path: "/del/node", Gen: 1, Session: a.SessionID()}, got[0])
	assert.Equal(t, nodes.Event{Path: "/del/node", Gen: 2, Recreated: true, Session: a.SessionID()}, got[1])

	// Deleted with its parent: made again, parents too. One transaction:
	// two deletes would race the re-create between them (the parent
	// would have a child again, "node has children").
	_, err := b.Multi(ctx, recipes.DeleteOp("/del/node", -1), recipes.DeleteOp("/del", -1))
	require.NoError(t, err)
	eventually(t, 10*time.Second, "made again with its parent", func() bool {
		_, _, ok := dataAt(t, b, "/del/node")
		return ok
	})
	require.NoError(t, n.Close(ctx))
	_, _, ok = dataAt(t, b, "/del/node")
	assert.False(t, ok, "Close deletes the node")
	assert.ErrorIs(t, n.SetData(ctx, nil), recipes.ErrClosed)
	require.NoError(t, n.Close(ctx), "twice")
}

// A sequential node that goes is made again at the path it had, in the
// plain mode (CURATOR-190/483): no second sequential sibling.
func TestPersistentNodeSequentialDowngrade(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	a := connect(t, zkc.Servers())
	b := connect(t, zkc.Servers())
	for _, mode := range []nodes.Mode{nodes.EphemeralSequential, nodes.PersistentSequential, nodes.PersistentSequentialWithTTL} {
		t.Run(mode.String(), func(t *testing.T) {
			var opts []nodes.Option
			if mode.IsTTL() {
				opts = append(opts, nodes.WithTTL(time.Minute))
			}
			dir := "/seq-" + mode.String()
			n, ev := start(t, a, dir+"/n-", mode, []byte("x"), opts...)
			p := waitCreated(t, n)
			assert.Regexp(t, `^`+dir+`/n-\d{10}$`, p)
			require.NoError(t, b.Delete(ctx, p, -1))
			eventually(t, 10*time.Second, "re-created", func() bool { return len(ev.all()) == 2 })
			assert.Equal(t, p, n.ActualPath(), "the same path")
			kids, _, err := b.Children(ctx, dir)
			require.NoError(t, err)
			assert.Len(t, kids, 1, "no second sequential node: %v", kids)
			_, st, ok := dataAt(t, b, p)
			require.True(t, ok)
			if mode.IsEphemeral() {
				assert.Equal(t, a.SessionID(), st.EphemeralOwner)
			} else {
				assert.Zero(t, st.EphemeralOwner, "the server shows 0 for persistent, TTL and container nodes")
			}
			require.NoError(t, n.Close(ctx))
			_, _, ok = dataAt(t, b, p)
			assert.False(t, ok)
		})
	}
}

// A node already at the path is adopted: our data is written to it, and
// Close deletes it.
func TestPersistentNodeAdoptsExisting(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	a := connect(t, zkc.Servers())
	b := connect(t, zkc.Servers())
	_, err := b.CreateWithParents(ctx, "/adopt/node", []byte("theirs"), 0)
	require.NoError(t, err)
	n, ev := start(t, a, "/adopt/node", nodes.Persistent, []byte("ours"))
	assert.Equal(t, "/adopt/node", waitCreated(t, n))
	eventually(t, 10*time.Second, "our data written", func() bool {
		d, _, _ := dataAt(t, b, "/adopt/node")
		return string(d) == "ours"
	})
	got := ev.all()
	require.NotEmpty(t, got)
	assert.False(t, got[0].Foreign)
	require.NoError(t, n.Close(ctx))
	_, _, ok := dataAt(t, b, "/adopt/node")
	assert.False(t, ok)
}

// Data set before Start and before the first create succeeds (here: the
// path is held by another session's ephemeral node, reported as Foreign)
// is the data the first node is made with (Curator refuses:
// CURATOR-507).
func TestPersistentNodeDataBeforeFirstCreate(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	a := connect(t, zkc.Servers())
	b := connect(t, zkc.Servers())
	_, err := b.CreateWithParents(ctx, "/early/node", []byte("theirs"), zk.FlagEphemeral)
	require.NoError(t, err)

	n, err := nodes.NewPersistentNode(a, "/early/node", nodes.Ephemeral, []byte("v1"))
	require.NoError(t, err)
	require.NoError(t, n.SetData(ctx, []byte("v2")), "before Start")
	require.NoError(t, n.Start(ctx))
	defer n.Close(ctx)
	ev := &events{}
	n.Listen(ev.add)
	eventually(t, 10*time.Second, "the foreign node reported", func() bool {
		e, ok := ev.last()
		return ok && e.Foreign
	})
	assert.Equal(t, "", n.ActualPath(), "not ours")
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = n.SetData(sctx, []byte("v3"))
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	d, _, _ := dataAt(t, b, "/early/node")
	assert.Equal(t, "theirs", string(d), "another session's node is left alone")

	require.NoError(t, b.Close(ctx)) // their node goes
	assert.Equal(t, "/early/node", waitCreated(t, n))
	eventually(t, 10*time.Second, "ours, with the latest data", func() bool {
		d, st, ok := dataAt(t, a, "/early/node")
		return ok && string(d) == "v3" && st.EphemeralOwner == a.SessionID()
	})
	e, _ := ev.last()
	assert.False(t, e.Foreign)
}

// An ephemeral node survives a short cut of the link (the session lives:
// nothing is made again) and is made again after the session expires.
func TestPersistentNodeCutAndExpiry(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	p := zktest.NewProxy(t, zkc.Servers()[0])
	a := connect(t, []string{p.Addr()}, recipes.WithSessionTimeout(2*time.Second))
	b := connect(t, zkc.Servers())
	n, ev := start(t, a, "/cut/node", nodes.Ephemeral, []byte("v1"))
	waitCreated(t, n)
	sid := a.SessionID()
	states := testutil.WatchStates(t, a)
	from := len(states.Snapshot())

	p.Cut()
	states.WaitFor(t, from, 10*time.Second, recipes.StateSuspended, recipes.StateReconnected)
	require.Equal(t, sid, a.SessionID(), "reconnected in the same session")
	_, st, ok := dataAt(t, b, "/cut/node")
	require.True(t, ok)
	assert.Equal(t, sid, st.EphemeralOwner)
	assert.Len(t, ev.all(), 1, "not made again across a cut")

	p.Blackhole()
	eventually(t, 15*time.Second, "the server expires the session", func() bool {
		_, _, ok := dataAt(t, b, "/cut/node")
		return !ok
	})
	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_ = n.SetData(sctx, []byte("v2")) // recorded at once, written once the link is back
	cancel()
	p.Restore()
	eventually(t, 15*time.Second, "made again in the new session", func() bool {
		d, st, ok := dataAt(t, b, "/cut/node")
		return ok && st.EphemeralOwner == a.SessionID() && st.EphemeralOwner != sid && string(d) == "v2"
	})
	eventually(t, 5*time.Second, "heard", func() bool {
		e, ok := ev.last()
		return ok && e.Recreated
	})
}

// Close deletes the node even when it cannot at once: with the link
// black-holed, Close returns within its ctx, the delete goes on in the
// background and lands once the link is back, also when the session
// expired meanwhile (a persistent node outlives its session, so must the
// delete).
func TestPersistentNodeCloseGuaranteed(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	for _, expire := range []bool{false, true} {
		name := map[bool]string{false: "link back", true: "session expired"}[expire]
		t.Run(name, func(t *testing.T) {
			p := zktest.NewProxy(t, zkc.Servers()[0])
			a := connect(t, []string{p.Addr()}, recipes.WithSessionTimeout(2*time.Second))
			b := connect(t, zkc.Servers())
			path := "/close/" + map[bool]string{false: "a", true: "b"}[expire]
			n, _ := start(t, a, path, nodes.Persistent, []byte("v1"))
			waitCreated(t, n)
			_, err := a.Create(ctx, path+"-canary", nil, zk.FlagEphemeral)
			require.NoError(t, err)
			p.Blackhole()
			if expire { // Close in the old session, which the server has ended
				eventually(t, 15*time.Second, "the server expires the session", func() bool {
					_, _, ok := dataAt(t, b, path+"-canary")
					return !ok
				})
			}
			cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			began := time.Now()
			_ = n.Close(cctx) // nil (handed to the background) or ctx's error
			cancel()
			assert.Less(t, time.Since(began), 2*time.Second, "Close honours its ctx")
			_, _, ok := dataAt(t, b, path)
			assert.True(t, ok, "still there while the link is down")
			p.Restore()
			eventually(t, 15*time.Second, "deleted once the link is back", func() bool {
				_, _, ok := dataAt(t, b, path)
				return !ok
			})
		})
	}
}

// A TTL mode makes a TTL node; a server without
// extendedTypesEnabled refuses it with an error that names the flag.
func TestPersistentNodeTTL(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	a := connect(t, zkc.Servers())
	n, _ := start(t, a, "/ttl/node", nodes.PersistentWithTTL, []byte("t"), nodes.WithTTL(90*time.Second))
	waitCreated(t, n)
	_, st, ok := dataAt(t, a, "/ttl/node")
	require.True(t, ok)
	assert.Zero(t, st.EphemeralOwner, "ZooKeeper does not show a TTL to clients")
	require.NoError(t, n.Close(ctx))

	_, err := nodes.NewPersistentNode(a, "/ttl/x", nodes.PersistentWithTTL, nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = nodes.NewPersistentNode(a, "/ttl/x", nodes.Persistent, nil, nodes.WithTTL(time.Second))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
}

func TestPersistentNodeTTLRefused(t *testing.T) {
	zkc := zktest.Start(t, zktest.WithoutExtendedTypes())
	a := connect(t, zkc.Servers())
	n, _ := start(t, a, "/ttl/node", nodes.PersistentWithTTL, nil, nodes.WithTTL(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := n.WaitReady(ctx)
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "zookeeper.extendedTypesEnabled=true")
	assert.ErrorContains(t, err, "zkrecipes: persistent node /ttl/node:")
	t.Log(err)
}

func errorsIsNoNode(err error) bool { return errors.Is(err, zk.ErrNoNode) }
