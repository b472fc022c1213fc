package recipes_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// A cache creates nothing and fails no Start for a node it may not read:
// it leaves the node out (and so its subtree), logs it at warn, and is
// ready at once, as the cache's documentation says; so does a service
// cache over a service whose instances it may not list. What it may read
// it caches as usual.
func TestACLNoRightsCacheLeavesOut(t *testing.T) {
	zkc := zktest.Start(t)
	svc := connect(t, zkc.Servers(), recipes.WithNamespace("acl"),
		recipes.WithAuth("digest", []byte(svcAuth)), recipes.WithACLProvider(recipes.ACLProviderFunc(svcACL)))
	runEveryRecipe(t, svc)
	var logs syncBuffer
	other := connect(t, zkc.Servers(), recipes.WithNamespace("acl"),
		recipes.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	locks, err := cache.NewTreeCache(other, "/locks")
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, locks.Start(ctx), "a cache Start does not fail for a node it may not read")
	defer locks.Close(context.Background())
	require.NoError(t, locks.WaitReady(ctx))
	assert.Less(t, time.Since(start), 3*time.Second)
	_, ok := locks.Get("/locks")
	assert.False(t, ok, "the unreadable root is left out")
	assert.Zero(t, locks.Size())
	assert.Contains(t, logs.String(), "may not read a node; it is left out")
	assert.Contains(t, logs.String(), "node=/locks")

	public, err := cache.NewTreeCache(other, "/public") // world-readable (svcACL)
	require.NoError(t, err)
	require.NoError(t, public.Start(ctx))
	defer public.Close(context.Background())
	require.NoError(t, public.WaitReady(ctx))
	n, ok := public.Get("/public/value")
	require.True(t, ok, "a readable node is cached")
	assert.Equal(t, "v", string(n.Data))

	d, err := discovery.New(other, "/services")
	require.NoError(t, err)
	require.NoError(t, d.Start(ctx))
	defer d.Close(context.Background())
	sc, err := d.NewServiceCache("orders")
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	defer sc.Close(context.Background())
	require.NoError(t, sc.WaitReady(ctx))
	assert.Empty(t, sc.Instances(), "instances it may not list are left out")
	assert.Contains(t, logs.String(), "node=/services/orders")
}
