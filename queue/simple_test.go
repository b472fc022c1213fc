package queue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var (
	connect    = testutil.Connect
	eventually = testutil.Eventually
)

// Items come out in the order they went in; Peek does not remove, Poll
// does not wait, the nodes are qn-<seq> holding the bytes as they are,
// and foreign children are ignored.
func TestSimpleOrder(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, zkc.Servers(), recipes.WithNamespace(testutil.Namespace(t)))
	q, err := queue.NewSimple(c, "/simple/order")
	require.NoError(t, err)

	_, ok, err := q.Peek(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "no directory: empty")
	_, ok, err = q.Poll(ctx)
	require.NoError(t, err)
	assert.False(t, ok)
	for i := range 5 {
		require.NoError(t, q.Offer(ctx, fmt.Appendf(nil, "item %d", i)))
	}
	_, err = c.Create(ctx, "/simple/order/foreign", nil, 0)
	require.NoError(t, err)
	kids, _, err := c.Children(ctx, "/simple/order")
	require.NoError(t, err)
	assert.Contains(t, kids, "qn-0000000000")
	data, _, err := c.Get(ctx, "/simple/order/qn-0000000000")
	require.NoError(t, err)
	assert.Equal(t, "item 0", string(data), "raw bytes")
	n, err := q.Len(ctx)
	require.NoError(t, err)
	assert.Equal(t, 5, n)

	data, ok, err = q.Peek(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "item 0", string(data))
	data, ok, err = q.Poll(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "item 0", string(data))
	for i := 1; i < 5; i++ {
		data, err := q.Take(ctx)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("item %d", i), string(data))
	}
	_, ok, err = q.Poll(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "the foreign node is not an item")
}

// Take waits for an item, honours its ctx, and each item goes to exactly
// one of several concurrent takers.
func TestSimpleTakeWaitsAndSharesOut(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const path, consumers, items = "/simple/share", 4, 200
	prod, err := queue.NewSimple(connect(t, zkc.Servers()), path)
	require.NoError(t, err)

	tctx, tcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = prod.Take(tctx)
	tcancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "zkrecipes: simple queue "+path+": take:")

	var (
		mu  sync.Mutex
		got = map[string]int{}
		wg  sync.WaitGroup
	)
	cctx, ccancel := context.WithCancel(ctx)
	for range consumers {
		q, err := queue.NewSimple(connect(t, zkc.Servers()), path)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				data, err := q.Take(cctx)
				if err != nil {
					assert.ErrorIs(t, err, context.Canceled)
					return
				}
				mu.Lock()
				got[string(data)]++
				mu.Unlock()
			}
		}()
	}
	for i := range items {
		require.NoError(t, prod.Offer(ctx, fmt.Appendf(nil, "%d", i)))
	}
	eventually(t, 30*time.Second, "every item taken", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == items
	})
	ccancel()
	wg.Wait()
	for k, n := range got {
		assert.Equal(t, 1, n, "item %s taken %d times", k, n)
	}
}

// CURATOR-308: the directory is a container; once emptied the server
// reaps it, and a Take waiting meanwhile still gets the next item offered
// (the directory made again by the Offer).
func TestSimpleContainerReaped(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const path = "/simple/reaped/q"
	c := connect(t, zkc.Servers())
	q, err := queue.NewSimple(c, path)
	require.NoError(t, err)
	require.NoError(t, q.Offer(ctx, []byte("one")))
	data, err := q.Take(ctx)
	require.NoError(t, err)
	assert.Equal(t, "one", string(data))

	taken := make(chan []byte, 1)
	go func() {
		data, err := q.Take(ctx)
		assert.NoError(t, err)
		taken <- data
	}()
	eventually(t, 30*time.Second, "the server reaps the empty container", func() bool {
		ok, _, err := c.Exists(ctx, path)
		return err == nil && !ok
	})
	other, err := queue.NewSimple(connect(t, zkc.Servers()), path)
	require.NoError(t, err)
	require.NoError(t, other.Offer(ctx, []byte("two")))
	select {
	case data := <-taken:
		assert.Equal(t, "two", string(data))
	case <-ctx.Done():
		t.Fatal("Take did not see the item offered after the directory was reaped")
	}
}

// A Take lists the directory only when the listing it walks is used up,
// not once per item: draining n items costs O(1) getChildren requests
// (one listing, and one more to find the queue empty), and they still come
// out in order, an item offered meanwhile after the listed ones.
func TestSimpleTakeListsOnce(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := connect(t, zkc.Servers())
	q, err := queue.NewSimple(c, "/simple/listonce")
	require.NoError(t, err)
	const n = 200
	for i := range n {
		require.NoError(t, q.Offer(ctx, fmt.Appendf(nil, "%d", i)))
	}
	before := (*engine.Client)(c).Stats()
	for i := range n {
		if i == n/2 {
			require.NoError(t, q.Offer(ctx, []byte("late")))
		}
		data, err := q.Take(ctx)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(i), string(data), "in order")
	}
	data, ok, err := q.Poll(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "late", string(data))
	_, ok, err = q.Poll(ctx)
	require.NoError(t, err)
	assert.False(t, ok)
	got := (*engine.Client)(c).Stats().Sub(before).Children
	t.Logf("%d getChildren requests for %d takes and 2 polls", got, n)
	assert.LessOrEqual(t, got, uint64(4), "getChildren per take: O(1) amortised, not one per take")
}

// The listing a SimpleQueue walks can outlive its directory: when the
// container is reaped (or deleted) and made again, the sequence starts
// over, and a name in the old listing can be a new node behind older
// ones. Take must then list again, not take that node out of order.
func TestSimpleListingOutlivesDirectory(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, zkc.Servers())
	admin := connect(t, zkc.Servers())
	q, err := queue.NewSimple(c, "/simple/outlives")
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, q.Offer(ctx, fmt.Appendf(nil, "old %d", i)))
	}
	data, err := q.Take(ctx) // lists qn-0..2, takes qn-0
	require.NoError(t, err)
	require.Equal(t, "old 0", string(data))
	for _, k := range []string{"qn-0000000001", "qn-0000000002"} {
		require.NoError(t, admin.Delete(ctx, "/simple/outlives/"+k, -1))
	}
	require.NoError(t, admin.Delete(ctx, "/simple/outlives", -1))
	for i := range 3 { // qn-0..2 again, in a new directory
		require.NoError(t, q.Offer(ctx, fmt.Appendf(nil, "new %d", i)))
	}
	for i := range 3 {
		data, err := q.Take(ctx)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("new %d", i), string(data), "in order after the directory was made again")
	}
}
