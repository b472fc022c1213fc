package cache_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// healBound is how soon after a fault heals a one-shot cache of 1,111
// nodes on a link of 10 ms round trip must equal the server: its reads
// pipelined, about a second; one after the other (two round trips a
// node), more than 20 s.
const healBound = 8 * time.Second

// The one-shot fallback heals as fast as a load: a cache of 1,111 nodes
// (depth 3) on one-shot watches, over a link of 10 ms round trip, has
// its link cut (the same session comes back) and then black-holed past
// the session (a new one), with writes all over the tree during each
// fault; from the moment the link is back, the cache equals a fresh full
// read of the server within healBound, and its events replay to what it
// holds.
func TestOneShotHeals(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	ctx := context.Background()
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2500*time.Millisecond))
	w := connect(t, zkc.Servers())
	createTree(t, w, "/h", 10, 3, []byte("v0"))
	cc, err := cache.New(c, "/h", cache.WithOneShotWatches())
	require.NoError(t, err)
	var rp replay
	defer cc.Listen(rp.add)()
	start(t, cc)
	require.False(t, cc.Persistent())
	proxy.SetLatency(5 * time.Millisecond) // 10 ms a round trip, from now on

	rng := rand.New(rand.NewPCG(36, 5))
	write := func() {
		p := "/h"
		for range 1 + rng.IntN(3) {
			p += fmt.Sprintf("/n%d", rng.IntN(12)) // n10, n11: new nodes
		}
		switch err := w.Delete(ctx, p, -1); {
		case rng.IntN(4) == 0 && err == nil:
		case errors.Is(err, zk.ErrNoNode):
			_, err = w.Create(ctx, p, []byte("c"), 0)
			if !errors.Is(err, zk.ErrNoNode) { // no parent: fine
				require.NoError(t, err)
			}
		default: // not deleted (it has children), or made again
			_, err = w.Create(ctx, p, []byte("c"), 0)
			if errors.Is(err, zk.ErrNodeExists) {
				_, err = w.Set(ctx, p, []byte(fmt.Sprintf("s%d", rng.IntN(1000))), -1)
			}
			require.NoError(t, err)
		}
	}
	for _, fault := range []string{"cut", "expire"} {
		sid := c.SessionID()
		if fault == "cut" {
			proxy.Cut()
		} else {
			_, err := c.Create(ctx, "/h-alive", nil, zk.FlagEphemeral) // gone with the session
			require.NoError(t, err)
			proxy.Blackhole()
		}
		for range 300 {
			write()
		}
		if fault == "expire" {
			eventually(t, 20*time.Second, "the session expired", func() bool {
				there, _, err := w.Exists(ctx, "/h-alive")
				return err == nil && !there
			})
		}
		proxy.Restore()
		healed := time.Now()
		took, diff := untilEqual(t, w, cc, "/h", healed.Add(8*healBound))
		t.Logf("%s: %d nodes; equal to the server %v after the link came back", fault, cc.Size(), took.Round(time.Millisecond))
		require.Empty(t, diff, "%s: the cache never equalled the server", fault)
		assert.LessOrEqual(t, took, healBound, "%s: the one-shot cache healed too slowly", fault)
		if fault == "expire" {
			assert.NotEqual(t, sid, c.SessionID(), "a new session")
		}
		eventually(t, 10*time.Second, "the events replayed give the cache", func() bool { return rp.equals(cc.Snapshot()) })
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	assert.Empty(t, rp.bad)
	assert.Equal(t, 1, rp.inits)
}

// untilEqual waits until the cache equals a fresh read of the server
// under root, or deadline; it returns how long that took since the call,
// and, at the deadline, the last difference seen.
func untilEqual(t *testing.T, w *recipes.Client, cc *cache.Cache, root string, deadline time.Time) (time.Duration, string) {
	t.Helper()
	began := time.Now()
	for {
		want, err := readServer(w, root, -1)
		require.NoError(t, err)
		diff := nodesDiff(cc.Snapshot(), want)
		if diff == "" {
			return time.Since(began), ""
		}
		if time.Now().After(deadline) {
			return time.Since(began), diff
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nodesDiff names the first difference between got and want (both
// sorted as readServer sorts them): "" when they hold the same nodes, of
// the same data and stat.
func nodesDiff(got, want []cache.Node) string {
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			return "missing " + want[i].Path
		case i >= len(want):
			return "extra " + got[i].Path
		}
		g, s := got[i], want[i]
		if g.Path != s.Path || g.Stat.Czxid != s.Stat.Czxid || g.Stat.Mzxid != s.Stat.Mzxid || g.Stat.Version != s.Stat.Version || string(g.Data) != string(s.Data) {
			return fmt.Sprintf("cache %s v%d m%d %q, server %s v%d m%d %q", g.Path, g.Stat.Version, g.Stat.Mzxid, g.Data, s.Path, s.Stat.Version, s.Stat.Mzxid, s.Data)
		}
	}
	return ""
}
