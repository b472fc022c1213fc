package cache_test

import (
	"context"
	"log/slog"
	"slices"
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

// One fault, one Resynced: the server stops (SIGSTOP) while the cache
// reads a change and the client's link goes silent (black-holed); the
// server resumes and expires the session (an ephemeral node of it goes),
// then the link comes back and the client gets a new session. (With the
// link open, a reconnect queued during the pause could reach the resumed
// server before it expired the session, and renew it: on a loaded machine
// it did, 2 runs in 13.) The failed read makes the cache read
// everything again under the retry policy, and the new session's watch
// brings a PersistentResync: together they make one full read, and the
// listeners hear Resynced exactly once (a "reload everything" listener
// runs once), never the same event twice in a row. A write after it is
// the quiet point: its event comes after everything the fault caused.
func TestOneResyncPerSessionExpiry(t *testing.T) {
	zkc := zktest.Start(t, zktest.WithTickTime(100*time.Millisecond))
	if !zkc.Controllable() {
		t.Skip("needs a server this test controls")
	}
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	var logs lockedBuffer
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(time.Second),
		recipes.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	w := connect(t, zkc.Servers())
	states := testutil.WatchStates(t, c)
	mustCreate(t, w, "/rs", "")
	for _, n := range []string{"a", "b", "c"} {
		mustCreate(t, w, "/rs/"+n, n)
		mustCreate(t, w, "/rs/"+n+"/x", n+"x")
	}
	cc, err := cache.New(c, "/rs")
	require.NoError(t, err)
	var rec recorder
	defer cc.Listen(rec.add, cache.AfterInitialized())()
	start(t, cc)
	defer func() {
		if t.Failed() {
			t.Logf("states %v\nheard %q\nlogs:\n%s", states.Snapshot(), rec.lines(), logs.String())
		}
	}()
	sid := c.SessionID()
	_, err = c.Create(context.Background(), "/rs-alive", nil, zk.FlagEphemeral) // gone with the session
	require.NoError(t, err)

	// The fault comes while the cache reads a change (the server stops
	// as the cache's read reaches it): the read fails, and the cache
	// reads everything again, under the retry policy, until it can.
	paused := make(chan error, 1)
	proxy.CutAfterClientSendsFunc([]byte("/rs/a"), func() {
		err := zkc.Pause(0)
		proxy.Blackhole() // no reconnect reaches the server from now on
		paused <- err
	})
	go w.Set(context.Background(), "/rs/a", []byte("during"), -1) // its reply may be lost in the pause
	select {
	case err := <-paused:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the cache never read the change")
	}
	// The client declares LOST once SUSPENDED has lasted the session
	// timeout; the server, resumed, hears nothing from it and expires the
	// session; then the link comes back.
	states.WaitFor(t, 0, 15*time.Second, recipes.StateSuspended, recipes.StateLost)
	require.NoError(t, zkc.Resume(0))
	eventually(t, 30*time.Second, "the server expired the session", func() bool {
		ok, _, err := w.Exists(context.Background(), "/rs-alive")
		return err == nil && !ok
	})
	proxy.Restore()
	eventually(t, 20*time.Second, "a new session", func() bool {
		return c.SessionID() != sid && (c.State() == recipes.StateConnected || c.State() == recipes.StateReconnected)
	})
	rec.waitFor(t, cache.Resynced, 1)

	// The quiet point: an event after everything the fault caused.
	mustSet(t, c, "/rs/a", "after")
	eventually(t, 15*time.Second, "the write's event", func() bool {
		return slices.Contains(rec.lines(), "NODE_CHANGED /rs/a =after")
	})
	assert.Equal(t, 1, rec.count(cache.Resynced), "Resynced heard once: %q", rec.lines())
	assert.Equal(t, int64(1), cc.Resyncs(), "one resync")
	got := rec.lines()
	for i := 1; i < len(got); i++ {
		assert.NotEqual(t, got[i-1], got[i], "the same event twice in a row: %q", got)
	}
	assert.True(t, equalsServer(t, c, cc, "/rs", -1, false))
}
