package cache_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// before39 reports whether the server is older than 3.9.
func before39(zkc *zktest.Cluster) bool {
	v := zkc.Version()
	return strings.HasPrefix(v, "3.6") || strings.HasPrefix(v, "3.7") || strings.HasPrefix(v, "3.8")
}

func watchCount(t *testing.T, zkc *zktest.Cluster, want int, what string) {
	t.Helper()
	last := -1
	ok := false
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n, err := zkc.WatchCount(0)
		last = n
		if err == nil && n == want {
			ok = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !ok {
		t.Fatalf("%s: %d watch(es) on the server, want %d", what, last, want)
	}
}

// cacheGoroutines counts the goroutines a cache runs: its worker (and
// the Follower it runs), its watch's pump and its listeners. The Follower
// a Client runs for its own life, following the ensemble's configuration,
// is not the cache's.
func cacheGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "engine.(*ensembleTracker)") {
			continue
		}
		if strings.Contains(g, "zkrecipes/cache.") || strings.Contains(g, "engine.(*listener[") || strings.Contains(g, "engine.(*Follower).Run") {
			n++
		}
	}
	return n
}

// The server's watches: one persistent watch per cache however large the
// tree; none left after Close. The one-shot fallback holds a data watch
// per node and a children watch per node above the maximum depth. Close
// leaves no goroutine, and the cache is readable after it. The cache
// creates nothing.
func TestWatchesAndClose(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	w := connect(t, zkc.Servers())
	for _, p := range []string{"/w", "/w/a", "/w/b", "/w/a/1"} {
		mustCreate(t, w, p, "")
	}
	znodes, err := zkc.ZnodeCount(0)
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		opts    []cache.Option
		watches int
		size    int
	}{
		{"persistent", nil, 1, 4},
		// wchs counts data watches (the children watches are not in its
		// total): one per node.
		{"oneshot", []cache.Option{cache.WithOneShotWatches()}, 4, 4},
		{"oneshot-depth1", []cache.Option{cache.WithOneShotWatches(), cache.WithMaxDepth(1)}, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := testutil.Dial(ctx, zkc.Servers())
			require.NoError(t, err)
			defer c.Close(ctx)
			watchCount(t, zkc, 0, "before")
			before := cacheGoroutines()
			cc, err := cache.New(c, "/w", tc.opts...)
			require.NoError(t, err)
			var rec recorder
			cc.Listen(rec.add)
			start(t, cc)
			watchCount(t, zkc, tc.watches, "running")
			require.NoError(t, cc.Close(ctx))
			require.NoError(t, cc.Close(ctx), "twice")
			assert.Equal(t, tc.size, cc.Size(), "readable after Close")
			assert.ErrorIs(t, cc.Start(ctx), recipes.ErrClosed)
			eventually(t, 10*time.Second, "the cache's goroutines gone", func() bool { return cacheGoroutines() <= before })
			switch {
			case tc.name != "persistent":
				watchCount(t, zkc, tc.watches, "one-shot watches stay until they fire")
			default:
				watchCount(t, zkc, 0, "removed on the server")
			}
			require.NoError(t, c.Close(ctx))
			watchCount(t, zkc, 0, "gone with the connection")
			mustSet(t, w, "/w/a", "after")
			n, err := zkc.ZnodeCount(0)
			require.NoError(t, err)
			assert.Equal(t, znodes, n, "the cache created nothing")
		})
	}
}

// A listener that does not return holds up only itself: the session
// stays up past several session timeouts, the cache stays current, other
// listeners hear every change; once it returns it hears everything it
// missed, in order.
func TestSlowListener(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers(), recipes.WithSessionTimeout(time.Second))
	w := connect(t, zkc.Servers())
	mustCreate(t, w, "/s", "")
	cc, err := cache.New(c, "/s")
	require.NoError(t, err)
	release := make(chan struct{})
	var slow, quick recorder
	defer cc.Listen(func(ev cache.Event) {
		if ev.Type == cache.NodeCreated && ev.Path == "/s/0" {
			<-release
		}
		slow.add(ev)
	})()
	defer cc.Listen(quick.add)()
	start(t, cc)
	sid := c.SessionID()
	const n = 50
	for i := range n {
		mustCreate(t, w, fmt.Sprintf("/s/%d", i), "")
	}
	quick.waitFor(t, cache.NodeCreated, n+1)
	deadline := time.Now().Add(3 * time.Second) // three session timeouts
	for time.Now().Before(deadline) {
		_, _, err := c.Get(ctx, "/s") // the session answers
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
	}
	assert.Equal(t, sid, c.SessionID())
	assert.Equal(t, recipes.StateConnected, c.State())
	assert.Equal(t, n+1, cc.Size(), "the cache is current")
	assert.Len(t, slow.events(), 2, "the slow listener is held up: %v", slow.lines())
	close(release)
	slow.waitFor(t, cache.NodeCreated, n+1)
	assert.Equal(t, quick.lines(), slow.lines())
}

