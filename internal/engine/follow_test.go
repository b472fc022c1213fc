package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
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

// views collects what a follower saw, for a test to wait on.
type views[T any] struct {
	mu   sync.Mutex
	seen []T
}

func (v *views[T]) add(x T) {
	v.mu.Lock()
	v.seen = append(v.seen, x)
	v.mu.Unlock()
}

func (v *views[T]) all() []T {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]T(nil), v.seen...)
}

func (v *views[T]) last() (T, bool) {
	all := v.all()
	if len(all) == 0 {
		var zero T
		return zero, false
	}
	return all[len(all)-1], true
}

// follow runs fn's follower until the test ends, and checks that it
// returns then.
func follow(t *testing.T, run func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done, "a follower returns nil when its ctx ends")
	})
}

// FollowNode sees a missing node, its creation, every write and its
// deletion, each once, with one standard watch at a time.
func TestFollowNode(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	e := (*engine.Client)(c)
	var v views[engine.NodeView]
	follow(t, func(ctx context.Context) error {
		f := e.NewFollower("/follow/node", nil)
		f.AddNode("/follow/node", "/follow/node", v.add)
		return f.Run(ctx)
	})
	eventually(t, 5*time.Second, "the first view", func() bool { return len(v.all()) == 1 })
	assert.False(t, v.all()[0].Exists)

	require.NoError(t, e.EnsureContainers(context.Background(), "/follow"))
	_, err := c.Create(context.Background(), "/follow/node", []byte("one"), 0)
	require.NoError(t, err)
	seen := func(n int, data string) func() bool {
		return func() bool {
			last, ok := v.last()
			return ok && len(v.all()) == n && last.Exists && string(last.Data) == data
		}
	}
	eventually(t, 5*time.Second, "created", seen(2, "one"))
	_, err = c.Set(context.Background(), "/follow/node", []byte("two"), -1)
	require.NoError(t, err)
	eventually(t, 5*time.Second, "written", seen(3, "two"))
	assert.Equal(t, int32(1), v.all()[2].Stat.Version)
	watches, err := zkc.WatchCount(0)
	require.NoError(t, err)
	assert.Equal(t, 1, watches, "one standard watch on the node")

	require.NoError(t, c.Delete(context.Background(), "/follow/node", -1))
	eventually(t, 5*time.Second, "deleted", func() bool {
		last, _ := v.last()
		return len(v.all()) == 4 && !last.Exists
	})
}

// FollowChildren sees each change of the list; a read after a reconnection
// that finds nothing new calls nobody.
func TestFollowChildren(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()})
	e := (*engine.Client)(c)
	require.NoError(t, e.EnsureContainers(context.Background(), "/follow/kids"))
	var v views[engine.ChildrenView]
	follow(t, func(ctx context.Context) error { return engine.FollowChildren(e, ctx, "/follow/kids", v.add) })
	eventually(t, 5*time.Second, "the first view", func() bool { return len(v.all()) == 1 })
	assert.True(t, v.all()[0].Exists)
	assert.Empty(t, v.all()[0].Children)

	_, err := c.Create(context.Background(), "/follow/kids/a", nil, 0)
	require.NoError(t, err)
	eventually(t, 5*time.Second, "a", func() bool {
		last, _ := v.last()
		return len(v.all()) == 2 && assert.ObjectsAreEqual([]string{"a"}, last.Children)
	})

	// A connection cut: the follower reads again on RECONNECTED, finds the
	// same list, and calls nobody; a change made meanwhile is seen.
	log := testutil.WatchStates(t, c)
	before := (*engine.Client)(c).Stats().Children
	proxy.Cut()
	log.WaitFor(t, 0, 10*time.Second, recipes.StateSuspended, recipes.StateReconnected)
	eventually(t, 5*time.Second, "read again after the reconnection", func() bool { return (*engine.Client)(c).Stats().Children > before })
	assert.Len(t, v.all(), 2, "nothing new")
	_, err = c.Create(context.Background(), "/follow/kids/b", nil, 0)
	require.NoError(t, err)
	eventually(t, 5*time.Second, "b", func() bool {
		last, _ := v.last()
		return len(v.all()) == 3 && len(last.Children) == 2
	})
}

