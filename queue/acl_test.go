package queue_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// A consumer that may not list its queue (the queue node exists, with an
// ACL that leaves it out) says so at error level and does not list it
// again on a timer: a refusal lasts until someone changes the ACL or the
// credentials. It lists again at the next change of connection state.
func TestConsumerDoesNotRetryNoAuth(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	owner := testutil.Connect(t, zkc.Servers(), recipes.WithAuth("digest", []byte("svc:secret")),
		recipes.WithACLProvider(recipes.ACLProviderFunc(func(string) []zk.ACL { return zk.AuthACL(zk.PermAll) })))
	_, err := owner.Create(ctx, "/guarded", nil, 0)
	require.NoError(t, err)
	var logs testutil.LogBuffer
	other := testutil.Connect(t, zkc.Servers(), recipes.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	q, err := queue.New(other, "/guarded", queue.WithConsumer(queue.ConsumerFunc(func(context.Context, *queue.Message) error {
		t.Error("a consumer without rights got an item")
		return nil
	})))
	require.NoError(t, err)
	require.NoError(t, q.Start(ctx), "the queue node exists: Start has nothing to make")
	defer q.Close(ctx)
	require.Eventually(t, func() bool { return logs.Count("not authenticated") > 0 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, logs.Count("level=ERROR"), "the refusal is an error")
	// A loop on a timer (one second) would list it again in this window.
	assert.Never(t, func() bool { return logs.Count("not authenticated") > 1 }, 1500*time.Millisecond, 20*time.Millisecond,
		"the refused listing was tried again")
}
