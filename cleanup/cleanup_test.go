package cleanup_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cleanup"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var (
	connect    = testutil.Connect
	eventually = testutil.Eventually
)

// The container check interval the zktest servers run with.
const checkInterval = time.Second

// lockKeys locks and releases keys distinct paths under parent, from
// several goroutines and sessions.
func lockKeys(t *testing.T, servers []string, parent string, keys int, opts ...recipes.Option) {
	t.Helper()
	ctx := context.Background()
	const workers = 16
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	var c *recipes.Client
	for w := 0; w < workers; w++ {
		if w%4 == 0 { // four sessions, four goroutines each
			c = connect(t, servers, opts...)
		}
		wg.Add(1)
		go func(c *recipes.Client) {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(keys) {
					return
				}
				m, err := mutex.New(c, fmt.Sprintf("%s/key-%d", parent, i))
				if err == nil {
					_, err = m.Acquire(ctx)
				}
				if err == nil {
					err = m.Release(ctx)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// peakDuring runs fn while sampling the server's znode count, and returns
// the largest count seen.
func peakDuring(t *testing.T, zkc *zktest.Cluster, fn func()) int {
	t.Helper()
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if n, err := zkc.ZnodeCount(0); err == nil && int64(n) > peak.Load() {
				peak.Store(int64(n))
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	<-sampled
	return max(int(peak.Load()), znodes(t, zkc))
}

func znodes(t *testing.T, zkc *zktest.Cluster) int {
	t.Helper()
	n, err := zkc.ZnodeCount(0)
	require.NoError(t, err)
	return n
}

// 10,000 distinct keys locked and released under one parent: with
// containers the server removes every parent within two check intervals;
// with containers off, the Reaper does.
func TestNoGrowth(t *testing.T) {
	const keys = 10000
	t.Run("containers", func(t *testing.T) {
		zkc := zktest.Start(t)
		c := connect(t, zkc.Servers())
		require.NoError(t, (*engine.Client)(c).EnsureContainers(context.Background(), "/growth"))
		_, err := c.Create(context.Background(), "/growth/anchor", nil, 0) // keeps the parent itself
		require.NoError(t, err)
		base := znodes(t, zkc)
		start := time.Now()
		peak := peakDuring(t, zkc, func() { lockKeys(t, zkc.Servers(), "/growth", keys) })
		done := time.Now()
		eventually(t, 2*checkInterval+time.Second, "back to the baseline", func() bool { return znodes(t, zkc) <= base })
		t.Logf("containers: znodes %d before, %d at the peak of %d keys (%v), back to %d %v later",
			base, peak, keys, done.Sub(start).Round(time.Millisecond), znodes(t, zkc), time.Since(done).Round(time.Millisecond))
	})
	t.Run("reaper", func(t *testing.T) {
		zkc := zktest.Start(t)
		c := connect(t, zkc.Servers(), recipes.WithoutContainers())
		require.False(t, (*engine.Client)(c).UsesContainers())
		_, err := c.Create(context.Background(), "/growth", nil, 0)
		require.NoError(t, err)
		base := znodes(t, zkc)
		start := time.Now()
		peak := peakDuring(t, zkc, func() { lockKeys(t, zkc.Servers(), "/growth", keys, recipes.WithoutContainers()) })
		done := time.Now()
		res, err := cleanup.Scan(context.Background(), c, "/growth")
		require.NoError(t, err)
		assert.Equal(t, keys, res.EmptyParents, "persistent parents left behind")

		r, err := cleanup.New(c, cleanup.WithParents("/growth"),
			cleanup.WithThreshold(200*time.Millisecond), cleanup.WithChecks(2))
		require.NoError(t, err)
		require.NoError(t, r.Start(context.Background()))
		defer r.Close(context.Background())
		eventually(t, 60*time.Second, "back to the baseline", func() bool { return znodes(t, zkc) <= base })
		t.Logf("reaper: znodes %d before, %d at the peak of %d keys (%v), back to %d %v later; %+v",
			base, peak, keys, done.Sub(start).Round(time.Millisecond), znodes(t, zkc), time.Since(done).Round(time.Millisecond), r.Stats())
		assert.Equal(t, uint64(keys), r.Stats().Reaped)
		ok, _, err := c.Exists(context.Background(), "/growth")
		require.NoError(t, err)
		assert.True(t, ok, "the watched parent itself stays")
	})
}

// 8 goroutines lock and release random keys from a set of 50 while a
// Reaper with a tiny threshold races them: no lock operation fails, each
// key's holds never overlap, and no node with a child is ever deleted (the
// server refuses such a delete; the Reaper counts the refusals).
func TestReaperRacesLockers(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers(), recipes.WithoutContainers())
	_, err := c.Create(ctx, "/race", nil, 0)
	require.NoError(t, err)
	r, err := cleanup.New(c, cleanup.WithParents("/race"), cleanup.WithThreshold(20*time.Millisecond), cleanup.WithChecks(2))
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	defer r.Close(ctx)

	const keys, workers, ops = 50, 8, 150
	var holders [keys]atomic.Int32
	var overlaps atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wc := connect(t, zkc.Servers(), recipes.WithoutContainers())
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(seed, seed))
			for i := 0; i < ops; i++ {
				k := rnd.IntN(keys)
				m, err := mutex.New(wc, fmt.Sprintf("/race/key-%d", k))
				if err != nil {
					errs <- err
					return
				}
				if _, err := m.Acquire(ctx); err != nil {
					errs <- fmt.Errorf("lock %d: %w", k, err)
					return
				}
				if holders[k].Add(1) != 1 {
					overlaps.Add(1)
				}
				holders[k].Add(-1)
				if err := m.Release(ctx); err != nil {
					errs <- fmt.Errorf("unlock %d: %w", k, err)
					return
				}
			}
		}(uint64(w))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Zero(t, overlaps.Load(), "mutual exclusion per key")
	eventually(t, 10*time.Second, "every key reaped", func() bool {
		kids, _, err := c.Children(ctx, "/race")
		return err == nil && len(kids) == 0
	})
	st := r.Stats()
	t.Logf("reaper: %+v", st)
	assert.Greater(t, st.Reaped, uint64(0))
}

// Parents left by go-zookeeper's zk.Lock and by Kazoo's lock (persistent)
// are reaped; Scan counts them before and none after.
func TestForeignParentsAreReaped(t *testing.T) {
	zkc := zktest.Start(t, zktest.WithoutTLS()) // plain: the Kazoo holders speak plain ZooKeeper
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	conn := c.UnsafeConn()
	for i := 0; i < 5; i++ {
		l := zk.NewLock(conn, fmt.Sprintf("/foreign/gozk/key-%d", i), zk.WorldACL(zk.PermAll))
		require.NoError(t, l.Lock())
		require.NoError(t, l.Unlock())
	}
	kazoo := 0
	if err := interop.KazooAvailable(); errors.Is(err, interop.ErrUnavailable) {
		t.Logf("no Kazoo parents: %v", err)
	} else {
		require.NoError(t, err)
		dir := t.TempDir()
		for i := 0; i < 3; i++ {
			p, err := interop.StartKazoo(ctx, dir, "holder", zkc.ConnectString(), fmt.Sprintf("/foreign/kazoo/key-%d", i))
			require.NoError(t, err)
			require.NoError(t, p.WaitLine(ctx, "ACQUIRED"))
			require.NoError(t, p.CloseStdin())
			require.NoError(t, p.WaitLine(ctx, "RELEASED"))
			require.NoError(t, p.Wait())
			kazoo++
		}
	}
	res, err := cleanup.Scan(ctx, c, "/foreign")
	require.NoError(t, err)
	assert.Equal(t, 5+kazoo, res.EmptyParents, "%+v", res)

	r, err := cleanup.New(c, cleanup.WithParents("/foreign/gozk", "/foreign/kazoo"),
		cleanup.WithThreshold(100*time.Millisecond), cleanup.WithChecks(2))
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	defer r.Close(ctx)
	eventually(t, 10*time.Second, "foreign parents reaped", func() bool {
		res, err := cleanup.Scan(ctx, c, "/foreign")
		return err == nil && res.EmptyParents == 2-boolInt(kazoo == 0) // the watched parents themselves stay
	})
	res, err = cleanup.Scan(ctx, c, "/foreign/gozk")
	require.NoError(t, err)
	assert.Zero(t, res.Nodes, "nothing left under the parent")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Two reapers with leader election: only the leader deletes; when it
// closes, the other takes over.
func TestReapersElectOne(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	_, err := c.Create(ctx, "/elect", nil, 0)
	require.NoError(t, err)
	mk := func(id string) *cleanup.Reaper {
		rc := connect(t, zkc.Servers())
		r, err := cleanup.New(rc, cleanup.WithParents("/elect"), cleanup.WithThreshold(40*time.Millisecond),
			cleanup.WithChecks(2), cleanup.WithLeaderElection("/reapers", id))
		require.NoError(t, err)
		require.NoError(t, r.Start(ctx))
		return r
	}
	a := mk("a")
	eventually(t, 5*time.Second, "a leads", func() bool {
		l, _, err := c.Children(ctx, "/reapers")
		return err == nil && len(l) == 1
	})
	b := mk("b")
	defer b.Close(ctx)
	orphan := func(name string) {
		_, err := c.Create(ctx, "/elect/"+name, nil, 0)
		require.NoError(t, err)
	}
	orphan("one")
	eventually(t, 5*time.Second, "a reaps", func() bool { return a.Stats().Reaped == 1 })
	assert.Zero(t, b.Stats().Reaped, "the follower deletes nothing")
	assert.Zero(t, b.Stats().Checked, "the follower does not even look")
	require.NoError(t, a.Close(ctx))
	require.NoError(t, a.Close(ctx), "Close twice")
	orphan("two")
	eventually(t, 10*time.Second, "b took over", func() bool { return b.Stats().Reaped == 1 })
}

// Explicit paths and modes.
func TestReaperPathsAndModes(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	for _, p := range []string{"/modes", "/modes/forever", "/modes/once", "/modes/busy", "/modes/busy/child"} {
		_, err := c.Create(ctx, p, nil, 0)
		require.NoError(t, err)
	}
	r, err := cleanup.New(c, cleanup.WithPaths("/modes/once", "/modes/busy"), cleanup.WithMode(cleanup.ReapUntilDelete),
		cleanup.WithThreshold(40*time.Millisecond), cleanup.WithChecks(2))
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	defer r.Close(ctx)
	eventually(t, 5*time.Second, "once reaped", func() bool {
		ok, _, err := c.Exists(ctx, "/modes/once")
		return err == nil && !ok
	})
	eventually(t, 5*time.Second, "dropped after its delete", func() bool { return r.Tracked() == 1 })
	ok, _, err := c.Exists(ctx, "/modes/busy")
	require.NoError(t, err)
	assert.True(t, ok, "a node with a child stays")
	ok, _, err = c.Exists(ctx, "/modes/forever")
	require.NoError(t, err)
	assert.True(t, ok, "a node nobody asked about stays")
}

// Bad input returns sentinel errors; nothing panics.
func TestBadInput(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	_, err := cleanup.New(nil)
	assert.ErrorIs(t, err, recipes.ErrNilClient)
	for name, opt := range map[string]cleanup.Option{
		"threshold": cleanup.WithThreshold(0),
		"checks":    cleanup.WithChecks(0),
		"depth":     cleanup.WithDepth(0),
		"mode":      cleanup.WithMode(7),
		"rate":      cleanup.WithRateLimit(-1),
		"logger":    cleanup.WithLogger(nil),
		"nil":       nil,
	} {
		_, err := cleanup.New(c, opt)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, name)
	}
	for _, p := range []string{"", "rel", "/trail/", "/a/../b"} {
		_, err := cleanup.New(c, cleanup.WithPaths(p))
		assert.ErrorIs(t, err, recipes.ErrInvalidPath, "%q", p)
		_, err = cleanup.New(c, cleanup.WithParents(p))
		assert.ErrorIs(t, err, recipes.ErrInvalidPath, "%q", p)
		_, err = cleanup.Scan(ctx, c, p)
		assert.ErrorIs(t, err, recipes.ErrInvalidPath, "%q", p)
	}
	_, err = cleanup.New(c, cleanup.WithPaths("/"))
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)
	_, err = cleanup.New(c, cleanup.WithLeaderElection("bad", "id"))
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)
	var zero cleanup.Reaper
	assert.ErrorIs(t, zero.Start(ctx), recipes.ErrInvalidArgument)
	assert.ErrorIs(t, zero.Close(ctx), recipes.ErrInvalidArgument)
	_, err = cleanup.Scan(nil, c, "/x") //nolint:staticcheck // the nil context is the point
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)

	r, err := cleanup.New(c, cleanup.WithParents("/x"))
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	assert.ErrorIs(t, r.Start(ctx), recipes.ErrAlreadyStarted, "started twice")
	require.NoError(t, r.Close(ctx))
	assert.ErrorIs(t, r.Start(ctx), recipes.ErrClosed)
	closed := connect(t, zkc.Servers())
	require.NoError(t, closed.Close(context.Background()))
	_, err = cleanup.New(closed)
	assert.ErrorIs(t, err, recipes.ErrClosed)
	_, err = cleanup.Scan(ctx, closed, "/x")
	assert.ErrorIs(t, err, recipes.ErrClosed)
}

