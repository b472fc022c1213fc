package prommetrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	zkutil "github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/metrics/prommetrics"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

func TestMain(m *testing.M) { zkutil.Main(m) }

func TestMetricsNew(t *testing.T) {
	_, err := prommetrics.New(nil)
	require.ErrorIs(t, err, recipes.ErrInvalidArgument)
	reg := prometheus.NewRegistry()
	_, err = prommetrics.New(reg)
	require.NoError(t, err)
	_, err = prommetrics.New(reg)
	require.Error(t, err, "the same collectors twice")
}

// histogramCount returns the sample count of the histogram series of
// family name with the given label pairs.
func histogramCount(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) uint64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			return m.GetHistogram().GetSampleCount()
		}
	}
	return 0
}

// TestMetricsPrometheus runs a lock cycle and a connection cut against a
// real server and reads the outcome from a Prometheus registry.
func TestMetricsPrometheus(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	reg := prometheus.NewRegistry()
	pm, err := prommetrics.New(reg)
	require.NoError(t, err)
	c := zkutil.Connect(t, []string{proxy.Addr()}, recipes.WithMetrics(pm), recipes.WithNamespace("app"))
	ctx := context.Background()

	m, err := mutex.New(c, "/locks/a")
	require.NoError(t, err)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))

	creates := pm.Counter(recipes.MetricRequests, "create", "ok").(prometheus.Collector)
	assert.GreaterOrEqual(t, testutil.ToFloat64(creates), 1.0)
	assert.Zero(t, testutil.ToFloat64(pm.Counter(recipes.MetricRequests, "create", "no_node").(prometheus.Collector)),
		"the parents' NoNode is part of a healthy create")
	assert.GreaterOrEqual(t, testutil.ToFloat64(pm.Counter(recipes.MetricRequests, "create", "no_parent").(prometheus.Collector)), 1.0)
	lockSeries := map[string]string{"recipe": "mutex", "zk_namespace": "app", "path": "/locks/a"}
	assert.Equal(t, uint64(1), histogramCount(t, reg, "zkrecipes_recipe_wait_seconds", lockSeries))
	assert.Equal(t, uint64(1), histogramCount(t, reg, "zkrecipes_recipe_hold_seconds", lockSeries))
	assert.Equal(t, uint64(1), histogramCount(t, reg, "zkrecipes_recipe_queue", lockSeries))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP zkrecipes_recipe_acquires_total `+recipes.MetricAcquires.Help+`
# TYPE zkrecipes_recipe_acquires_total counter
zkrecipes_recipe_acquires_total{path="/locks/a",recipe="mutex",result="acquired",zk_namespace="app"} 1
zkrecipes_recipe_acquires_total{path="/locks/a",recipe="mutex",result="ctx_done",zk_namespace="app"} 0
zkrecipes_recipe_acquires_total{path="/locks/a",recipe="mutex",result="error",zk_namespace="app"} 0
zkrecipes_recipe_acquires_total{path="/locks/a",recipe="mutex",result="lost",zk_namespace="app"} 0
zkrecipes_recipe_acquires_total{path="/locks/a",recipe="mutex",result="not_acquired",zk_namespace="app"} 0
# HELP zkrecipes_recipe_held `+recipes.MetricHeld.Help+`
# TYPE zkrecipes_recipe_held gauge
zkrecipes_recipe_held{path="/locks/a",recipe="mutex",zk_namespace="app"} 0
`), "zkrecipes_recipe_acquires_total", "zkrecipes_recipe_held"))

	proxy.Cut()
	reconnected := pm.Counter(recipes.MetricStateChanges, "RECONNECTED").(prometheus.Collector)
	zktest.Eventually(t, 10*time.Second, "RECONNECTED counted", func() bool { return testutil.ToFloat64(reconnected) == 1 })
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP zkrecipes_connection_state_changes_total `+recipes.MetricStateChanges.Help+`
# TYPE zkrecipes_connection_state_changes_total counter
zkrecipes_connection_state_changes_total{state="CONNECTED"} 1
zkrecipes_connection_state_changes_total{state="LOST"} 0
zkrecipes_connection_state_changes_total{state="READ_ONLY"} 0
zkrecipes_connection_state_changes_total{state="RECONNECTED"} 1
zkrecipes_connection_state_changes_total{state="SUSPENDED"} 1
`), "zkrecipes_connection_state_changes_total"))
	suspended := pm.Counter(recipes.MetricSuspended).(prometheus.Collector)
	assert.Greater(t, testutil.ToFloat64(suspended), 0.0)
}

// BenchmarkLockCycleMeasurements makes the measurements one uncontended
// Lock+Unlock makes with metrics on (three requests, an acquisition, the
// held gauge up and down, the queue, wait and hold samples, and the
// clock reads behind them), to put a figure on their CPU cost.
func BenchmarkLockCycleMeasurements(b *testing.B) {
	pm, err := prommetrics.New(prometheus.NewRegistry())
	require.NoError(b, err)
	create := pm.Counter(recipes.MetricRequests, "create", "ok")
	children := pm.Counter(recipes.MetricRequests, "get_children", "ok")
	del := pm.Counter(recipes.MetricRequests, "delete", "ok")
	acq := pm.Counter(recipes.MetricAcquires, "mutex", "app", "/a", "acquired")
	held := pm.Gauge(recipes.MetricHeld, "mutex", "app", "/a")
	queue := pm.Histogram(recipes.MetricQueue, "mutex", "app", "/a")
	wait := pm.Histogram(recipes.MetricWait, "mutex", "app", "/a")
	hold := pm.Histogram(recipes.MetricHold, "mutex", "app", "/a")
	b.ReportAllocs()
	for b.Loop() {
		since := time.Now()
		create.Add(1)
		children.Add(1)
		queue.Observe(0)
		now := time.Now()
		acq.Add(1)
		wait.Observe(now.Sub(since).Seconds())
		held.Add(1)
		end := time.Now()
		hold.Observe(end.Sub(now).Seconds())
		held.Add(-1)
		del.Add(1)
	}
}
