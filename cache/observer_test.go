package cache_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// observerEnsemble starts 3 voters and 1 observer (member 3) and returns
// them with a client of the voters and one of the observer only.
func observerEnsemble(t *testing.T) (zkc *zktest.Cluster, voter, observer *recipes.Client) {
	t.Helper()
	zkc = zktest.StartEnsemble(t, 3, zktest.WithObservers(1))
	if !zkc.Controllable() {
		t.Skip("restarts the observer: needs servers zktest starts")
	}
	require.Equal(t, []string{zkc.Servers()[3]}, zkc.Observers())
	return zkc, connect(t, zkc.Voters()), connect(t, zkc.Observers())
}

// burst makes n creates, then sets every other one and deletes every
// third, through w, round r's nodes named r-i under root.
func burst(t *testing.T, w *recipes.Client, root string, r, n int) {
	t.Helper()
	ctx := context.Background()
	path := func(i int) string { return fmt.Sprintf("%s/%d-%03d", root, r, i) }
	require.NoError(t, inParallel(n, func(i int) error {
		_, err := w.Create(ctx, path(i), []byte("v0"), 0)
		return err
	}))
	require.NoError(t, inParallel(n, func(i int) error {
		switch {
		case i%3 == 0:
			return w.Delete(ctx, path(i), -1)
		case i%2 == 0:
			_, err := w.Set(ctx, path(i), []byte("v1"), -1)
			return err
		}
		return nil
	}))
}

// logSession says whether c's session after the observer's restart is
// the one it had before (sid) or a new one.
func logSession(t *testing.T, c *recipes.Client, sid int64) {
	if c.SessionID() == sid {
		t.Logf("the session 0x%x came back", sid)
	} else {
		t.Logf("session 0x%x ended; a new one, 0x%x", sid, c.SessionID())
	}
}

// sameNodes reports whether got equals want node for node (path, data,
// version, czxid, mzxid).
func sameNodes(got, want []cache.Node) bool {
	return slices.EqualFunc(got, want, func(a, b cache.Node) bool {
		return a.Path == b.Path && string(a.Data) == string(b.Data) && a.Stat.Version == b.Stat.Version &&
			a.Stat.Czxid == b.Stat.Czxid && a.Stat.Mzxid == b.Stat.Mzxid
	})
}

// A cache on a client connected only to an observer converges with the
// ensemble after a burst of writes through a voter, and again after the
// observer is killed (more writes meanwhile) and restarted, whether the
// session comes back or a new one is made.
func TestObserverCacheConverges(t *testing.T) {
	zkc, w, r := observerEnsemble(t)
	const root = "/obs-cache"
	mustCreate(t, w, root, "root")
	cc, err := cache.New(r, root)
	require.NoError(t, err)
	start(t, cc)
	converged := func(what string) {
		t.Helper()
		want, err := readServer(w, root, -1) // w made every write: it reads them all
		require.NoError(t, err)
		eventually(t, 30*time.Second, what, func() bool { return sameNodes(cc.Snapshot(), want) })
	}
	burst(t, w, root, 1, 300)
	converged("the observer's cache equal to the ensemble after a burst")

	sid := r.SessionID()
	require.NoError(t, zkc.Kill(3))
	burst(t, w, root, 2, 300)
	require.NoError(t, zkc.Restart(3))
	converged("the observer's cache equal to the ensemble after the observer's restart")
	logSession(t, r, sid)
	burst(t, w, root, 3, 100)
	converged("the observer's cache equal to the ensemble after a burst on the restarted observer")
}
