package barrier_test

// Interop: Go members and real Apache Curator DistributedDoubleBarrier
// members (Java, driven through internal/interop) meet at one double
// barrier on the same server.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
)

// TestCuratorInteropDoubleBarrier: two Go and two Curator members of a
// 4-member double barrier. Nobody enters before the fourth arrives, every
// one enters once it has, and all leave together, leaving no node.
func TestCuratorInteropDoubleBarrier(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const path, qty = "/interop/double", 4
	dir := t.TempDir()
	javas := []*interop.Proc{
		testutil.Curator(t, ctx, dir, "doublebarrier", zkc.ConnectString(), path, "4"),
		testutil.Curator(t, ctx, dir, "doublebarrier", zkc.ConnectString(), path, "4"),
	}
	for _, j := range javas {
		require.NoError(t, j.WaitLine(ctx, "READY"))
		require.NoError(t, j.Send("ENTER"))
	}
	admin := connect(t, zkc.Servers())
	gos := make([]*barrier.DoubleBarrier, 2)
	for i := range gos {
		var err error
		gos[i], err = barrier.NewDouble(connect(t, zkc.Servers()), path, qty)
		require.NoError(t, err)
	}
	entered := make(chan error, 2)
	go func() { entered <- gos[0].Enter(ctx) }()
	eventually(t, 30*time.Second, "three members, two of them Curator's", func() bool {
		kids, _, err := admin.Children(ctx, path)
		return err == nil && len(kids) == 3
	})
	select {
	case err := <-entered:
		t.Fatalf("a Go member entered with 3 of 4 present: %v", err)
	default:
	}
	go func() { entered <- gos[1].Enter(ctx) }()
	for range gos {
		require.NoError(t, <-entered)
	}
	for _, j := range javas {
		require.NoError(t, j.WaitLine(ctx, "ENTERED"))
	}
	_, ready, err := gos[0].Members(ctx)
	require.NoError(t, err)
	assert.True(t, ready)

	for _, j := range javas {
		require.NoError(t, j.Send("LEAVE"))
	}
	var wg sync.WaitGroup
	for _, g := range gos {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, g.Leave(ctx))
		}()
	}
	wg.Wait()
	for _, j := range javas {
		require.NoError(t, j.WaitLine(ctx, "LEFT"))
		require.NoError(t, j.Wait())
	}
	kids, _, err := admin.Children(ctx, path)
	if err == nil {
		assert.Empty(t, kids, "no member node and no ready node left")
	}
}
