package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
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
	assert.ErrorIs(t, err, recipes.ErrClosed)
	assert.ErrorContains(t, err, "leader latch /closed/latch")
	assert.NotContains(t, err.Error(), "client")
	s, err := election.NewSelector(c, "/closed/sel", "me", func(context.Context, *election.Term) error { return nil })
	require.NoError(t, err)
	require.NoError(t, s.Close(ctx))
	err = s.Start(ctx)
	assert.ErrorIs(t, err, recipes.ErrClosed)
	assert.NotContains(t, err.Error(), "client")

	require.NoError(t, c.Close(context.Background()))
	_, _, err = c.Get(ctx, "/")
	assert.ErrorIs(t, err, recipes.ErrClosed)
	assert.ErrorContains(t, err, "the client is closed")
}

// A leader that resigns steps down and stays usable: its term's Done
// closes, its listeners hear the end, its node goes and the other
// participant leads; Start rejoins at the back of the queue and it leads
// again once the other closes. A follower blocked in Await when it resigns
// is told it is not started. Resign before Start is ErrNotStarted; after
// Close, Resign and Start say closed.
func TestLatchResignAndRejoin(t *testing.T) {
	zkc := zktest.Start(t)
	c := testutil.Connect(t, zkc.Servers())
	other := testutil.Connect(t, zkc.Servers())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const path = "/resign"

	a, err := election.NewLatch(c, path, "a")
	require.NoError(t, err)
	defer a.Close(ctx)
	require.ErrorIs(t, a.Resign(ctx), recipes.ErrNotStarted, "Resign before Start")
	events := make(chan bool, 8)
	a.Listen(func(b bool) { events <- b })
	require.NoError(t, a.Start(ctx))
	term, err := a.Await(ctx)
	require.NoError(t, err)
	require.True(t, <-events)
	node := a.Node()

	b, err := election.NewLatch(other, path, "b")
	require.NoError(t, err)
	defer b.Close(ctx)
	require.NoError(t, b.Start(ctx))

	require.NoError(t, a.Resign(ctx))
	assert.True(t, notify.IsClosed(term.Done()), "the resigned term's Done is closed when Resign returns")
	assert.False(t, a.HasLeadership())
	assert.Nil(t, a.Term())
	assert.Empty(t, a.Node())
	assert.False(t, <-events, "the listeners hear that leadership ended")
	ok, _, err := c.Exists(ctx, node)
	require.NoError(t, err)
	assert.False(t, ok, "the resigned node is gone")
	bt, err := b.Await(ctx)
	require.NoError(t, err, "the other participant leads")
	assert.Equal(t, "b", bt.ID())
	_, err = a.Await(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotStarted, "Await after Resign")
	require.ErrorIs(t, a.Resign(ctx), recipes.ErrNotStarted, "Resign twice")

	// Rejoin: a new node at the back of the queue.
	require.NoError(t, a.Start(ctx))
	assert.NotEqual(t, node, a.Node())
	ps, err := a.Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 2)
	assert.Equal(t, recipes.Participant{ID: "b", Node: b.Node(), Holds: true}, ps[0])
	assert.Equal(t, recipes.Participant{ID: "a", Node: a.Node()}, ps[1])
	assert.False(t, a.HasLeadership())
	assert.ErrorIs(t, a.Start(ctx), recipes.ErrAlreadyStarted)

	// A follower waiting in Await when it resigns.
	awaited := make(chan error, 1)
	go func() { _, err := a.Await(ctx); awaited <- err }()
	require.NoError(t, a.Resign(ctx))
	select {
	case err := <-awaited:
		assert.ErrorIs(t, err, recipes.ErrNotStarted, "Await interrupted by Resign")
	case <-ctx.Done():
		t.Fatal("Await did not return after Resign")
	}
	ps, err = a.Participants(ctx)
	require.NoError(t, err)
	assert.Len(t, ps, 1, "a follower's Resign removes its node")

	// Once more, then the other closes: a leads.
	require.NoError(t, a.Start(ctx))
	require.NoError(t, b.Close(ctx))
	term, err = a.Await(ctx)
	require.NoError(t, err, "the rejoined latch leads after the other closes")
	assert.Equal(t, a.Node(), term.Node())
	assert.True(t, <-events)

	// Close is final.
	require.NoError(t, a.Close(ctx))
	assert.ErrorIs(t, a.Start(ctx), recipes.ErrClosed, "Start after Close")
	assert.ErrorIs(t, a.Resign(ctx), recipes.ErrClosed, "Resign after Close")
}
