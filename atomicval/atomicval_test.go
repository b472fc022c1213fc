package atomicval_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/shared"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var connect = testutil.Connect

// servers returns the package's shared server; each test works under a
// path of its own (base).
func servers(t *testing.T) []string { return testutil.SharedServer(t).Servers() }

func base(t *testing.T) string { return "/atomicval/" + t.Name() + "-" + uuid.NewString()[:8] }

// quick is an optimistic policy for contended tests: short jittered
// pauses, never giving up (the test's ctx bounds it).
func quick() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = time.Millisecond
	b.MaxInterval = 20 * time.Millisecond
	b.MaxElapsedTime = 0
	b.Reset()
	return b
}

// once is a policy of one try.
func once() backoff.BackOff { return &backoff.StopBackOff{} }

// hammer runs clients×goroutines workers, each calling Increment until
// it has made `each` increments, and returns the number of calls that
// failed with ErrConflict and the tries summed over all calls.
func hammer(t *testing.T, ctx context.Context, path string, clients, goroutines, each int, opts ...atomicval.Option) (failed, optimistic, promoted int64) {
	t.Helper()
	var wg sync.WaitGroup
	var nFailed, nOpt, nProm atomic.Int64
	for range clients {
		c := connect(t, servers(t))
		n, err := atomicval.NewInt64(c, path, opts...)
		require.NoError(t, err)
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for done := 0; done < each; {
					res, err := n.Increment(ctx)
					nOpt.Add(int64(res.Stats.OptimisticTries))
					nProm.Add(int64(res.Stats.PromotedTries))
					switch {
					case err == nil:
						if !res.Succeeded || res.PostValue != res.PreValue+1 {
							t.Errorf("increment succeeded with %+v", res)
						}
						done++
					case errors.Is(err, recipes.ErrConflict):
						if res.Succeeded {
							t.Errorf("a failed increment says it succeeded: %+v", res)
						}
						nFailed.Add(1)
					default:
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	return nFailed.Load(), nOpt.Load(), nProm.Load()
}

// Many goroutines on several clients increment one long: the total is
// exact, optimistic and promoted to the lock.
func TestInt64IncrementsExact(t *testing.T) {
	const clients, goroutines, each = 3, 4, 15
	want := int64(clients * goroutines * each)
	for _, tc := range []struct {
		name string
		opts func(lock string) []atomicval.Option
	}{
		{"optimistic", func(string) []atomicval.Option {
			return []atomicval.Option{atomicval.WithRetryPolicy(quick)}
		}},
		// One optimistic try, so that most updates are promoted.
		{"promoted", func(lock string) []atomicval.Option {
			return []atomicval.Option{atomicval.WithRetryPolicy(once),
				atomicval.WithPromotedToLock(atomicval.PromotedToLock{Path: lock, Timeout: 20 * time.Second, Retry: quick})}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			path := base(t) + "/count"
			failed, opt, prom := hammer(t, ctx, path, clients, goroutines, each, tc.opts(base(t)+"/lock")...)
			c := connect(t, servers(t))
			n, err := atomicval.NewInt64(c, path)
			require.NoError(t, err)
			got, err := n.Get(ctx)
			require.NoError(t, err)
			assert.Equal(t, want, got, "every acknowledged increment applied once")
			assert.Zero(t, failed, "no increment gave up")
			t.Logf("%d increments: %d optimistic tries, %d promoted tries", want, opt, prom)
			if tc.name == "promoted" {
				assert.Positive(t, prom, "some increments were promoted")
			}
			data, _, err := c.Get(ctx, path)
			require.NoError(t, err)
			assert.Len(t, data, 8, "Curator's 8 bytes")
		})
	}
}

// A policy that gives up: the calls that failed wrote nothing, the total
// is the number of calls that succeeded.
func TestInt64GivingUpWritesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	path := base(t) + "/count"
	const clients, goroutines, each = 2, 4, 15
	failed, _, _ := hammer(t, ctx, path, clients, goroutines, each, atomicval.WithRetryPolicy(once))
	n, err := atomicval.NewInt64(connect(t, servers(t)), path)
	require.NoError(t, err)
	got, err := n.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(clients*goroutines*each), got)
	t.Logf("%d calls gave up with ErrConflict", failed)
}

// CompareAndSet never creates and compares the value as a number;
// Initialize creates only if absent; TrySet, Set and the arithmetic
// do what Curator's do.
func TestInt64Semantics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, servers(t))
	path := base(t) + "/n"
	n, err := atomicval.NewInt64(c, path)
	require.NoError(t, err)
	exists := func() bool {
		ok, _, err := c.Exists(ctx, path)
		require.NoError(t, err)
		return ok
	}

	v, err := n.Get(ctx)
	require.NoError(t, err)
	assert.Zero(t, v, "a missing node reads as 0")
	assert.False(t, exists(), "Get creates nothing")

	res, err := n.CompareAndSet(ctx, 0, 5)
	assert.ErrorIs(t, err, recipes.ErrConflict, "compare-and-set never creates")
	assert.ErrorContains(t, err, "zkrecipes: atomic long "+path+": compare-and-set: no node")
	assert.False(t, res.Succeeded)
	assert.False(t, exists())

	ok, err := n.Initialize(ctx, 10)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = n.Initialize(ctx, 20)
	require.NoError(t, err)
	assert.False(t, ok, "the node exists")
	v, err = n.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(10), v, "the second Initialize changed nothing")

	res, err = n.CompareAndSet(ctx, 9, 11)
	assert.ErrorIs(t, err, recipes.ErrConflict)
	assert.ErrorContains(t, err, "the value is 10, not the expected 9")
	assert.Equal(t, atomicval.Result[int64]{PreValue: 10, Stats: res.Stats}, res)
	assert.Equal(t, 1, res.Stats.OptimisticTries)
	res, err = n.CompareAndSet(ctx, 10, 11)
	require.NoError(t, err)
	assert.True(t, res.Succeeded)
	assert.Equal(t, int64(10), res.PreValue)
	assert.Equal(t, int64(11), res.PostValue)

	res, err = n.Add(ctx, 100)
	require.NoError(t, err)
	assert.Equal(t, [2]int64{11, 111}, [2]int64{res.PreValue, res.PostValue})
	res, err = n.Subtract(ctx, 11)
	require.NoError(t, err)
	assert.Equal(t, int64(100), res.PostValue)
	res, err = n.Decrement(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(99), res.PostValue)
	res, err = n.TrySet(ctx, -7)
	require.NoError(t, err)
	assert.Equal(t, [2]int64{99, -7}, [2]int64{res.PreValue, res.PostValue})
	assert.Equal(t, 1, res.Stats.OptimisticTries)
	assert.Zero(t, res.Stats.PromotedTries)

	require.NoError(t, n.Set(ctx, 1<<40))
	v, err = n.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<40), v)

	// Set and the arithmetic create a missing node (and its
	// parents, as containers).
	err = c.Delete(ctx, path, -1)
	require.NoError(t, err)
	require.NoError(t, n.Set(ctx, 3))
	v, err = n.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), v)
	m, err := atomicval.NewInt64(c, base(t)+"/deep/er/n")
	require.NoError(t, err)
	res, err = m.Increment(ctx)
	require.NoError(t, err)
	assert.Equal(t, [2]int64{0, 1}, [2]int64{res.PreValue, res.PostValue})

	// Arithmetic wraps around as Java's long does.
	require.NoError(t, n.Set(ctx, 1<<63-1))
	res, err = n.Increment(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(-1<<63), res.PostValue)
}

