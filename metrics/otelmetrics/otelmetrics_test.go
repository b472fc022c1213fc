package otelmetrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	zkutil "github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/metrics/otelmetrics"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

func TestMain(m *testing.M) { zkutil.Main(m) }

func TestMetricsNew(t *testing.T) {
	_, err := otelmetrics.New(nil)
	require.ErrorIs(t, err, recipes.ErrInvalidArgument)
}

// collected reads everything the reader has.
func collected(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelmetrics.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// sum returns the value of the sum point with the given attributes.
func sum(t *testing.T, ms map[string]metricdata.Metrics, name string, kv ...attribute.KeyValue) float64 {
	t.Helper()
	s, ok := ms[name].Data.(metricdata.Sum[float64])
	if !ok {
		return 0
	}
	want := attribute.NewSet(kv...)
	for _, p := range s.DataPoints {
		if p.Attributes.Equals(&want) {
			return p.Value
		}
	}
	return 0
}

// count returns the sample count of the histogram point with the given attributes.
func count(t *testing.T, ms map[string]metricdata.Metrics, name string, kv ...attribute.KeyValue) uint64 {
	t.Helper()
	h, ok := ms[name].Data.(metricdata.Histogram[float64])
	if !ok {
		return 0
	}
	want := attribute.NewSet(kv...)
	for _, p := range h.DataPoints {
		if p.Attributes.Equals(&want) {
			return p.Count
		}
	}
	return 0
}

// TestMetricsOpenTelemetry runs a lock cycle and a connection cut against
// a real server and reads the outcome with the SDK's ManualReader.
func TestMetricsOpenTelemetry(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	om, err := otelmetrics.New(mp)
	require.NoError(t, err)
	c := zkutil.Connect(t, []string{proxy.Addr()}, recipes.WithMetrics(om), recipes.WithNamespace("app"))
	ctx := context.Background()

	m, err := mutex.New(c, "/locks/a")
	require.NoError(t, err)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))

	ms := collected(t, reader)
	assert.GreaterOrEqual(t, sum(t, ms, "zkrecipes.requests", attribute.String("op", "create"), attribute.String("result", "ok")), 1.0)
	assert.Zero(t, sum(t, ms, "zkrecipes.requests", attribute.String("op", "create"), attribute.String("result", "no_node")))
	assert.GreaterOrEqual(t, sum(t, ms, "zkrecipes.requests", attribute.String("op", "create"), attribute.String("result", "no_parent")), 1.0)
	lock := []attribute.KeyValue{attribute.String("recipe", "mutex"), attribute.String("zk_namespace", "app"), attribute.String("path", "/locks/a")}
	assert.Equal(t, uint64(1), count(t, ms, "zkrecipes.recipe.wait", lock...))
	assert.Equal(t, uint64(1), count(t, ms, "zkrecipes.recipe.hold", lock...))
	assert.Equal(t, uint64(1), count(t, ms, "zkrecipes.recipe.queue", lock...))
	assert.Equal(t, 1.0, sum(t, ms, "zkrecipes.recipe.acquires", append(lock, attribute.String("result", "acquired"))...))
	assert.Equal(t, 0.0, sum(t, ms, "zkrecipes.recipe.held", lock...))
	assert.Equal(t, "s", ms["zkrecipes.recipe.wait"].Unit)

	proxy.Cut()
	zktest.Eventually(t, 10*time.Second, "RECONNECTED counted", func() bool {
		return sum(t, collected(t, reader), "zkrecipes.connection.state_changes", attribute.String("state", "RECONNECTED")) == 1
	})
	ms = collected(t, reader)
	assert.Equal(t, 1.0, sum(t, ms, "zkrecipes.connection.state_changes", attribute.String("state", "SUSPENDED")))
	assert.Equal(t, 1.0, sum(t, ms, "zkrecipes.connection.state_changes", attribute.String("state", "CONNECTED")))
	assert.Greater(t, sum(t, ms, "zkrecipes.connection.suspended"), 0.0)
}
