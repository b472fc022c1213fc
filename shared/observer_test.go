package shared_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/shared"
)

// On an observer that learns each commit a second late, a Value whose
// CompareAndSet lost to a write acknowledged through a voter gives the
// version to try from next at once, and its own Set is its value at once,
// without a sync: the refused write's reply comes through the leader after
// the write that beat it, and the read after it is served after both.
func TestObserverValueReadsAfterItsWrites(t *testing.T) {
	zkc, lag := testutil.LaggingObserver(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const path = "/obs/value"
	start := func(c *recipes.Client) *shared.Value {
		v, err := shared.NewValue(c, path, []byte("seed"))
		require.NoError(t, err)
		require.NoError(t, v.Start(ctx))
		t.Cleanup(func() { _ = v.Close(context.Background()) })
		return v
	}
	w := start(connect(t, zkc.Voters()))
	o := start(connect(t, zkc.Observers()))
	lag(testutil.ObserverLag)

	stale := o.GetVersioned()
	require.NoError(t, w.Set(ctx, []byte("voter")))
	require.ErrorIs(t, o.CompareAndSet(ctx, stale, []byte("lost")), recipes.ErrConflict)
	next := o.GetVersioned()
	require.Equal(t, "voter", string(next.Value), "the value that won, read after the refusal")
	require.NoError(t, o.CompareAndSet(ctx, next, []byte("observer")), "from the version read after the refusal")
	require.Equal(t, "observer", string(o.Get()))
	require.NoError(t, o.Set(ctx, []byte("again")))
	require.Equal(t, "again", string(o.Get()))
}