// A parent given before it exists is reaped under once it is created, to
// WithDepth levels (a semaphore's <key>/locks and <key>/leases, then
// <key>), and a key made again after its reaping is found and reaped
// again.
func TestReaperDepthAndLateParent(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers(), recipes.WithoutContainers())
	r, err := cleanup.New(c, cleanup.WithParents("/late"), cleanup.WithDepth(2),
		cleanup.WithThreshold(40*time.Millisecond), cleanup.WithChecks(2))
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	defer r.Close(ctx)
	mk := func(paths ...string) {
		t.Helper()
		for _, p := range paths {
			_, err := c.Create(ctx, p, nil, 0)
			require.NoError(t, err)
		}
	}
	gone := func(what string) {
		t.Helper()
		eventually(t, 10*time.Second, what, func() bool {
			kids, _, err := c.Children(ctx, "/late")
			return err == nil && len(kids) == 0 && r.Tracked() == 0
		})
	}
	mk("/late", "/late/k1", "/late/k1/locks", "/late/k1/leases", "/late/k2")
	gone("every key and its parts reaped")
	assert.Equal(t, uint64(4), r.Stats().Reaped)
	mk("/late/k1", "/late/k1/leases")
	gone("the key made again reaped again")
	assert.Equal(t, uint64(6), r.Stats().Reaped)
	ok, _, err := c.Exists(ctx, "/late")
	require.NoError(t, err)
	assert.True(t, ok, "the watched parent itself stays")
}