// A panicking listener is not swallowed: it ends the program (checked in
// a child process, which this test runs).
func TestPanickingListener(t *testing.T) {
	if servers := os.Getenv("CACHE_PANIC_SERVERS"); servers != "" {
		ctx := context.Background()
		c, err := testutil.Dial(ctx, strings.Split(servers, ","))
		if err != nil {
			t.Fatal(err)
		}
		cc, err := cache.New(c, "/panic")
		if err != nil {
			t.Fatal(err)
		}
		cc.Listen(func(ev cache.Event) {
			if ev.Type == cache.Initialized {
				panic("listener boom")
			}
		})
		if err := cc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second) // the panic ends the process first
		t.Fatal("the panic was swallowed")
	}
	zkc := testutil.SharedServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanickingListener$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), "CACHE_PANIC_SERVERS="+strings.Join(zkc.Servers(), ",")), testutil.TLSEnv(zkc.Servers())...)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the child must die: %s", out)
	assert.Contains(t, string(out), "panic: listener boom")
	assert.NotContains(t, string(out), "the panic was swallowed")
}

// A listener may close the cache: Close returns at once, and the
// listener's goroutine ends once the call returns.
func TestCloseFromListener(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ns := testutil.Namespace(t)
	c := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
	cc, err := cache.New(c, "/x")
	require.NoError(t, err)
	closed := make(chan error, 1)
	began := time.Now()
	cc.Listen(func(ev cache.Event) {
		if ev.Type == cache.Initialized {
			closed <- cc.Close(context.Background())
		}
	})
	require.NoError(t, cc.Start(context.Background()))
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close from the listener did not return")
	}
	assert.Less(t, time.Since(began), 3*time.Second, "Close did not wait for its own listener")
	eventually(t, 10*time.Second, "the cache's goroutines gone", func() bool { return cacheGoroutines() == 0 })
}

// A node the session may not read is left out (logged), and the rest of
// the tree is cached: the cache initialises and follows the readable
// nodes. On both kinds of watches.
func TestUnreadableNode(t *testing.T) {
	modes(t, func(t *testing.T, opts []cache.Option) {
		zkc := testutil.SharedServer(t)
		ctx := context.Background()
		root := "/" + strings.ReplaceAll(testutil.Namespace(t), "/", "-")
		owner := connect(t, zkc.Servers())
		require.NoError(t, owner.AddAuth(ctx, "digest", []byte("owner:secret")))
		mustCreate(t, owner, root, "")
		mustCreate(t, owner, root+"/open", "o")
		_, err := owner.UnsafeConn().Create(root+"/closed", []byte("c"), 0, zk.DigestACL(zk.PermAll, "owner", "secret"))
		require.NoError(t, err)
		c := connect(t, zkc.Servers())
		cc, err := cache.New(c, root, opts...)
		require.NoError(t, err)
		start(t, cc)
		assert.Equal(t, []string{root, root + "/open"}, paths(cc.Snapshot()))
		mustSet(t, owner, root+"/open", "o2")
		eventually(t, 10*time.Second, "the readable node followed", func() bool {
			n, ok := cc.Get(root + "/open")
			return ok && string(n.Data) == "o2"
		})
	})
}

// lockedBuffer is a log sink for tests.
type lockedBuffer = testutil.LogBuffer

// The one-shot fallback retries a failing read under the client's retry
// policy, never in a tight loop (Curator's PersistentWatcher retries at
// once). Here its watched read of the root fails for good: the same
// client holds a persistent watch there, and a one-shot watch on it would
// replace that watch on ZooKeeper 3.6–3.8 (ZOOKEEPER-4466), so the client
// refuses it. Over two seconds the cache tries a handful of times, and
// never initialises.
func TestFallbackBacksOff(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	var logs lockedBuffer
	ns := testutil.Namespace(t)
	c := connect(t, zkc.Servers(), recipes.WithNamespace(ns),
		recipes.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	pw, err := c.WatchPersistent(ctx, "/tight", true, func(recipes.PersistentEvent) {})
	require.NoError(t, err)
	defer pw.Close(ctx)
	cc, err := cache.New(c, "/tight", cache.WithOneShotWatches())
	require.NoError(t, err)
	require.NoError(t, cc.Start(ctx))
	defer cc.Close(ctx)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	assert.ErrorIs(t, cc.WaitReady(wctx), context.DeadlineExceeded)
	tries := strings.Count(logs.String(), "reading failed; trying again")
	t.Logf("%d tries in 2s", tries)
	assert.GreaterOrEqual(t, tries, 2, "it does try again")
	assert.LessOrEqual(t, tries, 20, "no tight loop")
}
