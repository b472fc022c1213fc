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
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// An item whose data does not decode is dropped, in either mode, but not
// unseen: it is counted (Unreadable) and logged at error with its bytes;
// the items after it are consumed.
func TestCorruptItemCountedAndLogged(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, mode := range []string{"normal", "lock-safety"} {
		t.Run(mode, func(t *testing.T) {
			var logs testutil.LogBuffer
			ns := recipes.WithNamespace(testutil.Namespace(t))
			c := connect(t, zkc.Servers(), ns)
			admin := connect(t, zkc.Servers(), ns)
			_, err := admin.CreateWithParents(ctx, "/q/"+queue.ItemPrefix, []byte("not framed"), zk.FlagSequence)
			require.NoError(t, err)
			prod, err := queue.New(admin, "/q")
			require.NoError(t, err)
			require.NoError(t, prod.Put(ctx, []byte("good")))
			col := &collector{}
			opts := []queue.Option{queue.WithConsumer(col), queue.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))}
			if mode == "lock-safety" {
				opts = append(opts, queue.WithLockPath("/locks"))
			}
			q, err := queue.New(c, "/q", opts...)
			require.NoError(t, err)
			require.NoError(t, q.Start(ctx))
			defer closeQ(t, q.Close)
			assert.Equal(t, []string{"good"}, col.wait(t, 1))
			assert.Equal(t, int64(1), q.Unreadable())
			assert.Contains(t, logs.String(), `corrupt queue item dropped`)
			assert.Contains(t, logs.String(), `not framed`, "its bytes logged")
		})
	}
}

// Start makes the queue's and lock directories with Curator's default
// data, the local IP address (what a mutex node holds by default), not
// null.
func TestStartMakesDirectoriesWithDefaultData(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, zkc.Servers(), recipes.WithNamespace(testutil.Namespace(t)))
	q, err := queue.New(c, "/jobs/q", queue.WithConsumer(&collector{}), queue.WithLockPath("/jobs/locks"))
	require.NoError(t, err)
	require.NoError(t, q.Start(ctx))
	defer closeQ(t, q.Close)
	m, err := mutex.New(c, "/jobs/m")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	ip, _, err := c.Get(ctx, lease.Node())
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))
	for _, dir := range []string{"/jobs/q", "/jobs/locks"} {
		data, _, err := c.Get(ctx, dir)
		require.NoError(t, err)
		assert.Equal(t, string(ip), string(data), dir)
	}
}
