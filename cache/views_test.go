package cache_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// modes runs fn on a persistent watch and on the forced one-shot
// fallback.
func modes(t *testing.T, fn func(t *testing.T, opts []cache.Option)) {
	t.Run("persistent", func(t *testing.T) { fn(t, nil) })
	t.Run("oneshot", func(t *testing.T) { fn(t, []cache.Option{cache.WithOneShotWatches()}) })
}

// inOrder checks got against want: in order on a persistent watch; in
// any order on one-shot watches, whose reads, not the server, order the
// events of different nodes (the package doc says so).
func inOrder(t *testing.T, persistent bool, want, got []string) {
	t.Helper()
	if persistent {
		assert.Equal(t, want, got)
	} else {
		assert.ElementsMatch(t, want, got)
	}
}

func paths(nodes []cache.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Path)
	}
	return out
}

// Depth limits: 0 holds the root alone (NodeCache), 2 holds two levels;
// changes deeper are not reported; the cache reads the tree already there
// at Start.
func TestDepth(t *testing.T) {
	modes(t, func(t *testing.T, opts []cache.Option) {
		zkc := testutil.SharedServer(t)
		ns := testutil.Namespace(t)
		c := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
		w := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
		for _, p := range []string{"/d", "/d/1", "/d/1/2", "/d/1/2/3"} {
			mustCreate(t, w, p, p)
		}
		node, err := cache.NewNodeCache(c, "/d", opts...)
		require.NoError(t, err)
		two, err := cache.New(c, "/d", append(slices.Clone(opts), cache.WithMaxDepth(2))...)
		require.NoError(t, err)
		var nrec, trec recorder
		defer node.Listen(nrec.add)()
		defer two.Listen(trec.add)()
		start(t, two) // the recursive watch first: the node cache shares it
		start(t, node)
		assert.Equal(t, []string{"/d"}, paths(node.Snapshot()))
		assert.Equal(t, []string{"/d", "/d/1", "/d/1/2"}, paths(two.Snapshot()))
		kids, ok := node.Children("/d")
		assert.True(t, ok)
		assert.Empty(t, kids, "a node cache holds no children")
		kids, ok = two.Children("/d/1/2")
		assert.True(t, ok)
		assert.Empty(t, kids, "at the maximum depth")

		mustSet(t, w, "/d/1/2/3", "deep")
		mustCreate(t, w, "/d/1/x", "x")
		mustSet(t, w, "/d/1", "one")
		mustSet(t, w, "/d", "root")
		trec.waitFor(t, cache.NodeChanged, 2)
		nrec.waitFor(t, cache.NodeChanged, 1)
		assert.Equal(t, []string{"NODE_CREATED /d =/d", "INITIALIZED", "NODE_CHANGED /d =root"}, nrec.lines())
		trec.waitLen(t, 7)
		got := trec.lines()
		assert.Equal(t, []string{"NODE_CREATED /d =/d", "NODE_CREATED /d/1 =/d/1", "NODE_CREATED /d/1/2 =/d/1/2", "INITIALIZED"}, got[:4])
		changes := []string{"NODE_CREATED /d/1/x =x", "NODE_CHANGED /d/1 =one", "NODE_CHANGED /d =root"}
		if len(opts) == 0 {
			assert.Equal(t, changes, got[4:], "in the server's order")
		} else {
			assert.ElementsMatch(t, changes, got[4:], "one-shot watches: in the order the reads saw them")
		}
		assert.True(t, equalsServer(t, w, two, "/d", 2, false))
		assert.True(t, equalsServer(t, w, node, "/d", 0, false))

		// The node cache sees its node go and come back.
		for _, p := range []string{"/d/1/2/3", "/d/1/2", "/d/1/x", "/d/1", "/d"} {
			mustDelete(t, w, p)
		}
		mustCreate(t, w, "/d", "again")
		nrec.waitFor(t, cache.NodeCreated, 2)
		assert.Equal(t, []string{"NODE_DELETED /d (was root)", "NODE_CREATED /d =again"}, nrec.lines()[3:])
		eventually(t, 10*time.Second, "the tree cache follows", func() bool { return equalsServer(t, w, two, "/d", 2, false) })
	})
}

