package cache_test

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

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var (
	connect    = testutil.Connect
	eventually = testutil.Eventually
)

// recorder keeps what a listener heard, as lines "NODE_CREATED /a =data".
type recorder struct {
	mu  sync.Mutex
	evs []cache.Event
}

func (r *recorder) add(ev cache.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func (r *recorder) events() []cache.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

func line(ev cache.Event) string {
	s := ev.String()
	switch {
	case ev.New != nil:
		s += " =" + string(ev.New.Data)
	case ev.Old != nil:
		s += " (was " + string(ev.Old.Data) + ")"
	}
	return s
}

func (r *recorder) lines() []string {
	var out []string
	for _, ev := range r.events() {
		out = append(out, line(ev))
	}
	return out
}

// count returns how many events of typ were heard.
func (r *recorder) count(typ cache.EventType) int {
	n := 0
	for _, ev := range r.events() {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// waitLines waits until the listener heard n events.
func (r *recorder) waitLen(t *testing.T, n int) {
	t.Helper()
	eventually(t, 15*time.Second, fmt.Sprintf("%d events", n), func() bool { return len(r.events()) >= n })
}

func (r *recorder) waitFor(t *testing.T, typ cache.EventType, n int) {
	t.Helper()
	eventually(t, 15*time.Second, fmt.Sprintf("%d %s", n, typ), func() bool { return r.count(typ) >= n })
}

func start(t *testing.T, cc *cache.Cache) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, cc.Start(ctx))
	t.Cleanup(func() { cc.Close(ctx) })
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	require.NoError(t, cc.WaitReady(wctx))
}

func mustCreate(t *testing.T, c *recipes.Client, path, data string) *zk.Stat {
	t.Helper()
	ctx := context.Background()
	_, err := c.Create(ctx, path, []byte(data), 0)
	require.NoError(t, err)
	_, st, err := c.Get(ctx, path)
	require.NoError(t, err)
	return st
}

func mustSet(t *testing.T, c *recipes.Client, path, data string) {
	t.Helper()
	_, err := c.Set(context.Background(), path, []byte(data), -1)
	require.NoError(t, err)
}

func mustDelete(t *testing.T, c *recipes.Client, path string) {
	t.Helper()
	require.NoError(t, c.Delete(context.Background(), path, -1))
}

// equalsServer checks that the cache holds exactly what a fresh full read
// of the server shows under root (down to depth), node for node: data,
// version, czxid, mzxid.
func equalsServer(t *testing.T, c *recipes.Client, cc *cache.Cache, root string, depth int, noData bool) bool {
	t.Helper()
	want, err := readServer(c, root, depth)
	require.NoError(t, err)
	got := cc.Snapshot()
	if len(got) != len(want) {
		t.Logf("cache has %d nodes, the server %d", len(got), len(want))
		return false
	}
	for i, n := range got {
		w := want[i]
		if n.Path != w.Path || n.Stat.Version != w.Stat.Version || n.Stat.Mzxid != w.Stat.Mzxid || n.Stat.Czxid != w.Stat.Czxid {
			t.Logf("node %d: cache %s v%d m%d, server %s v%d m%d", i, n.Path, n.Stat.Version, n.Stat.Mzxid, w.Path, w.Stat.Version, w.Stat.Mzxid)
			return false
		}
		if !noData && string(n.Data) != string(w.Data) {
			t.Logf("node %s: cache data %q, server %q", n.Path, n.Data, w.Data)
			return false
		}
	}
	return true
}

// readServer reads root's subtree plainly, depth first, siblings sorted.
func readServer(c *recipes.Client, root string, depth int) ([]cache.Node, error) {
	ctx := context.Background()
	var out []cache.Node
	var walk func(p string, d int) error
	walk = func(p string, d int) error {
		data, st, err := c.Get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		out = append(out, cache.Node{Path: p, Data: data, Stat: *st})
		if depth >= 0 && d >= depth {
			return nil
		}
		kids, _, err := c.Children(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		slices.Sort(kids)
		for _, k := range kids {
			if err := walk(strings.TrimSuffix(p, "/")+"/"+k, d+1); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(root, 0)
}

// The scripted history, on a persistent watch and on the forced one-shot
// fallback: a missing root (Initialized on an empty cache), creates deep
// in the tree, a change, a delete, and, while the link is cut, a node
// deleted and created again with the same version and data (version 0):
// reported as NODE_DELETED then NODE_CREATED before RESYNCED (Curator's
// CuratorCache compares versions and reports nothing). Every event's path
// is the node that changed.
func TestScriptedHistory(t *testing.T) {
	for _, mode := range []string{"persistent", "oneshot"} {
		t.Run(mode, func(t *testing.T) {
			zkc := zktest.Start(t)
			proxy := zktest.NewProxy(t, zkc.Servers()[0])
			ctx := context.Background()
			c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(4*time.Second), recipes.WithNamespace("app"))
			w := connect(t, zkc.Servers(), recipes.WithNamespace("app"))
			var opts []cache.Option
			if mode == "oneshot" {
				opts = append(opts, cache.WithOneShotWatches())
			}
			cc, err := cache.New(c, "/cfg", opts...)
			require.NoError(t, err)
			var rec recorder
			defer cc.Listen(rec.add)()
			start(t, cc)
			assert.Equal(t, mode == "persistent", cc.Persistent())
			rec.waitLen(t, 1)
			assert.Equal(t, []string{"INITIALIZED"}, rec.lines(), "a missing root: an empty cache, initialised")
			assert.Zero(t, cc.Size())

			// Each step waits for the cache to report it: a change the
			// cache has not read yet when the next one comes may be
			// coalesced with it (the package doc says so).
			var want []string
			step := func(write func(), heard string) {
				t.Helper()
				write()
				want = append(want, heard)
				eventually(t, 15*time.Second, heard, func() bool { return len(rec.lines()) >= len(want)+1 })
				assert.Equal(t, append([]string{"INITIALIZED"}, want...), rec.lines())
			}
			step(func() { mustCreate(t, w, "/cfg", "root") }, "NODE_CREATED /cfg =root")
			step(func() { mustCreate(t, w, "/cfg/a", "1") }, "NODE_CREATED /cfg/a =1")
			step(func() { mustCreate(t, w, "/cfg/a/b", "2") }, "NODE_CREATED /cfg/a/b =2")
			step(func() { mustSet(t, w, "/cfg/a", "1bis") }, "NODE_CHANGED /cfg/a =1bis")
			step(func() { mustCreate(t, w, "/cfg/gone", "x") }, "NODE_CREATED /cfg/gone =x")
			step(func() { mustDelete(t, w, "/cfg/gone") }, "NODE_DELETED /cfg/gone (was x)")
			step(func() { mustCreate(t, w, "/cfg/same", "s") }, "NODE_CREATED /cfg/same =s")
			want = append([]string{"INITIALIZED"}, want...)
			old, ok := cc.Get("/cfg/same")
			require.True(t, ok)
			assert.Equal(t, int32(0), old.Stat.Version)

			// Cut: delete and create again with the same version and data
			// while the cache cannot hear.
			proxy.Blackhole()
			eventually(t, 10*time.Second, "suspended", func() bool { return c.State() != recipes.StateConnected && c.State() != recipes.StateReconnected })
			mustDelete(t, w, "/cfg/same")
			st := mustCreate(t, w, "/cfg/same", "s")
			assert.Equal(t, int32(0), st.Version, "the same version")
			proxy.Restore()
			rec.waitFor(t, cache.Resynced, 1)
			got := rec.lines()
			tail := got[len(want):]
			assert.Equal(t, []string{"NODE_DELETED /cfg/same (was s)", "NODE_CREATED /cfg/same =s", "RESYNCED"}, tail)
			now, ok := cc.Get("/cfg/same")
			require.True(t, ok)
			assert.NotEqual(t, old.Stat.Czxid, now.Stat.Czxid)
			assert.True(t, equalsServer(t, w, cc, "/cfg", -1, false))
			_ = ctx
		})
	}
}

// A node changed, then deleted and created again while the cache's read
// of the change is on its way (a slow link): the read sees the new node,
// so the deletion that follows in the watch's stream is of the old one
// and must not remove the new one from the cache. The events are
// NODE_DELETED of the old node and NODE_CREATED of the new one, once each,
// and never a NODE_DELETED of the node that exists.
func TestDeleteOfOlderNode(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(4*time.Second))
	w := connect(t, zkc.Servers())
	mustCreate(t, w, "/o", "")
	mustCreate(t, w, "/o/p", "1")
	cc, err := cache.New(c, "/o")
	require.NoError(t, err)
	var rec recorder
	defer cc.Listen(rec.add, cache.AfterInitialized())()
	start(t, cc)
	proxy.SetLatency(150 * time.Millisecond)
	reads := (*engine.Client)(c).Stats().GetData
	mustSet(t, w, "/o/p", "2")
	// The cache got the event and sent its read, which is on its way.
	eventually(t, 10*time.Second, "the cache's read sent", func() bool { return (*engine.Client)(c).Stats().GetData > reads })
	mustDelete(t, w, "/o/p")
	st := mustCreate(t, w, "/o/p", "3")
	eventually(t, 10*time.Second, "the new node cached", func() bool {
		n, ok := cc.Get("/o/p")
		return ok && n.Stat.Czxid == st.Czxid
	})
	proxy.SetLatency(0)
	mustSet(t, w, "/o", "mark") // the end of the stream
	eventually(t, 10*time.Second, "the mark", func() bool { return slices.Contains(rec.lines(), "NODE_CHANGED /o =mark") })
	for _, ev := range rec.events() {
		if ev.Type == cache.NodeDeleted {
			assert.NotEqual(t, st.Czxid, ev.Old.Stat.Czxid, "a deletion of the node that exists: %v", rec.lines())
		}
	}
	n, ok := cc.Get("/o/p")
	require.True(t, ok, "the node that exists is cached: %v", rec.lines())
	assert.Equal(t, "3", string(n.Data))
	t.Log(rec.lines())
}
