package shared_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/shared"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var (
	connect    = testutil.Connect
	eventually = testutil.Eventually
)

// startCount returns a started shared count, closed at the end of the
// test.
func startCount(t testing.TB, c *recipes.Client, path string, seed int) *shared.Count {
	t.Helper()
	count, err := shared.NewCount(c, path, seed)
	require.NoError(t, err)
	require.NoError(t, count.Start(context.Background()))
	t.Cleanup(func() { _ = count.Close(context.Background()) })
	return count
}

// startValue returns a started shared value, closed at the end of the
// test.
func startValue(t testing.TB, c *recipes.Client, path string, seed []byte) *shared.Value {
	t.Helper()
	v, err := shared.NewValue(c, path, seed)
	require.NoError(t, err)
	require.NoError(t, v.Start(context.Background()))
	t.Cleanup(func() { _ = v.Close(context.Background()) })
	return v
}

func next[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		require.True(t, ok, "channel closed")
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing within 10s")
		var zero T
		return zero
	}
}

// The constructor touches nothing; Start creates the node with the seed
// (its parents as containers) and reads it; the seed does not overwrite a
// node that exists; the node holds Curator's 4 big-endian bytes.
func TestSharedCountLifecycle(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	admin := connect(t, zkc.Servers())

	count, err := shared.NewCount(c, "/shared/life/count", 7)
	require.NoError(t, err)
	ok, _, err := admin.Exists(ctx, "/shared/life/count")
	require.NoError(t, err)
	assert.False(t, ok, "the constructor touches nothing")
	assert.Equal(t, shared.VersionedValue[int]{Value: 7, Version: -1}, count.GetVersioned(), "the seed before Start")
	assert.ErrorIs(t, count.Set(ctx, 1), recipes.ErrNotStarted)
	err = count.CompareAndSet(ctx, count.GetVersioned(), 1)
	assert.ErrorIs(t, err, recipes.ErrNotStarted)

	heard := make(chan shared.VersionedValue[int], 10)
	defer count.Listen(func(v shared.VersionedValue[int]) { heard <- v })()
	require.NoError(t, count.Start(ctx))
	assert.ErrorIs(t, count.Start(ctx), recipes.ErrAlreadyStarted)
	assert.Equal(t, shared.VersionedValue[int]{Value: 7, Version: 0}, next(t, heard), "a listener added before Start hears the first value")
	data, _, err := admin.Get(ctx, "/shared/life/count")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 7}, data)

	other := startCount(t, admin, "/shared/life/count", 99)
	assert.Equal(t, 7, other.Get(), "the seed does not overwrite")
	require.NoError(t, other.Set(ctx, -2))
	assert.Equal(t, shared.VersionedValue[int]{Value: -2, Version: 1}, next(t, heard))
	eventually(t, 5*time.Second, "the watcher's cache", func() bool { return count.Get() == -2 })

	// A listener added now hears the current value first.
	late, stop := count.Subscribe()
	defer stop()
	assert.Equal(t, shared.VersionedValue[int]{Value: -2, Version: 1}, next(t, late))

	require.NoError(t, count.Close(ctx))
	require.NoError(t, count.Close(ctx), "Close twice")
	assert.ErrorIs(t, count.Set(ctx, 1), recipes.ErrClosed)
	assert.ErrorIs(t, count.Start(ctx), recipes.ErrClosed)
	_, open := <-late
	assert.False(t, open, "Close closes the subscriptions")
	ok, _, err = admin.Exists(ctx, "/shared/life/count")
	require.NoError(t, err)
	assert.True(t, ok, "the node stays")
}

// A node that is not a count fails Start and creates nothing; a count
// whose node is deleted keeps its last value, sees the node made again,
// and Set makes it again itself.
func TestSharedCountNotACountAndNodeDeleted(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	admin := connect(t, zkc.Servers())

	_, err := admin.Create(ctx, "/notcount", []byte("hello"), 0)
	require.NoError(t, err)
	bad, err := shared.NewCount(c, "/notcount", 1)
	require.NoError(t, err)
	err = bad.Start(ctx)
	assert.ErrorIs(t, err, recipes.ErrCorrupt, "data of another length is a corrupt node, as the atomic values read it")
	assert.NotErrorIs(t, err, recipes.ErrInvalidArgument, "the caller's arguments were fine")
	_, err = shared.NewCount(c, "/big", 1<<40)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)

	count := startCount(t, c, "/shared/deleted", 3)
	changes, stop := count.Subscribe()
	defer stop()
	assert.Equal(t, 3, next(t, changes).Value)
	require.NoError(t, admin.Delete(ctx, "/shared/deleted", -1))
	_, err = admin.Create(ctx, "/shared/deleted", []byte{0, 0, 0, 4}, 0)
	require.NoError(t, err)
	assert.Equal(t, shared.VersionedValue[int]{Value: 4, Version: 0}, next(t, changes), "the node made again, its versions afresh")

	require.NoError(t, admin.Delete(ctx, "/shared/deleted", -1))
	require.NoError(t, count.Set(ctx, 5), "Set makes the node again")
	data, _, err := admin.Get(ctx, "/shared/deleted")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0, 0, 5}, data)
	assert.Equal(t, 5, count.Get())
}

