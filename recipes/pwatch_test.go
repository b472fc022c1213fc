package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// pevents records what a persistent watch's listener got.
type pevents struct {
	mu  sync.Mutex
	evs []recipes.PersistentEvent
}

func (p *pevents) add(ev recipes.PersistentEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evs = append(p.evs, ev)
}

func (p *pevents) all() []recipes.PersistentEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.evs)
}

func (p *pevents) resyncs() int {
	n := 0
	for _, ev := range p.all() {
		if ev.Resync {
			n++
		}
	}
	return n
}

// lines returns the events as "resync", "created /a", "changed /a",
// "deleted /a", "children /a", "failed: ...".
func (p *pevents) lines() []string {
	var out []string
	for _, ev := range p.all() {
		switch {
		case ev.Resync:
			out = append(out, "resync")
		case ev.Err != nil:
			out = append(out, "failed: "+ev.Err.Error())
		default:
			out = append(out, eventWord(ev.Type)+" "+ev.Path)
		}
	}
	return out
}

func eventWord(t zk.EventType) string {
	switch t {
	case zk.EventNodeCreated:
		return "created"
	case zk.EventNodeDeleted:
		return "deleted"
	case zk.EventNodeDataChanged:
		return "changed"
	case zk.EventNodeChildrenChanged:
		return "children"
	}
	return t.String()
}

// has waits until the listener got want (a line of lines).
func (p *pevents) has(t *testing.T, want string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, want, func() bool { return slices.Contains(p.lines(), want) })
}

// watchCount is the server's count of watches ("wchs"), waited for until
// it is want.
func watchCount(t *testing.T, zkc *zktest.Cluster, want int, what string) {
	t.Helper()
	var last int
	testutil.Eventually(t, 10*time.Second, fmt.Sprintf("%s: %d watch(es) on the server", what, want), func() bool {
		n, err := zkc.WatchCount(0)
		last = n
		return err == nil && n == want
	})
	_ = last
}

// before39 reports whether the server is older than 3.9 (one watch mode
// per connection and path, ZOOKEEPER-4466).
func before39(zkc *zktest.Cluster) bool {
	v := zkc.Version()
	return strings.HasPrefix(v, "3.6") || strings.HasPrefix(v, "3.7") || strings.HasPrefix(v, "3.8")
}

// A recursive persistent watch reports every create, change and delete
// deep in its subtree, each with the path of the node that changed
// (namespace-relative), in the server's order, after a resync first; the
// server holds one watch for it, and none after Close. A one-shot watch
// on its root is refused (ZOOKEEPER-4466).
func TestWatchPersistentRecursive(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers(), recipes.WithNamespace("pw"))
	b := connect(t, zkc.Servers())
	ctx := context.Background()
	_, err := b.Create(ctx, "/pw", nil, 0)
	require.NoError(t, err)
	watchCount(t, zkc, 0, "before")

	var log pevents
	w, err := c.WatchPersistent(ctx, "/tree", true, log.add)
	require.NoError(t, err)
	testutil.Eventually(t, 5*time.Second, "the resync first", func() bool { return len(log.all()) > 0 })
	assert.Equal(t, []string{"resync"}, log.lines())
	watchCount(t, zkc, 1, "one persistent watch")

	for _, p := range []string{"/pw/tree", "/pw/tree/a", "/pw/tree/a/b", "/pw/tree/a/b/c"} {
		_, err = b.Create(ctx, p, nil, 0)
		require.NoError(t, err)
	}
	_, err = b.Create(ctx, "/pw/treehouse", nil, 0) // beside the root, not under it
	require.NoError(t, err)
	_, err = b.Set(ctx, "/pw/tree/a/b/c", []byte("x"), -1)
	require.NoError(t, err)
	require.NoError(t, b.Delete(ctx, "/pw/tree/a/b/c", -1))
	want := []string{"resync", "created /tree", "created /tree/a", "created /tree/a/b", "created /tree/a/b/c", "changed /tree/a/b/c", "deleted /tree/a/b/c"}
	log.has(t, "deleted /tree/a/b/c")
	assert.Equal(t, want, log.lines())
	watchCount(t, zkc, 1, "still one watch for the whole subtree")

	// ZOOKEEPER-4466: no one-shot watch on the root; below it is fine.
	_, _, _, err = c.GetW(ctx, "/tree")
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, _, _, err = c.ExistsW(ctx, "/tree")
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, _, _, err = c.ChildrenW(ctx, "/tree")
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)

	require.NoError(t, w.Close(ctx))
	_, err = b.Set(ctx, "/pw/tree/a", []byte("after close"), -1)
	require.NoError(t, err)
	_, _, err = c.Get(ctx, "/tree/a") // its reply comes after the event
	require.NoError(t, err)
	assert.Equal(t, want, log.lines(), "nothing after Close")
	assert.False(t, (*engine.Client)(c).PersistentRemoveUnsupported())
	watchCount(t, zkc, 0, "removed on the server")
	_, _, _, err = c.GetW(ctx, "/tree") // no longer a persistent root
	assert.NoError(t, err)
}

