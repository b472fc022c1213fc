package election_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// A selector with WithAutoRequeue that may not create its node (NoAuth)
// stops queueing after the first refusal and says so at error level,
// rather than trying again every few milliseconds for ever: a refusal
// lasts until someone changes the credentials or the ACL, and then
// Requeue queues it again.
func TestSelectorStopsRequeueingOnNoAuth(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	owner := connect(t, zkc.Servers(), recipes.WithAuth("digest", []byte("svc:secret")),
		recipes.WithACLProvider(recipes.ACLProviderFunc(func(string) []zk.ACL { return zk.AuthACL(zk.PermAll) })))
	_, err := owner.CreateWithParents(ctx, "/sel/guarded", nil, 0)
	require.NoError(t, err)
	var logs testutil.LogBuffer
	other := connect(t, zkc.Servers(), recipes.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	s, err := election.NewSelector(other, "/sel/guarded", "intruder", func(ctx context.Context, _ *election.Term) error {
		t.Error("a selector without rights led")
		return nil
	}, election.WithAutoRequeue())
	require.NoError(t, err)
	require.NoError(t, s.Start(ctx))
	defer s.Close(ctx)
	stopped := assert.Eventually(t, func() bool {
		queued, err := s.Requeue() // true once the selector stopped queueing
		return err == nil && queued
	}, 5*time.Second, 10*time.Millisecond, "the selector keeps queueing after NoAuth")
	out := logs.String()
	if !stopped {
		t.Fatalf("%d lines logged:\n%.2000s", strings.Count(out, "\n"), out)
	}
	assert.Contains(t, out, "level=ERROR")
	assert.Contains(t, out, "not authenticated")
	assert.Contains(t, out, "/sel/guarded")
	assert.Less(t, strings.Count(out, "\n"), 5, "attempts logged:\n%s", out)
}

// An observer that may not read the election (NoAuth) says so at error
// level and does not read it again on a timer, only at the next change
// of connection state; its channel stays silent until then.
func TestObserveDoesNotRetryNoAuth(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	owner := connect(t, zkc.Servers(), recipes.WithAuth("digest", []byte("svc:secret")),
		recipes.WithACLProvider(recipes.ACLProviderFunc(func(string) []zk.ACL { return zk.AuthACL(zk.PermAll) })))
	l, err := election.NewLatch(owner, "/obs/guarded", "svc")
	require.NoError(t, err)
	require.NoError(t, l.Start(ctx))
	defer l.Close(context.Background())
	var logs testutil.LogBuffer
	other := connect(t, zkc.Servers(), recipes.WithRetryPolicy(recipes.RetryForever(2*time.Millisecond)),
		recipes.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	ch, err := election.Observe(ctx, other, "/obs/guarded")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "not authenticated") }, 5*time.Second, 10*time.Millisecond)
	assert.Contains(t, logs.String(), "level=ERROR")
	// With a 2ms retry policy, a loop that retried would log ~100 refusals
	// in this window.
	assert.Never(t, func() bool { return strings.Count(logs.String(), "not authenticated") > 1 }, 200*time.Millisecond, 5*time.Millisecond,
		"the refused read was tried again:\n%s", logs.String())
	select {
	case p := <-ch:
		t.Fatalf("an observer without rights saw %+v", p)
	default:
	}
}