// Empty data reads as 0; data of another length is corrupt, for every
// operation that reads it, and is left as it is.
func TestWrongLength(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, servers(t))
	dir := base(t)
	_, err := c.CreateWithParents(ctx, dir+"/empty", nil, 0)
	require.NoError(t, err)
	n, err := atomicval.NewInt64(c, dir+"/empty")
	require.NoError(t, err)
	v, err := n.Get(ctx)
	require.NoError(t, err)
	assert.Zero(t, v)
	res, err := n.CompareAndSet(ctx, 0, 4)
	require.NoError(t, err, "an empty node equals 0 (Curator compares bytes and fails here)")
	assert.Equal(t, int64(4), res.PostValue)

	for _, tc := range []struct {
		data []byte
		long bool // an Int64, else an Int32
	}{
		{[]byte{1, 2, 3}, true}, {make([]byte, 9), true}, {make([]byte, 4), true},
		{[]byte{1}, false}, {make([]byte, 8), false},
	} {
		name := fmt.Sprintf("long=%v/%d", tc.long, len(tc.data))
		t.Run(name, func(t *testing.T) {
			path := fmt.Sprintf("%s/%v-%d", dir, tc.long, len(tc.data))
			_, err := c.CreateWithParents(ctx, path, tc.data, 0)
			require.NoError(t, err)
			var calls map[string]func() error
			if tc.long {
				n, err := atomicval.NewInt64(c, path)
				require.NoError(t, err)
				calls = map[string]func() error{
					"get":       func() error { _, err := n.Get(ctx); return err },
					"increment": func() error { _, err := n.Increment(ctx); return err },
					"cas":       func() error { _, err := n.CompareAndSet(ctx, 0, 1); return err },
					"try-set":   func() error { _, err := n.TrySet(ctx, 1); return err },
				}
			} else {
				n, err := atomicval.NewInt32(c, path)
				require.NoError(t, err)
				calls = map[string]func() error{
					"get":       func() error { _, err := n.Get(ctx); return err },
					"increment": func() error { _, err := n.Increment(ctx); return err },
					"cas":       func() error { _, err := n.CompareAndSet(ctx, 0, 1); return err },
					"try-set":   func() error { _, err := n.TrySet(ctx, 1); return err },
				}
			}
			for op, call := range calls {
				err := call()
				assert.ErrorIs(t, err, recipes.ErrCorrupt, op)
				assert.ErrorContains(t, err, fmt.Sprintf("the node holds %d", len(tc.data)), op)
				assert.ErrorContains(t, err, "zkrecipes: atomic ", op)
			}
			data, _, err := c.Get(ctx, path)
			require.NoError(t, err)
			assert.Equal(t, tc.data, data, "left as it is")
		})
	}
}