// A persistent watch is set again after a cut connection (same session)
// and after the session expired (a new one), each time with a resync
// before the events that follow; what changed while away is not
// replayed. The server holds one watch throughout.
func TestWatchPersistentReAdded(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	// go-zookeeper waits 1s before it dials its one server again: a
	// session that survives the cut needs more than that.
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2500*time.Millisecond))
	b := connect(t, zkc.Servers())
	ctx := context.Background()
	_, err := b.Create(ctx, "/re", nil, 0)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/mine", nil, zk.FlagEphemeral)
	require.NoError(t, err)
	sid := c.SessionID()

	var log pevents
	w, err := c.WatchPersistent(ctx, "/re", true, log.add)
	require.NoError(t, err)
	t.Cleanup(func() { w.Close(ctx) })
	_, err = b.Create(ctx, "/re/1", nil, 0)
	require.NoError(t, err)
	log.has(t, "created /re/1")
	require.Equal(t, []string{"resync", "created /re/1"}, log.lines(), "one resync for one connection")

	proxy.Cut()
	testutil.Eventually(t, 10*time.Second, "a second resync", func() bool { return log.resyncs() == 2 })
	assert.Equal(t, sid, c.SessionID(), "the same session")
	watchCount(t, zkc, 1, "re-added on the new connection")
	_, err = b.Create(ctx, "/re/2", nil, 0)
	require.NoError(t, err)
	log.has(t, "created /re/2")

	proxy.Blackhole()
	testutil.Eventually(t, 20*time.Second, "the server expired the session", func() bool {
		ok, _, err := b.Exists(ctx, "/mine")
		return err == nil && !ok
	})
	_, err = b.Create(ctx, "/re/away", nil, 0)
	require.NoError(t, err)
	proxy.Restore()
	testutil.Eventually(t, 20*time.Second, "a new session", func() bool { s := c.SessionID(); return s != 0 && s != sid })
	testutil.Eventually(t, 10*time.Second, "a third resync", func() bool { return log.resyncs() == 3 })
	watchCount(t, zkc, 1, "re-added in the new session")
	_, err = b.Create(ctx, "/re/3", nil, 0)
	require.NoError(t, err)
	log.has(t, "created /re/3")
	lines := log.lines()
	assert.NotContains(t, lines, "created /re/away", "not replayed")
	assert.Equal(t, "created /re/3", lines[len(lines)-1])
	i := slices.Index(lines, "created /re/3")
	assert.Equal(t, "resync", lines[slices.Index(lines, "created /re/2")-1], "the resync before the events after it: %v", lines)
	last := -1
	for k, l := range lines {
		if l == "resync" {
			last = k
		}
	}
	assert.Less(t, last, i, "the third resync before the events after it: %v", lines)
}

// A plain persistent watch reports its own node (created, changed,
// children) and nothing deeper; two watches of a client on one path share
// the server's watch, which goes with the last of them; a
// recursive watch on the same path is refused.
func TestWatchPersistentShared(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	var l1, l2 pevents
	w1, err := c.WatchPersistent(ctx, "/pl", false, l1.add)
	require.NoError(t, err)
	w2, err := c.WatchPersistent(ctx, "/pl", false, l2.add)
	require.NoError(t, err)
	_, err = c.WatchPersistent(ctx, "/pl", true, func(recipes.PersistentEvent) {})
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	n, err := zkc.WatchCount(0)
	require.NoError(t, err)
	t.Logf("%s: a plain persistent watch counts %d in wchs", zkc.Version(), n)

	for _, p := range []string{"/pl", "/pl/kid", "/pl/kid/grandkid"} {
		_, err = c.Create(ctx, p, nil, 0)
		require.NoError(t, err)
	}
	_, err = c.Set(ctx, "/pl", []byte("x"), -1)
	require.NoError(t, err)
	want := []string{"resync", "created /pl", "children /pl", "changed /pl"}
	l1.has(t, "changed /pl")
	l2.has(t, "changed /pl")
	assert.Equal(t, want, l1.lines())
	assert.Equal(t, want, l2.lines())

	require.NoError(t, w1.Close(ctx))
	_, err = c.Set(ctx, "/pl", []byte("y"), -1)
	require.NoError(t, err)
	l2.has(t, "changed /pl")
	testutil.Eventually(t, 10*time.Second, "the second change", func() bool { return len(l2.lines()) == len(want)+1 })
	assert.Equal(t, want, l1.lines())
	watchCount(t, zkc, n, "the other watch keeps it")
	require.NoError(t, w2.Close(ctx))
	watchCount(t, zkc, 0, "removed with the last")
	require.NoError(t, w2.Close(ctx), "twice")
}

