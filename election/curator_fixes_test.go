package election_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// CURATOR-724: a LeaderLatch whose latch path vanished while it was
// disconnected never recovered. Ours makes its node again, with the path,
// once the connection is back, and leads.
func TestLatchRecoversPathDeletedWhileDisconnected(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(4*time.Second))
	admin := connect(t, zkc.Servers())
	ctx := context.Background()
	l, err := election.NewLatch(c, "/vanish/latch", "me")
	require.NoError(t, err)
	require.NoError(t, l.Start(ctx))
	defer l.Close(ctx)
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = l.Await(actx)
	require.NoError(t, err)
	first := l.Node()

	log := testutil.WatchStates(t, c)
	n := len(log.Snapshot())
	proxy.Cut() // the connection drops; the session lives
	proxy.Blackhole()
	log.WaitFor(t, n, 10*time.Second, recipes.StateSuspended)
	require.NoError(t, admin.Delete(ctx, first, -1))
	require.NoError(t, admin.Delete(ctx, "/vanish/latch", -1))
	require.NoError(t, admin.Delete(ctx, "/vanish", -1))
	proxy.Restore()
	log.WaitFor(t, n, 10*time.Second, recipes.StateReconnected)

	eventually(t, 10*time.Second, "leads again with a new node", func() bool {
		return l.HasLeadership() && l.Node() != "" && l.Node() != first
	})
	ps, err := election.Participants(ctx, admin, "/vanish/latch")
	require.NoError(t, err)
	require.Len(t, ps, 1)
	assert.Equal(t, "me", ps[0].ID)
}

// CURATOR-518 / -671: interrupting leadership twice cancelled the
// auto-requeue, and requeue failed after leadership had been lost. Ours
// leads again after two interrupts, and Requeue works after a term that
// ended by interrupt.
func TestSelectorInterruptTwiceAndRequeue(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	var terms atomic.Int32
	leading := make(chan struct{}, 10)
	lead := func(lctx context.Context, _ *election.Term) error {
		terms.Add(1)
		leading <- struct{}{}
		<-lctx.Done()
		return nil
	}
	waitLead := func(what string) {
		t.Helper()
		select {
		case <-leading:
		case <-time.After(10 * time.Second):
			t.Fatal(what)
		}
	}

	auto, err := election.NewSelector(c, "/interrupt/auto", "auto", lead, election.WithAutoRequeue())
	require.NoError(t, err)
	require.NoError(t, auto.Start(ctx))
	defer auto.Close(ctx)
	waitLead("no first term")
	auto.Interrupt()
	auto.Interrupt() // twice, as CURATOR-518
	waitLead("no term after two interrupts: auto-requeue was cancelled")
	eventually(t, 5*time.Second, "leading", auto.HasLeadership)

	once, err := election.NewSelector(c, "/interrupt/once", "once", lead)
	require.NoError(t, err)
	require.NoError(t, once.Start(ctx))
	defer once.Close(ctx)
	waitLead("no term")
	once.Interrupt()
	eventually(t, 5*time.Second, "the term ended", func() bool { return !once.HasLeadership() })
	eventually(t, 5*time.Second, "requeued after the lost term (CURATOR-671)", func() bool {
		ok, err := once.Requeue()
		return err == nil && ok
	})
	waitLead("no term after Requeue")
}
