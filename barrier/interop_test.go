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

// TestKazooInteropBarrier: Kazoo's Barrier and ours are one barrier (the
// node is the barrier). Kazoo raises it: ours is up and its Wait blocks
// until Kazoo removes it. Ours raises it: Kazoo's wait times out while it
// is up and returns True once ours removes it.
func TestKazooInteropBarrier(t *testing.T) {
	zkc := testutil.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const path = "/interop/kazoo-barrier"
	kz := testutil.Kazoo(t, ctx, t.TempDir(), "barrier", zkc.ConnectString(), path)
	require.NoError(t, kz.WaitLine(ctx, "READY"))
	last := func() string { l := kz.Lines(); return l[len(l)-1] }
	b, err := barrier.New(connect(t, zkc.Servers()), path)
	require.NoError(t, err)

	require.NoError(t, kz.Send("SET"))
	require.NoError(t, kz.WaitLine(ctx, "SET"))
	up, err := b.IsSet(ctx)
	require.NoError(t, err)
	assert.True(t, up, "Kazoo's barrier is ours")
	waited := make(chan error, 1)
	go func() { waited <- b.Wait(ctx) }()
	// Kazoo's own timed wait on its barrier, while ours waits too.
	require.NoError(t, kz.Send("WAIT 200"))
	require.NoError(t, kz.WaitLine(ctx, "WAITED False"))
	select {
	case err := <-waited:
		t.Fatalf("our Wait returned with Kazoo's barrier up: %v", err)
	default:
	}
	require.NoError(t, kz.Send("REMOVE"))
	require.NoError(t, kz.WaitLine(ctx, "REMOVED True"))
	require.NoError(t, <-waited, "Kazoo removing its barrier releases our Wait")

	require.NoError(t, b.Set(ctx))
	require.NoError(t, kz.Send("WAIT 200"))
	require.NoError(t, kz.WaitLine(ctx, "WAITED False"), "Kazoo waits on our barrier: %q", last())
	require.NoError(t, kz.Send("WAIT 30000"))
	require.NoError(t, b.Remove(ctx))
	require.NoError(t, kz.WaitLine(ctx, "WAITED True"), "our Remove releases Kazoo's wait")
	require.NoError(t, kz.Send("REMOVE"))
	require.NoError(t, kz.WaitLine(ctx, "REMOVED False"), "nothing left to remove")
	require.NoError(t, kz.CloseStdin())
	require.NoError(t, kz.Wait())
}