// A read that fails is retried under the retry policy, and the follower
// ends with ErrClosed when the client closes.
func TestFollowRetriesAndClose(t *testing.T) {
	zkc := zktest.Start(t)
	c, err := testutil.Dial(context.Background(), zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
	require.NoError(t, err)
	e := (*engine.Client)(c)
	var reads int
	var mu sync.Mutex
	done := make(chan error, 1)
	go func() {
		f := e.NewFollower("a flaky read", nil)
		f.Add("a flaky read", func(context.Context, *engine.Watches) error {
			mu.Lock()
			defer mu.Unlock()
			if reads++; reads < 3 {
				return assert.AnError
			}
			return nil // no watch: the next read comes with a reconnection
		})
		done <- f.Run(context.Background())
	}()
	eventually(t, 5*time.Second, "three reads", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return reads == 3
	})
	require.NoError(t, c.Close(context.Background()))
	assert.ErrorIs(t, <-done, recipes.ErrClosed)
}

// followLog records what a Follower reported, for a test to wait on.
type followLog struct {
	mu  sync.Mutex
	evs []engine.FollowEvent
}

func (l *followLog) add(ev engine.FollowEvent) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *followLog) all() []engine.FollowEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]engine.FollowEvent(nil), l.evs...)
}

func (l *followLog) count(kind engine.FollowEventKind) int {
	n := 0
	for _, ev := range l.all() {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

func (l *followLog) states() []recipes.State {
	var out []recipes.State
	for _, ev := range l.all() {
		if ev.Kind == engine.FollowState {
			out = append(out, recipes.State(ev.State))
		}
	}
	return out
}

// runFollower runs f until the test ends, and checks that it returns nil
// then.
func runFollower(t *testing.T, f *engine.Follower) {
	follow(t, f.Run)
}

// Follow across a session expiry: the server expires the session while
// the client is cut off (its ephemeral node goes), a change is made
// meanwhile, and once the client has a new session the follower's first
// read sees that change and leaves its watches anew (one on the server,
// which fires on the next change). Initialised is reported once, the
// states as the client published them.
func TestFollowAcrossSessionExpiry(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(time.Second))
	b := connect(t, zkc.Servers())
	ctx := context.Background()
	e := (*engine.Client)(c)
	_, err := b.Create(ctx, "/expiry", []byte("1"), 0)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/mine", nil, zk.FlagEphemeral)
	require.NoError(t, err)
	sid := c.SessionID()

	var log followLog
	var v views[engine.NodeView]
	f := e.NewFollower("expiry", log.add)
	f.AddNode("node", "/expiry", v.add)
	runFollower(t, f)
	eventually(t, 5*time.Second, "initialised", func() bool { return log.count(engine.FollowInitialised) == 1 })
	require.Len(t, v.all(), 1)
	assert.Equal(t, "1", string(v.all()[0].Data))
	watches, err := zkc.WatchCount(0)
	require.NoError(t, err)
	assert.Equal(t, 1, watches)

	proxy.Blackhole()
	eventually(t, 20*time.Second, "the server expired the session", func() bool {
		ok, _, err := b.Exists(ctx, "/mine")
		return err == nil && !ok
	})
	eventually(t, 10*time.Second, "LOST reported", func() bool { return slices.Contains(log.states(), recipes.StateLost) })
	_, err = b.Set(ctx, "/expiry", []byte("2 (while the session was gone)"), -1)
	require.NoError(t, err)
	assert.Len(t, v.all(), 1, "nothing seen while cut off")
	proxy.Restore()

	eventually(t, 20*time.Second, "a new session", func() bool { s := c.SessionID(); return s != 0 && s != sid })
	eventually(t, 10*time.Second, "the change made while the session was gone is seen", func() bool {
		last, _ := v.last()
		return string(last.Data) == "2 (while the session was gone)"
	})
	eventually(t, 10*time.Second, "the watch set again in the new session", func() bool {
		n, err := zkc.WatchCount(0)
		return err == nil && n == 1
	})
	_, err = b.Set(ctx, "/expiry", []byte("3"), -1)
	require.NoError(t, err)
	eventually(t, 10*time.Second, "a change in the new session is seen", func() bool {
		last, _ := v.last()
		return string(last.Data) == "3"
	})
	assert.Len(t, v.all(), 3, "each view once")
	assert.Equal(t, 1, log.count(engine.FollowInitialised), "initialised once")
	states := log.states()
	assert.Subset(t, states, []recipes.State{recipes.StateConnected, recipes.StateSuspended, recipes.StateLost, recipes.StateReconnected}, "%v", states)
	assert.Equal(t, 1, engine.Watching(e), "one watch registered")
}

// A Follower knows which watch fired: each event names the read's key,
// the node, what happened and which kind of watch it was, and only that
// read runs again.
func TestFollowerKnowsWhichWatchFired(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	e := (*engine.Client)(c)
	for _, p := range []string{"/which", "/which/a", "/which/b"} {
		_, err := c.Create(ctx, p, nil, 0)
		require.NoError(t, err)
	}
	var (
		log  followLog
		mu   sync.Mutex
		runs = map[string]int{}
	)
	counted := func(key string, read engine.ReadFunc) engine.ReadFunc {
		return func(ctx context.Context, w *engine.Watches) error {
			mu.Lock()
			runs[key]++
			mu.Unlock()
			return read(ctx, w)
		}
	}
	runsOf := func(key string) int {
		mu.Lock()
		defer mu.Unlock()
		return runs[key]
	}
	f := e.NewFollower("which", log.add)
	f.Add("a", counted("a", func(ctx context.Context, w *engine.Watches) error {
		_, err := e.ReadData(ctx, "/which/a", w, true)
		return err
	}))
	f.Add("b", counted("b", func(ctx context.Context, w *engine.Watches) error {
		_, err := e.ReadData(ctx, "/which/b", w, true)
		return err
	}))
	f.Add("kids", counted("kids", func(ctx context.Context, w *engine.Watches) error {
		_, err := e.ReadChildren(ctx, "/which", w, true)
		return err
	}))
	f.Add("later", counted("later", func(ctx context.Context, w *engine.Watches) error {
		_, err := e.ReadData(ctx, "/which-later", w, true)
		return err
	}))
	runFollower(t, f)
	eventually(t, 5*time.Second, "initialised", func() bool { return log.count(engine.FollowInitialised) == 1 })
	assert.Equal(t, 4, engine.Watching(e), "one watch per read: data, data, children, exists")

	watchEvents := func() []engine.FollowEvent {
		var out []engine.FollowEvent
		for _, ev := range log.all() {
			if ev.Kind == engine.FollowWatch {
				out = append(out, ev)
			}
		}
		return out
	}
	_, err := c.Set(ctx, "/which/b", []byte("x"), -1)
	require.NoError(t, err)
	eventually(t, 5*time.Second, "b read again", func() bool { return runsOf("b") == 2 })
	assert.Equal(t, []engine.FollowEvent{{Kind: engine.FollowWatch, Key: "b", Path: "/which/b", Type: zk.EventNodeDataChanged, Watch: engine.WatchData}}, watchEvents())
	assert.Equal(t, 1, runsOf("a"), "a untouched")
	assert.Equal(t, 1, runsOf("kids"), "the list untouched")

	_, err = c.Create(ctx, "/which/c", nil, 0)
	require.NoError(t, err)
	eventually(t, 5*time.Second, "the list read again", func() bool { return runsOf("kids") == 2 })
	assert.Equal(t, engine.FollowEvent{Kind: engine.FollowWatch, Key: "kids", Path: "/which", Type: zk.EventNodeChildrenChanged, Watch: engine.WatchChildren}, watchEvents()[1])

	_, err = c.Create(ctx, "/which-later", nil, 0)
	require.NoError(t, err)
	eventually(t, 5*time.Second, "the created node read", func() bool { return runsOf("later") == 2 })
	assert.Equal(t, engine.FollowEvent{Kind: engine.FollowWatch, Key: "later", Path: "/which-later", Type: zk.EventNodeCreated, Watch: engine.WatchExists}, watchEvents()[2])
	assert.Equal(t, 1, runsOf("a"), "a still untouched")
	assert.Len(t, watchEvents(), 3)
}

// Many nodes are followed on one goroutine: a thousand nodes cost no
// goroutine each, every change is seen, and initialised comes once, after
// every first view.
func TestFollowerManyNodesOneGoroutine(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	e := (*engine.Client)(c)
	const n = 1000
	_, err := c.Create(ctx, "/many", nil, 0)
	require.NoError(t, err)
	ops := make([]recipes.Op, n)
	for i := range ops {
		ops[i] = recipes.CreateOp(fmt.Sprintf("/many/n%d", i), []byte("0"), 0)
	}
	for i := 0; i < n; i += 100 {
		_, err := c.Multi(ctx, ops[i:i+100]...)
		require.NoError(t, err)
	}
	before := runtime.NumGoroutine()
	var (
		log  followLog
		mu   sync.Mutex
		seen = map[string]string{}
	)
	f := e.NewFollower("many", func(ev engine.FollowEvent) {
		if ev.Kind == engine.FollowInitialised {
			mu.Lock()
			assert.Len(t, seen, n, "initialised after every first view")
			mu.Unlock()
		}
		log.add(ev)
	})
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("/many/n%d", i)
		f.AddNode(p, p, func(v engine.NodeView) {
			mu.Lock()
			seen[p] = string(v.Data)
			mu.Unlock()
		})
	}
	runFollower(t, f)
	eventually(t, 20*time.Second, "initialised", func() bool { return log.count(engine.FollowInitialised) == 1 })
	extra := runtime.NumGoroutine() - before
	t.Logf("%d nodes followed: %d more goroutines", n, extra)
	assert.LessOrEqual(t, extra, 2, "the follower's own goroutine, not one per node")
	assert.Equal(t, n, engine.Watching(e))

	for i := 0; i < n; i += 100 {
		set := make([]recipes.Op, 100)
		for j := range set {
			set[j] = recipes.SetOp(fmt.Sprintf("/many/n%d", i+j), []byte("1"), -1)
		}
		_, err := c.Multi(ctx, set...)
		require.NoError(t, err)
	}
	eventually(t, 20*time.Second, "every change seen", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range seen {
			if d != "1" {
				return false
			}
		}
		return true
	})
	paths := map[string]bool{}
	for _, ev := range log.all() {
		if ev.Kind == engine.FollowWatch {
			paths[ev.Path] = true
		}
	}
	assert.Len(t, paths, n, "every node's watch heard (%d events in all; states %v)", log.count(engine.FollowWatch), log.states())
	assert.Equal(t, n, log.count(engine.FollowWatch), "one event per node, none stale")
	assert.Equal(t, 1, log.count(engine.FollowInitialised))
	assert.LessOrEqual(t, runtime.NumGoroutine()-before, 2)
}

