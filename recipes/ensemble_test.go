package recipes_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// Following dynamic reconfiguration (Curator's EnsembleTracker) against
// real ensembles started WithReconfig: members added and removed while a
// client holds a lock and keeps a cache.

// startReconfig starts an n-member ensemble that accepts reconfig, or
// skips the test where it cannot run.
func startReconfig(t *testing.T, n int) *zktest.Cluster {
	t.Helper()
	if v := strings.TrimSpace(zktestVersion()); v != "" && v != "3.9" {
		t.Skipf("reconfiguration is tested on ZooKeeper 3.9 (ZK_TEST_VERSION=%s; eval \"$(bash scripts/zk39-env.sh)\")", v)
	}
	zkc := zktest.StartEnsemble(t, n, zktest.WithReconfig())
	if !zkc.Controllable() {
		t.Skip("needs servers this test starts: it adds members")
	}
	if !strings.HasPrefix(zkc.Version(), "3.9") {
		t.Skipf("reconfiguration is tested on ZooKeeper 3.9, not %s (eval \"$(bash scripts/zk39-env.sh)\")", zkc.Version())
	}
	return zkc
}

func zktestVersion() string { return os.Getenv(zktest.EnvVersion) }

// A member is added (the client learns it and stays where it is), then
// the member the client is connected to is removed: the client moves to
// the remaining one with its session, its lock node and its cache.
func TestEnsembleTrackingMovesOffARemovedMember(t *testing.T) {
	zkc := startReconfig(t, 1)
	ctx := context.Background()
	c := connect(t, zkc.Servers(), recipes.WithSessionTimeout(8*time.Second))
	sid := c.SessionID()
	assert.Equal(t, zkc.Servers(), (*engine.Client)(c).EnsembleServers(), "the member the client was given")

	m, err := mutex.New(c, "/ensemble/lock")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/ensemble-data", nil, 0)
	require.NoError(t, err)
	cc, err := cache.New(c, "/ensemble-data")
	require.NoError(t, err)
	require.NoError(t, cc.Start(ctx))
	t.Cleanup(func() { _ = cc.Close(context.Background()) })
	require.NoError(t, cc.WaitReady(ctx))
	states := testutil.WatchStates(t, c)

	added, err := zkc.AddMember(false)
	require.NoError(t, err)
	require.NoError(t, zkc.Reconfig([]int{added}, nil))
	eventually(t, 15*time.Second, "the client knows the new member", func() bool {
		return slices.Equal(sorted(zkc.Servers()), (*engine.Client)(c).EnsembleServers())
	})
	assert.Equal(t, zkc.Servers()[0], c.UnsafeConn().Server(), "the client stays on its server, still a member")
	assert.Equal(t, []recipes.State{recipes.StateConnected}, states.Snapshot(), "no reconnection for an added member")

	require.NoError(t, zkc.Reconfig(nil, []int{0}))
	// The removed server, still running, drops its clients and serves on
	// as a non-voting learner: a client that does not follow reconnects
	// to it. This one may too, before it reads the new configuration
	// there and leaves it.
	eventually(t, 20*time.Second, "the client connected to the remaining member", func() bool {
		return slices.Equal([]string{zkc.Servers()[added]}, (*engine.Client)(c).EnsembleServers()) &&
			c.UnsafeConn().Server() == zkc.Servers()[added] && c.State().IsConnected()
	})
	states.WaitFor(t, 1, 20*time.Second, recipes.StateSuspended, recipes.StateReconnected)
	assert.Equal(t, sid, c.SessionID(), "the same session")
	assert.False(t, lease.IsLost(), "the lock's session lives on")
	select {
	case <-lease.Done():
		t.Log("the hold was reported by its signal (SUSPENDED under the standard error policy)")
	default:
	}
	ok, st, err := c.Exists(ctx, lease.Node())
	require.NoError(t, err)
	require.True(t, ok, "the lock node survives the move")
	assert.Equal(t, sid, st.EphemeralOwner)

	writer := connect(t, []string{zkc.Servers()[added]}, recipes.WithoutEnsembleTracking())
	_, err = writer.Create(ctx, "/ensemble-data/after", []byte("x"), 0)
	require.NoError(t, err)
	eventually(t, 10*time.Second, "the cache sees a write made after the removal", func() bool {
		_, ok := cc.Get("/ensemble-data/after")
		return ok
	})
}

// The client was given one member of two, and learns the other at once;
// both are removed later: it follows the ensemble to the new member and
// keeps working there after the old ones are gone.
func TestEnsembleTrackingOutlivesItsSeedMembers(t *testing.T) {
	zkc := startReconfig(t, 2)
	ctx := context.Background()
	c := connect(t, zkc.Servers()[:1], recipes.WithSessionTimeout(8*time.Second))
	sid := c.SessionID()
	eventually(t, 10*time.Second, "the client learns the other member at its first reading", func() bool {
		return slices.Equal(sorted(zkc.Servers()), (*engine.Client)(c).EnsembleServers())
	})

	added, err := zkc.AddMember(false)
	require.NoError(t, err)
	require.NoError(t, zkc.Reconfig([]int{added}, nil))
	require.NoError(t, zkc.Reconfig(nil, []int{0, 1}))
	eventually(t, 20*time.Second, "the client follows the ensemble to its new member", func() bool {
		return slices.Equal([]string{zkc.Servers()[added]}, (*engine.Client)(c).EnsembleServers()) &&
			c.UnsafeConn().Server() == zkc.Servers()[added]
	})
	require.NoError(t, zkc.Kill(0))
	require.NoError(t, zkc.Kill(1))

	_, err = c.Create(ctx, "/outlived", []byte("x"), 0)
	require.NoError(t, err, "the client works through the new member")
	assert.Equal(t, zkc.Servers()[added], c.UnsafeConn().Server())
	assert.Equal(t, sid, c.SessionID(), "the same session")
}

// WithoutEnsembleTracking and a host provider of the user's keep to the
// addresses given.
func TestEnsembleTrackingOff(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers(), recipes.WithoutEnsembleTracking())
	assert.Nil(t, (*engine.Client)(c).EnsembleServers())
	c = connect(t, zkc.Servers(), recipes.WithHostProvider(&zk.DNSHostProvider{}))
	assert.Nil(t, (*engine.Client)(c).EnsembleServers())
	c = connect(t, zkc.Servers())
	assert.Equal(t, zkc.Servers(), (*engine.Client)(c).EnsembleServers(), "a standalone server: the address given")
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
