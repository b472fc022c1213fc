package atomicval_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// A sync does not make a read on the leader see every acknowledged
// write: the leader treats a sync as a read (nothing to catch up with),
// yet it applies a commit only after sending it to the followers, so a
// follower can apply a write and acknowledge it to its client before the
// leader has applied it (the chaos suite's linearizability check found a
// Get on the leader reading the counter from before an increment another
// process had had acknowledged through a follower 2 ms earlier); and a
// leader that has lost its followers keeps answering reads, sync
// included, until it steps down, while the followers may already have
// elected another and taken writes. Only a round through a quorum orders
// a read after every acknowledged write. Here a leader loses both its
// followers (paused): a Get from its client, and a CompareAndSet from
// another value, must not read the value before the followers are back.
func TestReadsNeedAQuorum(t *testing.T) {
	zkc := zktest.StartEnsemble(t, 3, zktest.WithTickTime(200*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := zkc.Leader()
	require.NoError(t, err)
	path := "/quorum/count"
	c := connect(t, []string{zkc.Servers()[leader]})
	n, err := atomicval.NewInt64(c, path)
	require.NoError(t, err)
	_, err = n.Increment(ctx)
	require.NoError(t, err)

	var followers []int
	for i := range zkc.Len() {
		if i != leader {
			require.NoError(t, zkc.Pause(i))
			followers = append(followers, i)
			t.Cleanup(func() { _ = zkc.Resume(i) })
		}
	}
	type answer struct {
		what     string
		v        int64
		err      error
		answered bool // a value read
	}
	none, err := atomicval.NewInt64(c, "/quorum/none")
	require.NoError(t, err)
	answers := make(chan answer, 3)
	go func() { // a missing node: its check fails, through a quorum all the same
		v, err := none.Get(ctx)
		answers <- answer{"Get of a missing node", v, err, err == nil}
	}()
	go func() {
		v, err := n.Get(ctx)
		answers <- answer{"Get", v, err, err == nil}
	}()
	go func() {
		// From another value: a conflict, that reads the value there.
		res, err := n.CompareAndSet(ctx, 7, 8)
		answers <- answer{"CompareAndSet", res.PreValue, err, errors.Is(err, recipes.ErrConflict)}
	}()
	zktest.Eventually(t, 20*time.Second, "the leader without followers to step down", func() bool {
		out, err := zkc.FourLetter(leader, "srvr")
		return err != nil || !strings.Contains(out, "Mode: leader")
	})
	got := 0
	for done := false; !done; {
		select {
		case a := <-answers:
			got++
			if a.answered {
				t.Errorf("%s read the value (%d) on a leader that had lost its quorum", a.what, a.v)
			}
		default:
			done = true
		}
	}
	for _, i := range followers {
		require.NoError(t, zkc.Resume(i))
	}
	for ; got < cap(answers); got++ {
		select {
		case a := <-answers:
			t.Logf("%s after the followers came back: %d, %v", a.what, a.v, a.err)
		case <-ctx.Done():
			t.Fatal("a read did not return after the followers came back")
		}
	}
}