// An Int32 and a SharedCount share a path: each sees the other's writes.
func TestInt32SharesSharedCount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, servers(t))
	path := base(t) + "/count"
	sc, err := shared.NewCount(c, path, 5)
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	defer sc.Close(ctx)
	changes, stop := sc.Subscribe()
	defer stop()
	require.Equal(t, 5, (<-changes).Value)

	n, err := atomicval.NewInt32(connect(t, servers(t)), path)
	require.NoError(t, err)
	v, err := n.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int32(5), v, "the Int32 reads the SharedCount's seed")
	res, err := n.Add(ctx, 10)
	require.NoError(t, err)
	assert.Equal(t, int32(15), res.PostValue)
	select {
	case got := <-changes:
		assert.Equal(t, 15, got.Value, "the SharedCount sees the Int32's add")
	case <-ctx.Done():
		t.Fatal("the SharedCount never saw the add")
	}
	require.NoError(t, sc.Set(ctx, -3))
	v, err = n.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int32(-3), v, "the Int32 reads the SharedCount's set")
	require.NoError(t, sc.CompareAndSet(ctx, sc.GetVersioned(), 1))
	_, err = n.CompareAndSet(ctx, 1, 2)
	require.NoError(t, err)
}

// Value: raw bytes; nil and empty are equal; Update computes from the
// current bytes.
func TestValue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, servers(t))
	path := base(t) + "/v"
	v, err := atomicval.NewValue(c, path)
	require.NoError(t, err)
	got, err := v.Get(ctx)
	require.NoError(t, err)
	assert.Nil(t, got)
	_, err = v.CompareAndSet(ctx, nil, []byte("a"))
	assert.ErrorIs(t, err, recipes.ErrConflict, "never creates")
	ok, err := v.Initialize(ctx, nil)
	require.NoError(t, err)
	assert.True(t, ok)
	res, err := v.CompareAndSet(ctx, []byte{}, []byte("a"))
	require.NoError(t, err, "empty equals nil")
	assert.Equal(t, []byte("a"), res.PostValue)
	res, err = v.CompareAndSet(ctx, []byte("b"), []byte("c"))
	assert.ErrorIs(t, err, recipes.ErrConflict)
	assert.Equal(t, []byte("a"), res.PreValue)
	res, err = v.Update(ctx, func(cur []byte) []byte { return append(cur, 'b') })
	require.NoError(t, err)
	assert.Equal(t, []byte("ab"), res.PostValue)
	res, err = v.TrySet(ctx, []byte("xyz"))
	require.NoError(t, err)
	assert.Equal(t, []byte("ab"), res.PreValue)
	require.NoError(t, v.Set(ctx, []byte{0, 1, 2}))
	got, err = v.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 1, 2}, got)
}

// A promoted lock that cannot be had in time: the update fails with
// ErrConflict and ErrNotAcquired and writes nothing.
func TestPromotedLockTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := base(t)
	lk, err := mutex.New(connect(t, servers(t)), dir+"/lock")
	require.NoError(t, err)
	lease, err := lk.Acquire(ctx)
	require.NoError(t, err)
	defer lease.Release(ctx)

	n, err := atomicval.NewInt64(connect(t, servers(t)), dir+"/n", atomicval.WithRetryPolicy(once),
		atomicval.WithPromotedToLock(atomicval.PromotedToLock{Path: dir + "/lock", Timeout: 200 * time.Millisecond}))
	require.NoError(t, err)
	// Updaters race, one optimistic try each, until one loses and is
	// promoted to the lock held above.
	var made int64
	for i := 0; ; i++ {
		require.Less(t, i, 100, "no optimistic try ever lost")
		var wg sync.WaitGroup
		errs := make([]error, 4)
		ress := make([]atomicval.Result[int64], 4)
		for j := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); ress[j], errs[j] = n.Increment(ctx) }()
		}
		wg.Wait()
		lost := -1
		for j, err := range errs {
			if err == nil {
				made++
				continue
			}
			lost = j
			require.ErrorIs(t, err, recipes.ErrConflict)
			require.ErrorIs(t, err, recipes.ErrNotAcquired)
			assert.ErrorContains(t, err, "not acquired within 200ms")
			assert.False(t, ress[j].Succeeded)
			assert.Equal(t, 1, ress[j].Stats.OptimisticTries)
			assert.Zero(t, ress[j].Stats.PromotedTries)
			assert.GreaterOrEqual(t, ress[j].Stats.PromotedTime, 200*time.Millisecond)
		}
		if lost >= 0 {
			break
		}
	}
	got, err := n.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, made, got, "the failed increments wrote nothing")
}