// Misuse: a nil listener, a bad path, a closed client; a watch still open
// when its client closes ends with it.
func TestWatchPersistentMisuse(t *testing.T) {
	zkc := testutil.SharedServer(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	_, err := c.WatchPersistent(ctx, "/m", true, nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = c.WatchPersistent(ctx, "m", true, func(recipes.PersistentEvent) {})
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)
	var log pevents
	w, err := c.WatchPersistent(ctx, "/m", true, log.add)
	require.NoError(t, err)
	require.NoError(t, c.Close(ctx)) // ends the watch and its goroutine (TestMain checks none is left)
	require.NoError(t, w.Close(ctx), "after the client")
	_, err = c.WatchPersistent(ctx, "/m", true, func(recipes.PersistentEvent) {})
	assert.True(t, errors.Is(err, recipes.ErrClosed), "%v", err)
}

// ZOOKEEPER-4466, confirmed: on 3.6–3.8 a one-shot watch on the exact
// root of a recursive persistent watch (set here through the raw
// connection, which the Client's guard cannot see) silently turns it into
// a one-shot one: a child created after it is not reported. 3.9 keeps
// both. The root's own change is reported either way, and marks the point
// in the stream after the child's creation.
func TestWatchPersistentOneShotOnRoot(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	b := connect(t, zkc.Servers())
	ctx := context.Background()
	_, err := b.Create(ctx, "/k", nil, 0)
	require.NoError(t, err)
	var log pevents
	w, err := c.WatchPersistent(ctx, "/k", true, log.add)
	require.NoError(t, err)
	t.Cleanup(func() { w.Close(ctx) })
	_, _, _, err = c.UnsafeConn().GetW("/k") // what the guard refuses through the Client
	require.NoError(t, err)
	_, err = b.Create(ctx, "/k/x", nil, 0)
	require.NoError(t, err)
	_, err = b.Set(ctx, "/k", []byte("x"), -1)
	require.NoError(t, err)
	log.has(t, "changed /k")
	if before39(zkc) {
		assert.Equal(t, []string{"resync", "changed /k"}, log.lines(), "%s replaced the persistent watch", zkc.Version())
	} else {
		assert.Equal(t, []string{"resync", "created /k/x", "changed /k"}, log.lines(), "%s keeps both", zkc.Version())
	}
}

// Closing a persistent watch (plain and recursive) removes it from the
// server on every version that has persistent watches, and makes the
// server log no error: 3.6–3.8 know no removeWatches type for persistent
// watches (Persistent=4 and PersistentRecursive=5 came in 3.9.0) and log
// an ERROR with a stack trace for them ("Invalid integer value for
// conversion to WatcherType"), but their type Any removes the
// connection's watch at the path whatever its mode, as 3.9's does.
// A one-shot watch the client sets at the root afterwards is intact.
func TestWatchPersistentRemovedWithoutServerError(t *testing.T) {
	zkc := zktest.Start(t)
	testutil.Eventually(t, 30*time.Second, "the server's log is readable", func() bool {
		return zkc.LogContains(0, "Using checkIntervalMs")
	})
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	for _, recursive := range []bool{false, true} {
		path := fmt.Sprintf("/rm-%v", recursive)
		_, err := c.Create(ctx, path, nil, 0)
		require.NoError(t, err)
		var log pevents
		w, err := c.WatchPersistent(ctx, path, recursive, log.add)
		require.NoError(t, err)
		n, err := zkc.WatchCount(0)
		require.NoError(t, err)
		require.Positive(t, n, "recursive %v: the server holds the watch", recursive)
		require.NoError(t, w.Close(ctx))
		// Close waited for the server's answer, which comes after its log
		// line: the log is complete for the removal.
		assert.False(t, zkc.LogContains(0, "Failed to process"), "%s logged an error for removeWatches (recursive %v)", zkc.Version(), recursive)
		assert.False(t, zkc.LogContains(0, "WatcherType"), "%s refused the watcher type (recursive %v)", zkc.Version(), recursive)
		assert.False(t, (*engine.Client)(c).PersistentRemoveUnsupported(), "%s removes persistent watches", zkc.Version())
		watchCount(t, zkc, 0, fmt.Sprintf("%s removed the watch (recursive %v)", zkc.Version(), recursive))

		_, _, ch, err := c.GetW(ctx, path) // no longer a persistent root
		require.NoError(t, err)
		_, err = c.Set(ctx, path, []byte("x"), -1)
		require.NoError(t, err)
		select {
		case ev := <-ch:
			assert.Equal(t, zk.EventNodeDataChanged, ev.Type)
		case <-time.After(10 * time.Second):
			t.Fatalf("recursive %v: the one-shot watch set after the removal did not fire", recursive)
		}
		assert.Equal(t, []string{"resync"}, log.lines(), "nothing after Close")
	}
}