// The children view (PathChildrenCache) never reports its parent, in
// events or reads (CURATOR-574), whether the parent is created, changed
// or deleted; Children lists the children.
func TestChildrenView(t *testing.T) {
	modes(t, func(t *testing.T, opts []cache.Option) {
		zkc := testutil.SharedServer(t)
		ns := testutil.Namespace(t)
		c := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
		w := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
		cc, err := cache.NewChildrenCache(c, "/svc", opts...)
		require.NoError(t, err)
		var rec recorder
		defer cc.Listen(rec.add)()
		start(t, cc)
		mustCreate(t, w, "/svc", "parent")
		mustCreate(t, w, "/svc/b", "B")
		mustCreate(t, w, "/svc/a", "A")
		mustCreate(t, w, "/svc/a/deep", "no")
		mustSet(t, w, "/svc", "parent2")
		rec.waitLen(t, 3) // /svc/a heard before it changes (or the two may be one event)
		mustSet(t, w, "/svc/a", "A2")
		rec.waitFor(t, cache.NodeChanged, 1)
		rec.waitLen(t, 4)
		inOrder(t, len(opts) == 0, []string{"INITIALIZED", "NODE_CREATED /svc/b =B", "NODE_CREATED /svc/a =A", "NODE_CHANGED /svc/a =A2"}, rec.lines())
		_, ok := cc.Get("/svc")
		assert.False(t, ok, "the parent is not part of the view")
		kids, ok := cc.Children("/svc")
		assert.True(t, ok)
		assert.Equal(t, []string{"a", "b"}, kids)
		assert.Equal(t, 2, cc.Size())
		assert.Equal(t, []string{"/svc/a", "/svc/b"}, paths(cc.Snapshot()))

		// A listener added now hears the children, not the parent.
		var late recorder
		defer cc.Listen(late.add)()
		late.waitFor(t, cache.Initialized, 1)
		assert.Equal(t, []string{"NODE_CREATED /svc/a =A2", "NODE_CREATED /svc/b =B", "INITIALIZED"}, late.lines())

		for _, p := range []string{"/svc/a/deep", "/svc/a", "/svc/b", "/svc"} {
			mustDelete(t, w, p)
		}
		rec.waitFor(t, cache.NodeDeleted, 2)
		eventually(t, 10*time.Second, "empty", func() bool { _, ok := cc.Children("/svc"); return !ok })
		for _, ev := range rec.events() {
			assert.NotEqual(t, "/svc", ev.Path, "the parent is never reported: %v", rec.lines())
		}
		inOrder(t, len(opts) == 0, []string{"NODE_DELETED /svc/a (was A2)", "NODE_DELETED /svc/b (was B)"}, rec.lines()[4:])
	})
}

// Without data the cache holds paths and stats only: nodes and events
// have no bytes, and a data change is still a NODE_CHANGED (mzxid).
func TestWithoutData(t *testing.T) {
	modes(t, func(t *testing.T, opts []cache.Option) {
		zkc := testutil.SharedServer(t)
		ns := testutil.Namespace(t)
		c := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
		w := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
		mustCreate(t, w, "/big", "payload")
		mustCreate(t, w, "/big/leaf", "payload")
		cc, err := cache.New(c, "/big", append(slices.Clone(opts), cache.WithoutData())...)
		require.NoError(t, err)
		var rec recorder
		defer cc.Listen(rec.add)()
		start(t, cc)
		mustSet(t, w, "/big/leaf", "payload")
		rec.waitFor(t, cache.NodeChanged, 1)
		assert.Equal(t, []string{"NODE_CREATED /big =", "NODE_CREATED /big/leaf =", "INITIALIZED", "NODE_CHANGED /big/leaf ="}, rec.lines())
		for _, ev := range rec.events() {
			if ev.New != nil {
				assert.Nil(t, ev.New.Data)
			}
		}
		n, ok := cc.Get("/big/leaf")
		require.True(t, ok)
		assert.Nil(t, n.Data)
		assert.Equal(t, int32(1), n.Stat.Version)
		assert.True(t, equalsServer(t, w, cc, "/big", -1, true))
	})
}

// Listener filters, as Curator's builder: types, and AfterInitialized,
// which drops the first load's NODE_CREATED (and, for a listener added
// later, the current contents) but not INITIALIZED.
func TestListenFilters(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ns := testutil.Namespace(t)
	c := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
	w := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
	mustCreate(t, w, "/f", "0")
	cc, err := cache.New(c, "/f")
	require.NoError(t, err)
	var creates, changes, inits, after, lateAfter recorder
	defer cc.Listen(creates.add, cache.ForCreates())()
	defer cc.Listen(changes.add, cache.ForChanges(), cache.ForDeletes())()
	defer cc.Listen(inits.add, cache.ForInitialized())()
	defer cc.Listen(after.add, cache.AfterInitialized())()
	start(t, cc)
	defer cc.Listen(lateAfter.add, cache.AfterInitialized(), cache.ForCreates(), cache.ForInitialized())()
	// One at a time: a change the cache has not read yet when the next
	// comes is coalesced with it (see the package doc).
	mustCreate(t, w, "/f/x", "1")
	after.waitFor(t, cache.NodeCreated, 1)
	mustSet(t, w, "/f/x", "2")
	after.waitFor(t, cache.NodeChanged, 1)
	mustDelete(t, w, "/f/x")
	after.waitFor(t, cache.NodeDeleted, 1)
	changes.waitFor(t, cache.NodeDeleted, 1)
	lateAfter.waitFor(t, cache.NodeCreated, 1)
	assert.Equal(t, []string{"NODE_CREATED /f =0", "NODE_CREATED /f/x =1"}, creates.lines())
	assert.Equal(t, []string{"NODE_CHANGED /f/x =2", "NODE_DELETED /f/x (was 2)"}, changes.lines())
	assert.Equal(t, []string{"INITIALIZED"}, inits.lines())
	assert.Equal(t, []string{"INITIALIZED", "NODE_CREATED /f/x =1", "NODE_CHANGED /f/x =2", "NODE_DELETED /f/x (was 2)"}, after.lines())
	assert.Equal(t, []string{"INITIALIZED", "NODE_CREATED /f/x =1"}, lateAfter.lines())
}

