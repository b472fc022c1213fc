package zk34_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// TestZK34SelectorStops: a selector that requeues itself does not retry
// for ever on a server without containers: it logs the refusal at error
// level, naming the requirement, once, and stops queueing.
func TestZK34SelectorStops(t *testing.T) {
	zkc := testutil.StartZK34(t)
	var logs testutil.LogBuffer
	c := testutil.Connect(t, zkc.Servers(), recipes.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	s, err := election.NewSelector(c, "/sel", "a", func(ctx context.Context, _ *election.Term) error {
		<-ctx.Done()
		return nil
	}, election.WithAutoRequeue())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, s.Start(ctx))
	testutil.Eventually(t, 10*time.Second, "the selector's refusal logged", func() bool {
		return strings.Contains(logs.String(), "level=ERROR") && strings.Contains(logs.String(), "3.5.3")
	})
	// Stopped: Requeue queues it again (true) only when it is not queued.
	testutil.Eventually(t, 5*time.Second, "the selector stopped queueing", func() bool {
		ok, err := s.Requeue()
		return err == nil && ok
	})
	require.NoError(t, s.Close(ctx))
	require.Zero(t, logs.Count("attempt to lead failed"), "no retry loop: %s", logs.String())
}
