package atomicval_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// A ZooKeeper follower serves reads from its own copy, which may lag
// behind a write another client has already had acknowledged. Get and
// CompareAndSet must not see the counter from before a write that was
// acknowledged before they were called (the chaos suite's linearizability
// check found a Get on a follower reading the value from before an
// increment that had returned): they pass a barrier first. 200 rounds of an
// increment on the leader, then a Get and a CompareAndSet from the value
// it wrote on each follower.
func TestReadsSeeAcknowledgedWrites(t *testing.T) {
	zkc := zktest.StartEnsemble(t, 3, zktest.WithTickTime(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := zkc.Leader()
	require.NoError(t, err)
	srv := zkc.Servers()
	path := "/stale/count"
	w, err := atomicval.NewInt64(connect(t, []string{srv[leader]}), path)
	require.NoError(t, err)
	var readers []*atomicval.Int64
	for i, s := range srv {
		if i != leader {
			r, err := atomicval.NewInt64(connect(t, []string{s}), path)
			require.NoError(t, err)
			readers = append(readers, r)
		}
	}
	staleGets, staleCAS := 0, 0
	for range 200 {
		res, err := w.Increment(ctx)
		require.NoError(t, err)
		for _, r := range readers {
			v, err := r.Get(ctx)
			require.NoError(t, err)
			if v != res.PostValue {
				staleGets++
			}
		}
		// Each follower's client sets the value from the one just written
		// back and forth: it is there, so the compare-and-set must win.
		for _, r := range readers {
			cur, err := w.Get(ctx)
			require.NoError(t, err)
			require.NoError(t, w.Set(ctx, cur+10))
			_, err = r.CompareAndSet(ctx, cur+10, cur)
			if errors.Is(err, recipes.ErrConflict) {
				staleCAS++
			} else {
				require.NoError(t, err)
			}
		}
	}
	assert.Zero(t, staleGets, "Gets on a follower that saw the value from before an acknowledged increment")
	assert.Zero(t, staleCAS, "CompareAndSets on a follower refused on a stale read")
}