// A listener added after the load hears the current contents first
// (NODE_CREATED for each node, parents first, then INITIALIZED), then
// the changes: nothing lost or doubled between the two, even while
// changes go on.
func TestListenLate(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ns := testutil.Namespace(t)
	c := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
	w := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
	mustCreate(t, w, "/l", "")
	cc, err := cache.New(c, "/l")
	require.NoError(t, err)
	start(t, cc)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var writes atomic.Int64
	go func() { // a writer all along
		defer close(done)
		for i := 0; ctx.Err() == nil; i++ {
			writes.Add(1)
			p := "/l/n" + string(rune('a'+i%20))
			if _, err := w.Create(ctx, p, nil, 0); err != nil {
				_ = w.Delete(ctx, p, -1)
			}
		}
	}()
	var recs [5]recorder
	for i := range recs {
		n := writes.Load() // spread the listeners over the writes
		eventually(t, 10*time.Second, "writes", func() bool { return writes.Load() > n+5 })
		defer cc.Listen(recs[i].add)()
	}
	cancel()
	<-done
	for i := range recs {
		eventually(t, 10*time.Second, "the listener ends equal to the cache", func() bool {
			// Replay what it heard: it must give the cache's contents.
			m := map[string]bool{}
			inits := 0
			for _, ev := range recs[i].events() {
				switch ev.Type {
				case cache.NodeCreated:
					if m[ev.Path] {
						t.Fatalf("created twice without a delete: %s", ev.Path)
					}
					m[ev.Path] = true
				case cache.NodeDeleted:
					if !m[ev.Path] {
						t.Fatalf("deleted without a create: %s", ev.Path)
					}
					delete(m, ev.Path)
				case cache.Initialized:
					inits++
				}
			}
			require.LessOrEqual(t, inits, 1)
			snap := cc.Snapshot()
			if len(snap) != len(m) || inits != 1 {
				return false
			}
			for _, n := range snap {
				if !m[n.Path] {
					return false
				}
			}
			return true
		})
		assert.Equal(t, cache.NodeCreated, recs[i].events()[0].Type)
		assert.Equal(t, "/l", recs[i].events()[0].Path, "parents first")
	}
}

// Subscribe: a channel with what a listener hears, filtered alike; the
// returned function closes it, and so does Close.
func TestSubscribe(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ns := testutil.Namespace(t)
	c := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
	w := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
	mustCreate(t, w, "/s", "0")
	cc, err := cache.New(c, "/s")
	require.NoError(t, err)
	start(t, cc)
	all, stopAll := cc.Subscribe()
	changes, _ := cc.Subscribe(cache.ForChanges())
	unread, _ := cc.Subscribe() // never read: Close must not hang on it
	_ = unread
	next := func(ch <-chan cache.Event) string {
		select {
		case ev, ok := <-ch:
			if !ok {
				return "closed"
			}
			return line(ev)
		case <-time.After(10 * time.Second):
			return "timeout"
		}
	}
	assert.Equal(t, "NODE_CREATED /s =0", next(all))
	assert.Equal(t, "INITIALIZED", next(all))
	mustSet(t, w, "/s", "1")
	assert.Equal(t, "NODE_CHANGED /s =1", next(all))
	assert.Equal(t, "NODE_CHANGED /s =1", next(changes))
	stopAll()
	assert.Equal(t, "closed", next(all))
	stopAll()
	before := time.Now()
	require.NoError(t, cc.Close(context.Background()))
	assert.Less(t, time.Since(before), 3*time.Second)
	assert.Equal(t, "closed", next(changes))
	eventually(t, 10*time.Second, "the cache's goroutines gone", func() bool { return cacheGoroutines() == 0 })
}
