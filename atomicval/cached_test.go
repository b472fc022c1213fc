package atomicval_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// Clients taking blocks of one counter, with one optimistic try a block
// (so that blocks conflict and fail under contention), never hand out
// an id twice, and every id taken is below the counter's final value.
func TestCachedInt64UniqueAcrossClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := base(t) + "/ids"
	const clients, goroutines, each, size = 3, 2, 40, 3
	var (
		mu        sync.Mutex
		seen      = map[int64]int{}
		conflicts int
		wg        sync.WaitGroup
	)
	for ci := range clients {
		n, err := atomicval.NewInt64(connect(t, servers(t)), path, atomicval.WithRetryPolicy(once))
		require.NoError(t, err)
		ids, err := atomicval.NewCachedInt64(n, size)
		require.NoError(t, err)
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for got := 0; got < each; {
					id, err := ids.Next(ctx)
					if errors.Is(err, recipes.ErrConflict) {
						mu.Lock()
						conflicts++
						mu.Unlock()
						continue
					}
					if !assert.NoError(t, err) {
						return
					}
					got++
					mu.Lock()
					seen[id]++
					if seen[id] > 1 {
						t.Errorf("id %d handed out twice (client %d)", id, ci)
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	final, err := atomicval.NewInt64(connect(t, servers(t)), path)
	require.NoError(t, err)
	v, err := final.Get(ctx)
	require.NoError(t, err)
	assert.Len(t, seen, clients*goroutines*each)
	for id := range seen {
		assert.True(t, id >= 0 && id < v, "id %d outside [0, %d)", id, v)
	}
	assert.Zero(t, v%size, "the counter moves by whole blocks")
	t.Logf("%d ids, counter %d (%d blocks), %d block fetches lost to a conflict", len(seen), v, v/size, conflicts)
}

// A block fetch that fails is never used: a corrupt node gives no id, and
// once repaired the ids start from its value; a fetch whose reply is lost
// (ErrUnknownOutcome: the block may have been taken) is skipped, so the
// ids after it come from a later block and none repeats another client's.
func TestCachedInt64FailedBlock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := servers(t)
	path := base(t) + "/ids"
	admin := connect(t, srv)

	_, err := admin.CreateWithParents(ctx, path, []byte{1, 2, 3}, 0)
	require.NoError(t, err)
	n, err := atomicval.NewInt64(connect(t, srv), path)
	require.NoError(t, err)
	ids, err := atomicval.NewCachedInt64(n, 10)
	require.NoError(t, err)
	_, err = ids.Next(ctx)
	require.ErrorIs(t, err, recipes.ErrCorrupt)
	require.NoError(t, n.Set(ctx, 100))
	for want := int64(100); want < 103; want++ {
		id, err := ids.Next(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, id)
	}
	assert.Equal(t, int64(7), ids.Remaining())

	// Through a proxy: the fetch of a block is applied, its reply lost,
	// and another client takes the next block meanwhile.
	proxy := zktest.NewProxy(t, srv[0])
	pn, err := atomicval.NewInt64(connect(t, []string{proxy.Addr()}), path)
	require.NoError(t, err)
	pids, err := atomicval.NewCachedInt64(pn, 10)
	require.NoError(t, err)
	var otherErr error
	proxy.CutAfterClientSendsFunc(setDataOf(path, 120), func() {
		_, otherErr = n.Add(ctx, 10) // 120 to 130: another's block
	})
	_, err = pids.Next(ctx)
	require.NoError(t, otherErr)
	require.ErrorIs(t, err, recipes.ErrUnknownOutcome, "the block 110..119 may be taken")
	assert.Zero(t, pids.Remaining(), "a block of unknown outcome is not used")
	id, err := pids.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(130), id, "the next block, after the lost one and the other's")
	v, err := n.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(140), v, "the lost block was applied once, and skipped")
	id, err = ids.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(103), id, "the first allocator still has its block")
}

// Misuse and a ctx that ends while another goroutine holds the allocator.
func TestCachedInt64Misuse(t *testing.T) {
	_, err := atomicval.NewCachedInt64(nil, 1)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	n, err := atomicval.NewInt64(connect(t, servers(t)), base(t))
	require.NoError(t, err)
	_, err = atomicval.NewCachedInt64(n, 0)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	var zero *atomicval.CachedInt64
	_, err = zero.Next(context.Background())
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	assert.Zero(t, zero.Remaining())

	ids, err := atomicval.NewCachedInt64(n, 2)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ids.Next(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	id, err := ids.Next(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(0), id)
}
