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
// node was deleted under it makes a new one. (Follow's warning for watches
// dropped with a session has no test yet: one passed on 3.8.0 and failed on
// 3.9.6, cause not found.)
func TestBackgroundEventsAreLoggedAtWarn(t *testing.T) {
	zkc := zktest.Start(t)
	log := &records{}
	c := connect(t, zkc.Servers(), recipes.WithLogger(slog.New(log)))
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
}
