package recipes_test

import (
	"context"
	"fmt"
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
	"github.com/zkrecipes/zkrecipes/shared"
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
// node was deleted under it makes a new one.
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
		return log.has("a node of ours is gone")
	})
}

// Watches dropped with an expired session are logged at warn when the
// recipe reads again in the new one: what changed in between went unseen.
func TestDroppedWatchesAreLogged(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	log := &records{}
	c := connect(t, []string{proxy.Addr()}, recipes.WithLogger(slog.New(log)), recipes.WithSessionTimeout(2*time.Second))
	ctx := context.Background()

	sc, err := shared.NewCount(c, "/logged/count", 1)
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	defer sc.Close(ctx)
	// The count's follower has read and left its watch before the link
	// goes: it saw another client's write. (Start's own first read
	// is not the follower's, and a follower whose first read fails on the
	// cut link has dropped no watch, so it rightly says nothing.)
	other, err := shared.NewCount(connect(t, zkc.Servers()), "/logged/count", 1)
	require.NoError(t, err)
	require.NoError(t, other.Start(ctx))
	defer other.Close(ctx)
	require.NoError(t, other.Set(ctx, 2))
	testutil.Eventually(t, 10*time.Second, "the count's watch fired and was read again", func() bool {
		return sc.Get() == 2
	})
	sid := c.SessionID()
	testutil.Eventually(t, 10*time.Second, "the count's watch listed under the session", func() bool {
		out, err := zkc.FourLetter(0, "wchc")
		return err == nil && strings.Contains(out, fmt.Sprintf("0x%x", sid))
	})
	states := testutil.WatchStates(t, c)
	proxy.Blackhole()
	states.WaitFor(t, 0, 15*time.Second, recipes.StateLost)
	// The session is over on the server too before the link heals: wchc
	// (watches by session) no longer names it.
	testutil.Eventually(t, 15*time.Second, "the session expired on the server", func() bool {
		out, err := zkc.FourLetter(0, "wchc")
		return err == nil && strings.Contains(out, "/logged/count") && !strings.Contains(out, fmt.Sprintf("0x%x", sid))
	})
	proxy.Restore()
	testutil.Eventually(t, 15*time.Second, "a new session", func() bool {
		return c.SessionID() != 0 && c.SessionID() != sid
	})
	testutil.Eventually(t, 10*time.Second, "the dropped watches logged", func() bool {
		return log.has("watches dropped with the session")
	})
}
