package atomicval_test

// Interop tests: the Go atomic values share paths with real Apache
// Curator DistributedAtomicLong and DistributedAtomicInteger processes
// (Java, driven through internal/interop) against the same ZooKeeper
// server: 5.4 by default, 5.7.1 with scripts/zk39-env.sh.

import (
	"context"
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
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// curatorLines returns the non-empty stdout lines of a finished process.
func curatorLines(t *testing.T, p *interop.Proc) []string {
	t.Helper()
	require.NoError(t, p.Wait())
	var out []string
	for _, l := range p.Lines() {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestCuratorInterop: Go and Curator increment one DistributedAtomicLong
// to the exact total, optimistic and promoted to one lock; Curator reads
// what Go wrote; a DistributedAtomicInteger and an Int32 share a path.
func TestCuratorInterop(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	dir := t.TempDir() // the driver program is written here once
	t.Run("Optimistic", func(t *testing.T) { interopIncrements(t, zkc, dir, false) })
	t.Run("Promoted", func(t *testing.T) { interopIncrements(t, zkc, dir, true) })
	t.Run("Integer", func(t *testing.T) { interopInteger(t, zkc, dir) })
}

// interopIncrements runs 2 Java threads and 2 Go clients of 2 goroutines
// each, released together, each making `each` increments (calling again
// after every call that did not succeed); the long ends at the exact
// total, which Curator reads too.
func interopIncrements(t *testing.T, zkc *zktest.Cluster, dir string, promoted bool) {
	const javaThreads, goClients, goRoutines, each = 2, 2, 2, 25
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := "/interop/atomic-" + uuid.NewString()[:8]
	path, lock := base+"/count", base+"/lock"
	opts := []atomicval.Option{atomicval.WithRetryPolicy(quick)}
	javaLock := "-"
	if promoted {
		opts = []atomicval.Option{atomicval.WithRetryPolicy(once),
			atomicval.WithPromotedToLock(atomicval.PromotedToLock{Path: lock, Timeout: 20 * time.Second, Retry: quick})}
		javaLock = lock
	}
	java := testutil.Curator(t, ctx, dir, "atomiclong", zkc.ConnectString(), path,
		fmt.Sprint(javaThreads), fmt.Sprint(each), javaLock)
	require.NoError(t, java.WaitLine(ctx, "READY"))

	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		mu       sync.Mutex
		goFailed int
		goProm   int
	)
	for range goClients {
		c := connect(t, zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
		n, err := atomicval.NewInt64(c, path, opts...)
		require.NoError(t, err)
		for range goRoutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for done := 0; done < each; {
					res, err := n.Increment(ctx)
					mu.Lock()
					goProm += res.Stats.PromotedTries
					if err != nil {
						goFailed++
					}
					mu.Unlock()
					if err == nil {
						done++
					} else if ctx.Err() != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	require.NoError(t, java.Send("GO"))
	close(start)
	wg.Wait()
	out := curatorLines(t, java)
	require.Len(t, out, 2, "READY and DONE: %q", out)
	var jSucc, jFailed, jProm int
	_, err := fmt.Sscanf(out[1], "DONE %d %d %d", &jSucc, &jFailed, &jProm)
	require.NoError(t, err, out[1])
	require.Equal(t, javaThreads*each, jSucc)

	want := int64(javaThreads*each + goClients*goRoutines*each)
	n, err := atomicval.NewInt64(connect(t, zkc.Servers()), path)
	require.NoError(t, err)
	got, err := n.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got, "Go and Curator increments, each applied once")
	cur := curatorLines(t, testutil.Curator(t, ctx, dir, "atomiclong-get", zkc.ConnectString(), path))
	assert.Equal(t, []string{fmt.Sprint(want)}, cur, "Curator reads the total")
	t.Logf("total %d; Go: %d failed calls, %d promoted tries; Curator: %d failed calls, %d promoted tries",
		got, goFailed, goProm, jFailed, jProm)
	if promoted {
		assert.Positive(t, goProm+jProm, "some increments were promoted")
	}
}

// interopInteger: Curator's DistributedAtomicInteger adds to the value an
// Int32 initialised; Curator's SharedCount and the Int32 read the sum:
// the three share a path.
func interopInteger(t *testing.T, zkc *zktest.Cluster, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := "/interop/atomic-" + uuid.NewString()[:8] + "/int"
	n, err := atomicval.NewInt32(connect(t, zkc.Servers()), path)
	require.NoError(t, err)
	ok, err := n.Initialize(ctx, -40)
	require.NoError(t, err)
	require.True(t, ok)
	out := curatorLines(t, testutil.Curator(t, ctx, dir, "atomicint-add", zkc.ConnectString(), path, "42"))
	assert.Equal(t, []string{"ADDED -40 2"}, out)
	out = curatorLines(t, testutil.Curator(t, ctx, dir, "sharedcount-get", zkc.ConnectString(), path))
	assert.Equal(t, []string{"2 1"}, out, "Curator's SharedCount reads the sum at version 1")
	v, err := n.Get(ctx)
	require.NoError(t, err)
	assert.Equal(t, int32(2), v)
}
