package discovery_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/par"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// Ready means ready: once Start returns, a ServiceCache lists every
// instance and a Provider (no strategy set: round robin) returns one, at
// 1,000 instances, read right after Start, 20 of 20 times.
func TestReadyAfterStart(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 1000
	d := newDiscovery(t, connect(t, zkc.Servers()), "/services")
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	require.NoError(t, par.Each(64, idx, func(i int) error {
		return d.Register(ctx, &discovery.Instance{Name: "s", ID: fmt.Sprintf("i%04d", i), Port: 1})
	}))
	reader := newDiscovery(t, connect(t, zkc.Servers()), "/services")
	cacheMissing, providerNil := 0, 0
	for range 20 {
		sc, err := reader.NewServiceCache("s")
		require.NoError(t, err)
		require.NoError(t, sc.Start(ctx))
		if len(sc.Instances()) != n {
			cacheMissing++
		}
		require.NoError(t, sc.WaitReady(ctx), "ready once Start returned")
		require.NoError(t, sc.Close(ctx))

		p, err := reader.NewProvider("s")
		require.NoError(t, err)
		require.NoError(t, p.Start(ctx))
		if p.Instance() == nil {
			providerNil++
		}
		require.NoError(t, p.Close(ctx))
	}
	assert.Zero(t, cacheMissing, "ServiceCache.Instances() incomplete right after Start (of 20)")
	assert.Zero(t, providerNil, "Provider.Instance() nil right after Start (of 20)")
}

// A ServiceCache listener never hears the same instances twice in a row:
// an instance's node written again with the same bytes is no change.
func TestServiceCacheNoRepeatedState(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := connect(t, zkc.Servers())
	d := newDiscovery(t, connect(t, zkc.Servers()), "/services")
	require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "s", ID: "a", Port: 1}))
	sc, err := newDiscovery(t, connect(t, zkc.Servers()), "/services").NewServiceCache("s")
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	defer sc.Close(ctx)
	heard := make(chan []*discovery.Instance, 16)
	sc.Listen(func(l []*discovery.Instance) { heard <- l })
	data, _, err := admin.Get(ctx, "/services/s/a")
	require.NoError(t, err)
	for range 3 { // the same bytes, three times
		_, err = admin.Set(ctx, "/services/s/a", data, -1)
		require.NoError(t, err)
	}
	require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "s", ID: "b", Port: 1}))
	var states [][]string
	for len(states) == 0 || len(states[len(states)-1]) < 2 {
		select {
		case l := <-heard:
			states = append(states, ids(l))
		case <-ctx.Done():
			t.Fatalf("b never heard; heard %v", states)
		}
	}
	assert.Equal(t, [][]string{{"a"}, {"a", "b"}}, states, "the current state, then b: nothing in between")
}

// Subscribe is Listen for a channel: the loaded instances first.
func TestServiceCacheSubscribe(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := newDiscovery(t, connect(t, zkc.Servers()), "/services")
	require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "s", ID: "a", Port: 1}))
	sc, err := d.NewServiceCache("s")
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	defer sc.Close(ctx)
	ch, stop := sc.Subscribe()
	defer stop()
	assert.Equal(t, []string{"a"}, ids(<-ch))
	require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "s", ID: "b", Port: 1}))
	assert.Equal(t, []string{"a", "b"}, ids(<-ch))
}
