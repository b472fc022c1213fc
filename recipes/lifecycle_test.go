package recipes_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cleanup"
	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/shared"
)

// lifecycle is one long-lived recipe seen through the lifecycle every one
// of them shares: Start(ctx) (nil for one that starts when made), one call
// that uses it, and Close(ctx).
type lifecycle struct {
	start func(ctx context.Context) error
	use   func(ctx context.Context) error
	close func(ctx context.Context) error
}

// Every long-lived recipe has one lifecycle, with the same errors: a second
// Start gives ErrAlreadyStarted, a Start that failed may be called again,
// Close may be called before Start and more than once, and after Close
// every call gives ErrClosed, which a closed Client's ErrClientClosed is
// told apart from.
func TestOneLifecycle(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	kinds := map[string]func(c *recipes.Client, path string) lifecycle{
		"Latch": func(c *recipes.Client, path string) lifecycle {
			l, err := election.NewLatch(c, path, "me")
			require.NoError(t, err)
			return lifecycle{l.Start, func(ctx context.Context) error { _, err := l.Await(ctx); return err }, l.Close}
		},
		"Selector": func(c *recipes.Client, path string) lifecycle {
			s, err := election.NewSelector(c, path, "me", func(ctx context.Context, _ *election.Term) error {
				<-ctx.Done()
				return nil
			})
			require.NoError(t, err)
			return lifecycle{s.Start, func(context.Context) error { _, err := s.Requeue(); return err }, s.Close}
		},
		"Reaper": func(c *recipes.Client, path string) lifecycle {
			r, err := cleanup.New(c, cleanup.WithLeaderElection(path+"/leader", "me"))
			require.NoError(t, err)
			return lifecycle{r.Start, func(context.Context) error { return r.AddPath(path + "/reaped") }, r.Close}
		},
		"SharedCount": func(c *recipes.Client, path string) lifecycle {
			s, err := shared.NewCount(c, path, 1)
			require.NoError(t, err)
			return lifecycle{s.Start, func(ctx context.Context) error { return s.Set(ctx, 2) }, s.Close}
		},
		"SharedValue": func(c *recipes.Client, path string) lifecycle {
			s, err := shared.NewValue(c, path, []byte("1"))
			require.NoError(t, err)
			return lifecycle{s.Start, func(ctx context.Context) error { return s.Set(ctx, []byte("2")) }, s.Close}
		},
	}
	for name, make := range kinds {
		t.Run(name, func(t *testing.T) {
			c := connect(t, zkc.Servers())
			r := make(c, "/lifecycle/"+name)
			require.NoError(t, r.close(ctx), "Close before Start")
			require.NoError(t, r.close(ctx), "a second Close")
			assertClosed(t, r, "after Close")

			r = make(c, "/lifecycle/"+name+"2")
			if r.start != nil {
				err := r.start(cancelled)
				require.ErrorIs(t, err, context.Canceled, "Start with an ended ctx")
				require.NoError(t, r.start(ctx), "Start again after a failed one")
				require.ErrorIs(t, r.start(ctx), recipes.ErrAlreadyStarted, "a second Start")
			}
			require.NoError(t, r.use(ctx))
			require.NoError(t, r.close(ctx))
			assertClosed(t, r, "after Start and Close")

			// A running recipe on a closed client: ErrClientClosed, which
			// is also ErrClosed.
			r = make(c, "/lifecycle/"+name+"3")
			if r.start != nil {
				require.NoError(t, r.start(ctx))
			}
			require.NoError(t, c.Close(ctx))
			err := r.use(ctx)
			assert.ErrorIs(t, err, recipes.ErrClientClosed, "use with the client closed: %v", err)
			assert.ErrorIs(t, err, recipes.ErrClosed, "use with the client closed")
			assert.NoError(t, r.close(ctx), "Close with the client closed")
		})
	}
}

func assertClosed(t *testing.T, r lifecycle, when string) {
	t.Helper()
	ctx := context.Background()
	err := r.use(ctx)
	assert.ErrorIs(t, err, recipes.ErrClosed, "use %s", when)
	assert.NotErrorIs(t, err, recipes.ErrClientClosed, "use %s: %v", when, err)
	if r.start != nil {
		err := r.start(ctx)
		assert.ErrorIs(t, err, recipes.ErrClosed, "Start %s", when)
		assert.NotErrorIs(t, err, recipes.ErrClientClosed, fmt.Sprintf("Start %s: %v", when, err))
	}
}
