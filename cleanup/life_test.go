package cleanup_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cleanup"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// A Close that comes during Start (before it, while the reaper joins its
// election, or once its node is made) leaves no election node and no
// goroutine (TestMain checks): Start then succeeds, or says the reaper
// closed.
func TestReaperCloseDuringStart(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	for i := range 8 {
		r, err := cleanup.New(c, cleanup.WithThreshold(time.Hour), cleanup.WithLeaderElection("/life/reapers", fmt.Sprint("id", i)))
		require.NoError(t, err)
		errc := make(chan error, 1)
		go func() { errc <- r.Start(ctx) }()
		if i%2 == 1 {
			eventually(t, 5*time.Second, "the election node", func() bool {
				kids, _, err := c.Children(ctx, "/life/reapers")
				return err == nil && len(kids) > 0
			})
		}
		require.NoError(t, r.Close(ctx))
		err = <-errc
		t.Logf("round %d: Start = %v", i, err)
		if err != nil && !errors.Is(err, recipes.ErrClosed) {
			t.Fatalf("round %d: Start with a Close meanwhile = %v", i, err)
		}
		require.ErrorIs(t, r.Start(ctx), recipes.ErrClosed, "round %d: Start after Close", i)
		kids, _, err := c.Children(ctx, "/life/reapers")
		if !errors.Is(err, zk.ErrNoNode) {
			require.NoError(t, err)
		}
		require.Empty(t, kids, "round %d: an election node left", i)
	}
}
