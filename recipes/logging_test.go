package recipes_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// records is a slog handler that keeps the messages of warn and above.
type records struct {
	mu   sync.Mutex
	msgs []string
}

func (r *records) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Message)
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) has(substr string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.msgs {
		if strings.Contains(m, substr) {
			return true
		}
	}
	return false
}

// What goes wrong away from the caller is logged at warn: a latch whose
// node was deleted under it makes a new one, and watches dropped with an
// expired session are read again.
func TestBackgroundEventsAreLoggedAtWarn(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	log := &records{}
	c := connect(t, []string{proxy.Addr()}, recipes.WithLogger(slog.New(log)), recipes.WithSessionTimeout(2*time.Second))
	admin := connect(t, zkc.Servers())
	ctx := context.Background()

	latch, err := election.NewLatch(c, "/logged/latch", "me")
	require.NoError(t, err)
	require.NoError(t, latch.Start(ctx))
	defer latch.Close(ctx)
	_, err = latch.Await(ctx)
	require.NoError(t, err)
	require.NoError(t, admin.Delete(ctx, latch.Node(), -1))
	testutil.Eventually(t, 10*time.Second, "the recreated latch node logged", func() bool {
		return log.has("participant's node is gone")
	})

	sc, err := semaphore.NewSharedCount(ctx, c, "/logged/count", 1)
	require.NoError(t, err)
	defer sc.Close(ctx)
	// The shared count's watch is on the server (wchp lists the watched
	// paths) before the link goes, so the session that expires has it.
	testutil.Eventually(t, 10*time.Second, "the shared count's watch set", func() bool {
		out, err := zkc.FourLetter(0, "wchp")
		return err == nil && strings.Contains(out, "/logged/count")
	})
	states := testutil.WatchStates(t, c)
	proxy.Blackhole()
	states.WaitFor(t, 0, 15*time.Second, recipes.StateLost)
	// The session is over on the server too before the link heals.
	testutil.Eventually(t, 15*time.Second, "the session expired on the server", func() bool {
		kids, _, err := admin.Children(ctx, "/logged/latch")
		return err == nil && len(kids) == 0
	})
	proxy.Restore()
	states.WaitFor(t, 0, 15*time.Second, recipes.StateReconnected)
	testutil.Eventually(t, 10*time.Second, "the dropped watches logged", func() bool {
		return log.has("watches dropped with the session")
	})
}
