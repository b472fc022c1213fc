package cache_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// The first load of about 2,000 nodes (100-byte values) is pipelined: it
// takes a few round trips per level, not one per node. The time to
// Initialized and the reads it took are logged, for the persistent watch
// and for the one-shot fallback (a data and a children read per node, one
// at a time, as TreeCache does).
func TestInitialLoad(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ns := testutil.Namespace(t)
	w := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
	value := bytes.Repeat([]byte("x"), 100)
	all := createTree(t, w, "/big", 45, 2, value) // 1 + 45 + 2,025 nodes
	for _, tc := range []struct {
		name string
		opts []cache.Option
	}{
		{"persistent", nil},
		{"oneshot", []cache.Option{cache.WithOneShotWatches()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
			cc, err := cache.New(c, "/big", tc.opts...)
			require.NoError(t, err)
			before := (*engine.Client)(c).Stats()
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			began := time.Now()
			start(t, cc)
			took := time.Since(began)
			runtime.GC()
			runtime.ReadMemStats(&m1)
			t.Logf("%s: about %d heap bytes per cached node (100-byte values)", tc.name, (int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/int64(cc.Size()))
			reads := (*engine.Client)(c).Stats().Sub(before)
			require.Equal(t, len(all), cc.Size(), "every node there at Initialized")
			// One round trip, measured on the same session, for scale.
			rtBegan := time.Now()
			for range 20 {
				_, _, err := c.Get(context.Background(), "/big")
				require.NoError(t, err)
			}
			rt := time.Since(rtBegan) / 20
			t.Logf("%s: %d nodes initialised in %v (%.0f nodes/s; %d multiRead, %d getData, %d getChildren; one sequential round trip %v, %d of them would take %v)",
				tc.name, cc.Size(), took.Round(time.Millisecond), float64(cc.Size())/took.Seconds(),
				reads.MultiReads, reads.GetData, reads.Children, rt.Round(time.Microsecond), reads.GetData+reads.Children+reads.MultiReads,
				(rt * time.Duration(reads.GetData+reads.Children+reads.MultiReads)).Round(time.Millisecond))
			if tc.name == "persistent" {
				// 64 nodes per multiRead (after the first 16 read alone):
				// well under a request per 10 nodes.
				assert.Less(t, int(reads.GetData+reads.Children+reads.MultiReads), cc.Size()/10, "requests for the load")
			}
			n, ok := cc.Get("/big/n3/n44")
			require.True(t, ok)
			assert.Equal(t, value, n.Data)
			require.NoError(t, cc.Close(context.Background()))
		})
	}
}

// A load of large values takes fewer nodes per multiRead (about 256 KiB
// of data per request) and still reads every node whole.
func TestLoadLargeValues(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	ns := testutil.Namespace(t)
	w := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
	value := bytes.Repeat([]byte("v"), 200<<10)
	all := createTree(t, w, "/l", 40, 1, value) // 41 nodes, 8 MiB
	deleteAtEnd(t, w, all)
	c := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
	cc, err := cache.New(c, "/l")
	require.NoError(t, err)
	before := (*engine.Client)(c).Stats()
	start(t, cc)
	reads := (*engine.Client)(c).Stats().Sub(before)
	require.Equal(t, len(all), cc.Size())
	for _, p := range all {
		n, ok := cc.Get(p)
		require.True(t, ok, p)
		require.Equal(t, value, n.Data, p)
	}
	t.Logf("%d nodes of %d KiB: %d multiRead, %d getData, %d getChildren", len(all), len(value)>>10, reads.MultiReads, reads.GetData, reads.Children)
	// At most one 200 KiB value per request beyond the 256 KiB mark: no
	// fewer requests than nodes.
	assert.GreaterOrEqual(t, int(reads.MultiReads+reads.GetData), len(all), "one value per request")
	require.NoError(t, cc.Close(ctx))
}

// CURATOR-690: Curator 5.4's cache never reported "initialised" past
// 65,535 children. This one does, with every child there.
func TestManyChildren(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 66,000 nodes")
	}
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	ns := testutil.Namespace(t)
	w := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
	_, err := w.Create(ctx, "/", nil, 0)
	require.NoError(t, err)
	_, err = w.Create(ctx, "/kids", nil, 0)
	require.NoError(t, err)
	const n, batch = 66_000, 1_000
	all := []string{"/kids"}
	for i := range n {
		all = append(all, fmt.Sprintf("/kids/c%05d", i))
	}
	deleteAtEnd(t, w, all)
	began := time.Now()
	require.NoError(t, inParallel(n/batch, func(b int) error {
		ops := make([]recipes.Op, batch)
		for i := range ops {
			ops[i] = recipes.CreateOp(all[1+b*batch+i], nil, 0)
		}
		_, err := w.Multi(ctx, ops...)
		return err
	}))
	t.Logf("created %d children in %v", n, time.Since(began).Round(time.Millisecond))
	c := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
	cc, err := cache.NewChildrenCache(c, "/kids", cache.WithoutData())
	require.NoError(t, err)
	var rec recorder
	defer cc.Listen(rec.add, cache.ForInitialized())()
	began = time.Now()
	require.NoError(t, cc.Start(ctx))
	defer cc.Close(ctx)
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	require.NoError(t, cc.WaitReady(wctx))
	t.Logf("initialised with %d children in %v", cc.Size(), time.Since(began).Round(time.Millisecond))
	assert.Equal(t, n, cc.Size(), "every child there at Initialized")
	kids, ok := cc.Children("/kids")
	require.True(t, ok)
	assert.Len(t, kids, n)
	rec.waitFor(t, cache.Initialized, 1)
	assert.Equal(t, []string{"INITIALIZED"}, rec.lines())
}
