package mutex_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	lease, err := m.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Unlock(ctx))
	_, err = lease.Token(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotHeld)
	assert.NotErrorIs(t, err, recipes.ErrLockLost)
	assert.ErrorContains(t, err, "released")

	// Unlock from another goroutine says how to release from there.
	lease, err = m.Lock(ctx)
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() { errc <- m.Unlock(ctx) }()
	err = <-errc
	assert.ErrorIs(t, err, recipes.ErrNotOwner)
	assert.ErrorContains(t, err, "Lease's own Unlock")
	assert.ErrorContains(t, err, "mutex.WithOwner")
	require.NoError(t, lease.Unlock(ctx))

	// The rwlock's errors name the rwlock, not a mutex.
	rw, err := rwlock.New(c, "/errs/rw")
	require.NoError(t, err)
	r, err := rw.ReadLock().Lock(ctx)
	require.NoError(t, err)
	_, err = rw.WriteLock().Lock(ctx)
	assert.ErrorIs(t, err, rwlock.ErrUpgrade)
	assert.ErrorContains(t, err, "rwlock /errs/rw (write lock): ")
	assert.NotContains(t, err.Error(), "mutex")
	require.NoError(t, r.Unlock(ctx))
}
