package mutex_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// heard records which leases a revocation listener was called with.
type heard struct {
	mu     sync.Mutex
	leases []*mutex.Lease
}

func (h *heard) add(l *mutex.Lease) {
	h.mu.Lock()
	h.leases = append(h.leases, l)
	h.mu.Unlock()
}

func (h *heard) has(l *mutex.Lease) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, x := range h.leases {
		if x == l {
			return true
		}
	}
	return false
}

// A released lease never hears a revocation: with local hand-off the
// process's node lives on under the next local holder, and a revocation
// written into it reaches that holder only, never the lease released
// before. A later revocation round (a lock taken and revoked afresh) is the
// barrier after which a call for the released lease would have come.
func TestRevocationNeverReachesAReleasedLease(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	var h heard
	m := newMutex(t, c, "/locks/revoke-released", mutex.WithLocalHandoff(10), mutex.WithRevocationListener(h.add))
	first, err := m.Acquire(mutex.WithOwner(ctx, "first"))
	require.NoError(t, err)
	got := make(chan *mutex.Lease, 1)
	go func() {
		l, err := m.Acquire(mutex.WithOwner(ctx, "second"))
		assert.NoError(t, err)
		got <- l
	}()
	eventually(t, 10*time.Second, "the second owner waits in memory", func() bool { return mutex.LocalWaiters(m) == 1 })
	node := first.Node()
	require.NoError(t, first.Release(ctx))
	second := <-got
	require.Equal(t, node, second.Node(), "handed on in memory: the same node")

	require.NoError(t, mutex.Revoke(ctx, c, node))
	eventually(t, 10*time.Second, "the holder hears the revocation", func() bool { return h.has(second) })
	require.NoError(t, second.Release(ctx))

	// The barrier: a new hold revoked and heard.
	third, err := m.Acquire(mutex.WithOwner(ctx, "third"))
	require.NoError(t, err)
	require.NoError(t, mutex.Revoke(ctx, c, third.Node()))
	eventually(t, 10*time.Second, "the new holder hears its revocation", func() bool { return h.has(third) })
	require.NoError(t, third.Release(ctx))
	assert.False(t, h.has(first), "the released lease heard a revocation")
}

// Revocable holds cost no goroutine each: their nodes are followed on the
// client's one shared Follower, and each revocation reaches its holder.
func TestRevocableHoldsShareOneGoroutine(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	var h heard
	const n = 200
	// The shared Follower starts with the first revocable hold.
	first, err := newMutex(t, c, "/revocable/first", mutex.WithRevocationListener(h.add)).Acquire(ctx)
	require.NoError(t, err)
	before := runtime.NumGoroutine()
	ls := make([]*mutex.Lease, n)
	for i := range ls {
		m := newMutex(t, c, fmt.Sprintf("/revocable/key-%d", i), mutex.WithRevocationListener(h.add))
		ls[i], err = m.Acquire(ctx)
		require.NoError(t, err)
	}
	extra := runtime.NumGoroutine() - before
	t.Logf("%d revocable holds: %d more goroutines", n, extra)
	assert.LessOrEqual(t, extra, 2, "no goroutine per revocable hold")
	for _, i := range []int{0, n / 2, n - 1} {
		require.NoError(t, mutex.Revoke(ctx, c, ls[i].Node()))
		eventually(t, 10*time.Second, "the holder hears it", func() bool { return h.has(ls[i]) })
	}
	for _, l := range append(ls, first) {
		require.NoError(t, l.Release(ctx))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.Len(t, h.leases, 3, "the revoked holds only")
}
