package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// A Start that fails leaves nothing behind: no participant with its id,
// no leadership, and the latch can be started again (the natural
// `if err := l.Start(ctx); err != nil { return err }` left a zombie leader
// that blocked the election until the client closed).
func TestLatchFailedStartLeavesNothing(t *testing.T) {
	zkc := zktest.Start(t)
	c := testutil.Connect(t, zkc.Servers())
	other := testutil.Connect(t, zkc.Servers())
	ctx := context.Background()

	l, err := election.NewLatch(c, "/zombie", "zombie")
	require.NoError(t, err)
	defer l.Close(ctx)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = l.Start(cctx)
	require.ErrorIs(t, err, context.Canceled)
	ps, err := election.Participants(ctx, c, "/zombie")
	require.NoError(t, err)
	assert.Empty(t, ps, "no participant after a failed Start")
	assert.False(t, l.HasLeadership())

	o, err := election.NewLatch(other, "/zombie", "other")
	require.NoError(t, err)
	require.NoError(t, o.Start(ctx))
	defer o.Close(ctx)
	actx, acancel := context.WithTimeout(ctx, 10*time.Second)
	defer acancel()
	_, err = o.Await(actx)
	require.NoError(t, err, "another participant leads")

	require.NoError(t, l.Start(ctx), "the latch may be started again")
	ps, err = election.Participants(ctx, c, "/zombie")
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, "other", ps[0].ID)
	assert.Equal(t, "zombie", ps[1].ID)
}

// A closed latch or selector says it is closed, not that its client is.
func TestClosedRecipeSaysSo(t *testing.T) {
	zkc := zktest.Start(t)
	c := testutil.Connect(t, zkc.Servers())
	ctx := context.Background()
	l, err := election.NewLatch(c, "/closed/latch", "me")
	require.NoError(t, err)
	require.NoError(t, l.Close(ctx))
	err = l.Start(ctx)
	assert.ErrorIs(t, err, election.ErrClosed)
	assert.ErrorContains(t, err, "leader latch /closed/latch")
	assert.NotContains(t, err.Error(), "client")
	s, err := election.NewSelector(c, "/closed/sel", "me", func(context.Context, *election.Term) error { return nil })
	require.NoError(t, err)
	require.NoError(t, s.Close(ctx))
	err = s.Start(ctx)
	assert.ErrorIs(t, err, election.ErrClosed)
	assert.NotContains(t, err.Error(), "client")

	require.NoError(t, c.Close(context.Background()))
	_, _, err = c.Get(ctx, "/")
	assert.ErrorIs(t, err, election.ErrClosed)
	assert.ErrorContains(t, err, "the client was closed")
}