// Value: raw bytes, the same lifecycle and listener rule; TrySet
// wins only from the current version.
func TestSharedValue(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	a := startValue(t, connect(t, zkc.Servers()), "/shared/value", []byte("seed"))
	b := startValue(t, connect(t, zkc.Servers()), "/shared/value", nil)
	assert.Equal(t, []byte("seed"), b.Get())
	assert.Equal(t, "/shared/value", b.Path())

	changes, stop := b.Subscribe()
	defer stop()
	assert.Equal(t, shared.VersionedValue[[]byte]{Value: []byte("seed"), Version: 0}, next(t, changes))

	prev := a.GetVersioned()
	require.NoError(t, a.CompareAndSet(ctx, prev, []byte("one")))
	err := a.CompareAndSet(ctx, prev, []byte("two"))
	assert.ErrorIs(t, err, recipes.ErrConflict, "a stale version loses")
	assert.Equal(t, shared.VersionedValue[[]byte]{Value: []byte("one"), Version: 1}, a.GetVersioned())
	assert.Equal(t, shared.VersionedValue[[]byte]{Value: []byte("one"), Version: 1}, next(t, changes))

	require.NoError(t, b.Set(ctx, []byte{}))
	assert.Equal(t, shared.VersionedValue[[]byte]{Value: []byte{}, Version: 2}, next(t, changes))
	got := a.Get()
	eventually(t, 5*time.Second, "a sees the empty value", func() bool { got = a.Get(); return len(got) == 0 })
	got = append(got, 'x') // the caller's copy
	assert.Empty(t, a.Get())
}

// Concurrent CompareAndSet from several clients: exactly one wins per version.
func TestSharedCountTrySetOneWinnerPerVersion(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const clients, rounds = 5, 10
	counts := make([]*shared.Count, clients)
	for i := range counts {
		counts[i] = startCount(t, connect(t, zkc.Servers()), "/shared/trycount", 0)
	}
	changes, stop := counts[0].Subscribe()
	defer stop()
	assert.Equal(t, counts[0].GetVersioned(), <-changes, "the current value first")
	for r := 0; r < rounds; r++ {
		eventually(t, 5*time.Second, "everyone sees the same version", func() bool {
			v := counts[0].GetVersioned()
			for _, sc := range counts[1:] {
				if sc.GetVersioned() != v {
					return false
				}
			}
			return true
		})
		prev := counts[0].GetVersioned()
		var wins atomic.Int32
		var wg sync.WaitGroup
		for _, sc := range counts {
			wg.Add(1)
			go func(sc *shared.Count) {
				defer wg.Done()
				err := sc.CompareAndSet(ctx, prev, prev.Value+1)
				if err == nil {
					wins.Add(1)
				} else {
					assert.ErrorIs(t, err, recipes.ErrConflict)
				}
			}(sc)
		}
		wg.Wait()
		assert.Equal(t, int32(1), wins.Load(), "round %d: one winner", r)
		select {
		case v := <-changes:
			assert.Equal(t, shared.VersionedValue[int]{Value: prev.Value + 1, Version: prev.Version + 1}, v, "the listener gets the version it can CompareAndSet from")
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: no change notification", r)
		}
	}
	assert.Equal(t, rounds, counts[0].Get())
	require.NoError(t, counts[0].Close(ctx))
	require.NoError(t, counts[0].Close(ctx), "Close twice")
}

// Many clients add to one count with CompareAndSet, each retrying from the
// version it is given: the total is exact.
func TestSharedCountTrySetTotal(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const clients, adds = 4, 10
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		sc := startCount(t, connect(t, zkc.Servers()), "/shared/total", 0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < adds; {
				prev := sc.GetVersioned()
				err := sc.CompareAndSet(ctx, prev, prev.Value+1)
				if err == nil {
					n++
				} else if !assert.ErrorIs(t, err, recipes.ErrConflict) {
					return
				}
			}
		}()
	}
	wg.Wait()
	check := startCount(t, connect(t, zkc.Servers()), "/shared/total", 0)
	assert.Equal(t, clients*adds, check.Get())
}

// A count follows its node across a session expiry: a value set while
// its session was gone is read after the new session begins.
func TestSharedCountAcrossSessionExpiry(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	ctx := context.Background()
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second))
	admin := connect(t, zkc.Servers())
	count := startCount(t, c, "/shared/expiry", 1)
	_, err := admin.Create(ctx, "/shared/expiry-probe", nil, 0)
	require.NoError(t, err)
	// An ephemeral of c's session shows when the server expires it.
	_, err = c.Create(ctx, "/shared/expiry-eph", nil, zk.FlagEphemeral)
	require.NoError(t, err)

	proxy.Blackhole()
	eventually(t, 20*time.Second, "the server expires the session", func() bool {
		ok, _, err := admin.Exists(ctx, "/shared/expiry-eph")
		return err == nil && !ok
	})
	_, err = admin.Set(ctx, "/shared/expiry", []byte{0, 0, 0, 9}, -1)
	require.NoError(t, err)
	proxy.Restore()
	eventually(t, 20*time.Second, "the count reads 9 in the new session", func() bool { return count.Get() == 9 })
}
