package atomicval_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/shared"
)

// TestIntegerInteropOnePath: on ONE path, Curator's SharedCount and
// DistributedAtomicInteger, Kazoo's Counter(support_curator=True), Go's
// Int32 and Go's shared.Count all add 1, released together; the
// count ends at the exact total of their increments, read alike by all.
// (One test per server version: the 3.9 leg runs it once.)
func TestIntegerInteropOnePath(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const each, goRoutines = 25, 2
	dir := t.TempDir()
	path := "/interop/onepath-" + uuid.NewString()[:8] + "/count"

	n, err := atomicval.NewInt32(connect(t, zkc.Servers()), path, atomicval.WithRetryPolicy(quick))
	require.NoError(t, err)
	// Made with 4 bytes first: Kazoo's Counter makes a missing node empty,
	// which SharedCount (Curator's and ours) cannot read.
	ok, err := n.Initialize(ctx, 0)
	require.NoError(t, err)
	require.True(t, ok)

	procs := map[string]*interop.Proc{
		"curator SharedCount":              testutil.Curator(t, ctx, dir, "sharedcount-incr", zkc.ConnectString(), path, fmt.Sprint(each)),
		"curator DistributedAtomicInteger": testutil.Curator(t, ctx, dir, "atomicint", zkc.ConnectString(), path, fmt.Sprint(each)),
		"kazoo Counter":                    testutil.Kazoo(t, ctx, dir, "counter", zkc.ConnectString(), path, fmt.Sprint(each)),
	}
	for name, p := range procs {
		require.NoError(t, p.WaitLine(ctx, "READY"), name)
	}
	count, err := shared.NewCount(connect(t, zkc.Servers()), path, 0)
	require.NoError(t, err)
	require.NoError(t, count.Start(ctx))
	defer count.Close(context.Background())

	var wg sync.WaitGroup
	start := make(chan struct{})
	for range goRoutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for done := 0; done < each; {
				if _, err := n.Increment(ctx); err == nil {
					done++
				} else if ctx.Err() != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	lost := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		for done := 0; done < each; {
			prev := count.GetVersioned()
			switch err := count.CompareAndSet(ctx, prev, prev.Value+1); {
			case err == nil:
				done++
			case errors.Is(err, recipes.ErrConflict):
				lost++
			default:
				t.Error(err)
				return
			}
		}
	}()
	for _, p := range procs {
		require.NoError(t, p.Send("GO"))
	}
	close(start)
	wg.Wait()
	for name, p := range procs {
		out := curatorLines(t, p)
		require.Len(t, out, 2, "%s: READY and DONE: %q", name, out)
		t.Logf("%s: %s", name, out[1])
		assert.Contains(t, out[1], fmt.Sprintf("DONE %d ", each), name)
	}
	t.Logf("Go SharedCount: %d lost tries", lost)

	want := int32(each * (len(procs) + goRoutines + 1))
	got, err := n.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got, "every increment applied once")
	cur := curatorLines(t, testutil.Curator(t, ctx, dir, "sharedcount-get", zkc.ConnectString(), path))
	require.Len(t, cur, 1)
	assert.Equal(t, fmt.Sprint(want), strings.Fields(cur[0])[0], "Curator's SharedCount reads the total (%q)", cur[0])
	assert.Eventually(t, func() bool { return count.Get() == int(want) }, 10*time.Second, 10*time.Millisecond,
		"our SharedCount's cache reaches the total")
}
