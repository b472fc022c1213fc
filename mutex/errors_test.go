package mutex_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// Errors say what happened, and name the recipe and its path once.
func TestErrorsSayWhatHappened(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	m, err := mutex.New(c, "/errs/m")
	require.NoError(t, err)

	// A token read after Unlock: released, not lost.
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))
	_, err = lease.Token(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotHeld)
	assert.NotErrorIs(t, err, recipes.ErrLockLost)
	assert.ErrorContains(t, err, "released")

	// Unlock from another goroutine says how to release from there.
	lease, err = m.Acquire(ctx)
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() { errc <- m.Release(ctx) }()
	err = <-errc
	assert.ErrorIs(t, err, recipes.ErrNotOwner)
	assert.ErrorContains(t, err, "Lease's own Release")
	assert.ErrorContains(t, err, "mutex.WithOwner")
	require.NoError(t, lease.Release(ctx))

	// The rwlock's errors name the rwlock, not a mutex.
	rw, err := rwlock.New(c, "/errs/rw")
	require.NoError(t, err)
	r, err := rw.ReadLock().Acquire(ctx)
	require.NoError(t, err)
	_, err = rw.WriteLock().Acquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrUpgrade)
	assert.ErrorContains(t, err, "rwlock /errs/rw (write lock): ")
	assert.NotContains(t, err.Error(), "mutex")
	require.NoError(t, r.Release(ctx))
}

// CURATOR-41: a failed delete of one's own node hid the original error.
// A Lock whose ctx ends while it waits, and whose node then cannot be
// deleted (the parent's ACL grants no delete), says its ctx ended.
func TestFailedCleanupKeepsTheOriginalError(t *testing.T) {
	zkc := zktest.Start(t)
	holder := connect(t, zkc.Servers())
	waiter := connect(t, zkc.Servers())
	ctx := context.Background()
	_, err := (*engine.Client)(holder).Conn().Create("/acl41", nil, 0, zk.WorldACL(zk.PermRead|zk.PermCreate))
	require.NoError(t, err)
	hm, err := mutex.New(holder, "/acl41")
	require.NoError(t, err)
	_, err = hm.Acquire(ctx)
	require.NoError(t, err)

	wm, err := mutex.New(waiter, "/acl41")
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = wm.Acquire(wctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "the original error")
	assert.NotErrorIs(t, err, zk.ErrNoAuth)
}

// Lock on a client that never connected (nothing listens at its address,
// and it was told not to wait for a session) fails with ErrNotConnected
// once the retry policy gives up, instead of blocking for ever.
func TestLockWithoutEverConnecting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // a port nobody listens on
	c, err := testutil.Dial(context.Background(), []string{addr}, recipes.WithConnectTimeout(0),
		recipes.WithSessionTimeout(time.Second)) // the retry policy gives up after 2 s
	require.NoError(t, err)
	defer c.Close(context.Background())
	m, err := mutex.New(c, "/never")
	require.NoError(t, err)
	start := time.Now()
	_, err = m.Acquire(context.Background())
	assert.ErrorIs(t, err, recipes.ErrNotConnected)
	assert.Less(t, time.Since(start), 10*time.Second)
	t.Logf("%v after %v", err, time.Since(start).Round(time.Millisecond))
}
