package atomicval_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// A lagging observer serves a Get after an increment acknowledged through
// a voter: the barrier before the read makes it catch up first.
func TestObserverGetSeesAcknowledgedWrites(t *testing.T) {
	zkc, lag := testutil.LaggingObserver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := "/obs/count"
	w, err := atomicval.NewInt64(connect(t, zkc.Voters()), path)
	require.NoError(t, err)
	rc := connect(t, zkc.Observers())
	r, err := atomicval.NewInt64(rc, path)
	require.NoError(t, err)
	lag(testutil.ObserverLag)
	for range 2 {
		res, err := w.Increment(ctx)
		require.NoError(t, err)
		// The observer lags: a plain read there shows the value from
		// before the increment (this is what the test has teeth for).
		data, _, err := rc.Get(ctx, path)
		if err == nil {
			require.NotEqual(t, res.PostValue, int64(binary.BigEndian.Uint64(data)), "a plain read on the lagging observer")
		} else {
			require.ErrorIs(t, err, zk.ErrNoNode, "a plain read on the lagging observer")
		}
		v, err := r.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, res.PostValue, v, "Get on the observer after an acknowledged increment")
	}
}

// An increment whose reply is lost, by a client whose session then moves
// to an observer that has not yet learnt of the write, counts once: the
// read that judges the lost write must not be the observer's stale copy
// (which would show the node as the write found it, so the loop would
// take the write as not applied and increment again). It does not need a
// sync: the observer takes the moving session only once the leader has
// revalidated it, over the same (lagging) link that brings the write, so
// it has learnt the write by then (the increment took one round trip of
// the lagging link longer, and ended in ErrUnknownOutcome on 3.8 and 3.9).
func TestObserverLostReplyCountsOnce(t *testing.T) {
	zkc, lag := testutil.LaggingObserver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := "/obs/lost"
	proxy := zktest.NewProxy(t, zkc.Voters()[0])
	hp := &testutil.FirstThen{First: proxy.Addr(), Then: zkc.Observers()[0]}
	a, err := atomicval.NewInt64(connect(t, []string{hp.First, hp.Then}, recipes.WithHostProvider(hp)), path)
	require.NoError(t, err)
	w, err := atomicval.NewInt64(connect(t, zkc.Voters()), path)
	require.NoError(t, err)
	ok, err := a.Initialize(ctx, 0)
	require.NoError(t, err)
	require.True(t, ok)

	// a's write of 1 reaches the voter; from then on the observer learns
	// of commits a second late, and a's connection is cut: a goes on on
	// the observer.
	proxy.CutAfterClientSendsFunc(setDataOf(path, 1), func() { lag(testutil.ObserverLag) })
	res, err := a.Increment(ctx)
	lag(0)
	got, gerr := w.Get(ctx)
	require.NoError(t, gerr)
	assert.Equal(t, int64(1), got, "a's one increment counted once (result %+v, %v)", res, err)
	if err != nil {
		assert.ErrorIs(t, err, recipes.ErrUnknownOutcome)
	} else {
		assert.Equal(t, int64(1), res.PostValue)
	}
	t.Logf("a: %+v, %v", res, err)
}