// A read removed from a Follower runs no more and leaves no registered
// watch; a read added later is read at once.
func TestFollowerAddRemove(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	e := (*engine.Client)(c)
	var a, b views[engine.NodeView]
	f := e.NewFollower("add-remove", nil)
	f.AddNode("a", "/ar-a", a.add)
	runFollower(t, f)
	eventually(t, 5*time.Second, "a read", func() bool { return len(a.all()) == 1 })
	f.AddNode("b", "/ar-b", b.add)
	eventually(t, 5*time.Second, "b read", func() bool { return len(b.all()) == 1 })
	assert.Equal(t, 2, engine.Watching(e))
	f.Remove("a")
	eventually(t, 5*time.Second, "a's watch dropped", func() bool { return engine.Watching(e) == 1 })
	_, err := c.Create(ctx, "/ar-a", nil, 0)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/ar-b", nil, 0)
	require.NoError(t, err)
	eventually(t, 5*time.Second, "b created", func() bool { return len(b.all()) == 2 })
	assert.Len(t, a.all(), 1, "a removed: not read again")
}

// On an adopted connection the watch events reach the Client through
// go-zookeeper's event channel, which drops events when it is full: a
// burst of changes (here 300 nodes written by one transaction) must still
// reach every read, each watch waiting on its own channel as well.
func TestFollowerOnAdoptedConnectionMissesNoBurst(t *testing.T) {
	zkc := zktest.Start(t)
	conn, events, err := zk.Connect(zkc.Servers(), 4*time.Second, testutil.ZKTLS(zkc.Servers()), zk.WithLogInfo(false))
	require.NoError(t, err)
	c, err := recipes.NewClient(context.Background(), conn, events, recipes.WithSessionTimeout(4*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	ctx := context.Background()
	e := (*engine.Client)(c)
	const n = 300
	_, err = c.Create(ctx, "/burst", nil, 0)
	require.NoError(t, err)
	creates := make([]recipes.Op, n)
	sets := make([]recipes.Op, n)
	for i := range creates {
		p := fmt.Sprintf("/burst/n%d", i)
		creates[i] = recipes.CreateOp(p, []byte("0"), 0)
		sets[i] = recipes.SetOp(p, []byte("1"), -1)
	}
	_, err = c.Multi(ctx, creates...)
	require.NoError(t, err)
	var (
		log  followLog
		mu   sync.Mutex
		seen = map[string]string{}
	)
	f := e.NewFollower("burst", log.add)
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("/burst/n%d", i)
		f.AddNode(p, p, func(v engine.NodeView) {
			mu.Lock()
			seen[p] = string(v.Data)
			mu.Unlock()
		})
	}
	runFollower(t, f)
	eventually(t, 20*time.Second, "initialised", func() bool { return log.count(engine.FollowInitialised) == 1 })
	_, err = c.Multi(ctx, sets...)
	require.NoError(t, err)
	eventually(t, 20*time.Second, "every change seen", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range seen {
			if d != "1" {
				return false
			}
		}
		return true
	})
	// Every node's watch fired and was heard, once: an event that came
	// through the event channel late could otherwise reach the watch set
	// again after it fired.
	paths := map[string]bool{}
	for _, ev := range log.all() {
		if ev.Kind == engine.FollowWatch {
			paths[ev.Path] = true
		}
	}
	assert.Len(t, paths, n, "every node's watch heard (%d events in all; states %v)", log.count(engine.FollowWatch), log.states())
	assert.Equal(t, n, log.count(engine.FollowWatch), "one event per node, none stale")
}

// Initialised means every read added so far has read once, also a read
// that another read added in the same round (a tree follower adding a
// node's children as it reads it): it was reported before the added read
// ran, since the addition waited in the queue while pending was 0.
func TestFollowInitialisedWaitsForReadsAddedByReads(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	e := (*engine.Client)(c)
	var (
		mu        sync.Mutex
		childRan  bool
		ranAtInit = make(chan bool, 1)
		f         *engine.Follower
	)
	f = e.NewFollower("tree", func(ev engine.FollowEvent) {
		if ev.Kind == engine.FollowInitialised {
			mu.Lock()
			ranAtInit <- childRan
			mu.Unlock()
		}
	})
	f.Add("parent", func(ctx context.Context, w *engine.Watches) error {
		f.Add("child", func(ctx context.Context, w *engine.Watches) error {
			mu.Lock()
			childRan = true
			mu.Unlock()
			return nil
		})
		return nil
	})
	runFollower(t, f)
	select {
	case ran := <-ranAtInit:
		assert.True(t, ran, "initialised before a read added by a read had run")
	case <-time.After(10 * time.Second):
		t.Fatal("never initialised")
	}
}
