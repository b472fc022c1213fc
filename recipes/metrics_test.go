package recipes_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/metric"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// sink is a recipes.Metrics that records what it is given, by series
// ("name{v1,v2}"). It stands in for a metrics library, not for ZooKeeper.
type sink struct {
	mu      sync.Mutex
	kinds   map[string]recipes.MetricKind
	values  map[string]float64   // counters and gauges
	samples map[string][]float64 // histograms
}

func newSink() *sink {
	return &sink{kinds: map[string]recipes.MetricKind{}, values: map[string]float64{}, samples: map[string][]float64{}}
}

type series struct {
	s   *sink
	key string
}

func (r series) Add(d float64) {
	r.s.mu.Lock()
	r.s.values[r.key] += d
	r.s.mu.Unlock()
}

func (r series) Observe(v float64) {
	r.s.mu.Lock()
	r.s.samples[r.key] = append(r.s.samples[r.key], v)
	r.s.mu.Unlock()
}

func (s *sink) series(m recipes.Metric, k recipes.MetricKind, lv []string) series {
	if m.Kind != k || len(lv) != len(m.Labels) {
		panic(fmt.Sprintf("%s: asked as %v with %d label values", m.Name, k, len(lv)))
	}
	key := m.Name + "{" + strings.Join(lv, ",") + "}"
	s.mu.Lock()
	s.kinds[key] = k
	s.mu.Unlock()
	return series{s, key}
}

func (s *sink) Counter(m recipes.Metric, lv ...string) recipes.Counter {
	return s.series(m, recipes.KindCounter, lv)
}

func (s *sink) Gauge(m recipes.Metric, lv ...string) recipes.Gauge {
	return s.series(m, recipes.KindGauge, lv)
}

func (s *sink) Histogram(m recipes.Metric, lv ...string) recipes.Histogram {
	return s.series(m, recipes.KindHistogram, lv)
}

func (s *sink) value(key string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values[key]
}

func (s *sink) obs(key string) []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]float64(nil), s.samples[key]...)
}

func TestMetricsOption(t *testing.T) {
	_, err := testutil.Dial(context.Background(), []string{"127.0.0.1:1"}, recipes.WithMetrics(nil))
	require.ErrorIs(t, err, recipes.ErrInvalidArgument)
	names := map[string]bool{}
	for _, m := range recipes.AllMetrics() {
		assert.False(t, names[m.Name], "duplicate %s", m.Name)
		names[m.Name] = true
		assert.NotEmpty(t, m.Help, m.Name)
		assert.Equal(t, m.Kind == recipes.KindHistogram, len(m.Buckets) > 0, m.Name)
	}
	for k, ek := range map[recipes.MetricKind]metric.Kind{
		recipes.KindCounter: metric.KindCounter, recipes.KindGauge: metric.KindGauge, recipes.KindHistogram: metric.KindHistogram,
	} {
		assert.Equal(t, int(ek), int(k), "the engine's number for %v", k)
		assert.Equal(t, ek.String(), k.String())
	}
	assert.Equal(t, "zkrecipes_recipe_wait_seconds", recipes.MetricWait.PrometheusName())
	assert.Equal(t, "zkrecipes_requests_total", recipes.MetricRequests.PrometheusName())
	assert.Equal(t, "zkrecipes_connection_suspended_seconds_total", recipes.MetricSuspended.PrometheusName())
}

// TestMetricsCore checks the measurements themselves, with a recording
// sink: a lock cycle, a contended TryLock, a connection cut.
func TestMetricsCore(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	s := newSink()
	c := connect(t, []string{proxy.Addr()}, recipes.WithMetrics(s), recipes.WithNamespace("app"))
	other := connect(t, zkc.Servers())
	ctx := context.Background()

	assert.Equal(t, 1.0, s.value("zkrecipes.connection.state_changes{CONNECTED}"))
	m, err := mutex.New(c, "/m")
	require.NoError(t, err)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1.0, s.value("zkrecipes.recipe.held{mutex,app,/m}"))
	require.NoError(t, l.Release(ctx))

	assert.GreaterOrEqual(t, s.value("zkrecipes.requests{create,ok}"), 1.0)
	assert.GreaterOrEqual(t, s.value("zkrecipes.requests{delete,ok}"), 1.0)
	assert.Equal(t, 1.0, s.value("zkrecipes.recipe.acquires{mutex,app,/m,acquired}"))
	assert.Equal(t, 0.0, s.value("zkrecipes.recipe.held{mutex,app,/m}"))
	assert.Len(t, s.obs("zkrecipes.recipe.wait{mutex,app,/m}"), 1)
	assert.Len(t, s.obs("zkrecipes.recipe.hold{mutex,app,/m}"), 1)
	assert.Equal(t, []float64{0}, s.obs("zkrecipes.recipe.queue{mutex,app,/m}"))

	// Held elsewhere: a TryLock queues behind one contender and gives up.
	om, err := mutex.New(other, "/app/m")
	require.NoError(t, err)
	ol, err := om.Acquire(ctx)
	require.NoError(t, err)
	_, err = m.TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	assert.Equal(t, 1.0, s.value("zkrecipes.recipe.acquires{mutex,app,/m,not_acquired}"))
	assert.Equal(t, []float64{0, 1}, s.obs("zkrecipes.recipe.queue{mutex,app,/m}"))
	// A Lock whose ctx ends while it waits.
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = m.Acquire(wctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, 1.0, s.value("zkrecipes.recipe.acquires{mutex,app,/m,ctx_done}"))
	assert.Len(t, s.obs("zkrecipes.recipe.wait{mutex,app,/m}"), 1, "a wait is recorded only for a hold")
	require.NoError(t, ol.Release(ctx))

	_, _, err = c.Get(ctx, "/nothing-here")
	require.Error(t, err)
	assert.Equal(t, 1.0, s.value("zkrecipes.requests{get_data,no_node}"))

	// A cut: SUSPENDED, then RECONNECTED through the proxy.
	proxy.Cut()
	eventually(t, 10*time.Second, "RECONNECTED counted", func() bool {
		return s.value("zkrecipes.connection.state_changes{RECONNECTED}") == 1
	})
	assert.Equal(t, 1.0, s.value("zkrecipes.connection.state_changes{SUSPENDED}"))
	assert.Equal(t, 0.0, s.value("zkrecipes.connection.state_changes{LOST}"))
	assert.Greater(t, s.value("zkrecipes.connection.suspended{}"), 0.0)
	assert.Equal(t, 0.0, s.value("zkrecipes.deletes.pending{}"))
}

// TestMetricsRecipes checks that each recipe is counted under its own
// name: a semaphore's leases (its internal lock's wait counted in the
// lease's, not as a mutex), a latch's terms, a selector's, the read and
// write locks'.
func TestMetricsRecipes(t *testing.T) {
	zkc := zktest.Start(t)
	s := newSink()
	c := connect(t, zkc.Servers(), recipes.WithMetrics(s))
	other := connect(t, zkc.Servers())
	ctx := context.Background()

	// The semaphore's internal lock held elsewhere for 300 ms: the wait
	// for the lease includes it.
	inner, err := mutex.New(other, "/s/locks")
	require.NoError(t, err)
	il, err := inner.Acquire(ctx)
	require.NoError(t, err)
	sem, err := semaphore.New(c, "/s", 2)
	require.NoError(t, err)
	time.AfterFunc(300*time.Millisecond, func() { _ = il.Release(ctx) })
	first, err := sem.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, first.Release(ctx))
	waits := s.obs("zkrecipes.recipe.wait{semaphore,,/s}")
	require.Len(t, waits, 1)
	assert.GreaterOrEqual(t, waits[0], 0.3, "the wait includes the internal lock's")

	leases, err := sem.AcquireN(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, 2.0, s.value("zkrecipes.recipe.held{semaphore,,/s}"))
	assert.Equal(t, []float64{0, 0, 1}, s.obs("zkrecipes.recipe.queue{semaphore,,/s}"), "leases taken at the first look")
	require.NoError(t, semaphore.ReleaseAll(ctx, leases))
	assert.Equal(t, 0.0, s.value("zkrecipes.recipe.held{semaphore,,/s}"))
	assert.Equal(t, 3.0, s.value("zkrecipes.recipe.acquires{semaphore,,/s,acquired}"))
	assert.Len(t, s.obs("zkrecipes.recipe.hold{semaphore,,/s}"), 3)
	s.mu.Lock()
	for key := range s.kinds {
		assert.NotContains(t, key, "/s/locks", "the semaphore's internal lock is not a recipe of its own")
	}
	s.mu.Unlock()

	l, err := election.NewLatch(c, "/e", "me")
	require.NoError(t, err)
	require.NoError(t, l.Start(ctx))
	_, err = l.Await(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1.0, s.value("zkrecipes.recipe.acquires{latch,,/e,acquired}"), "a term started")
	assert.Equal(t, 1.0, s.value("zkrecipes.recipe.held{latch,,/e}"))
	require.NoError(t, l.Close(ctx))
	eventually(t, 5*time.Second, "the term ended", func() bool { return s.value("zkrecipes.recipe.held{latch,,/e}") == 0 })
	assert.Len(t, s.obs("zkrecipes.recipe.hold{latch,,/e}"), 1)

	led := make(chan struct{})
	sel, err := election.NewSelector(c, "/sel", "me", func(ctx context.Context, _ *election.Term) error {
		close(led)
		<-ctx.Done() // lead until Close
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, sel.Start(ctx))
	<-led
	require.NoError(t, sel.Close(ctx))
	assert.Equal(t, 1.0, s.value("zkrecipes.recipe.acquires{selector,,/sel,acquired}"), "a selector's term, not a mutex's")
	assert.Len(t, s.obs("zkrecipes.recipe.hold{selector,,/sel}"), 1)
	assert.Equal(t, 0.0, s.value("zkrecipes.recipe.acquires{mutex,,/sel,acquired}"))

	rw, err := rwlock.New(c, "/rw")
	require.NoError(t, err)
	wl, err := rw.WriteLock().Acquire(ctx)
	require.NoError(t, err)
	rl, err := rw.ReadLock().Acquire(ctx) // the writer's own read: a downgrade
	require.NoError(t, err)
	require.NoError(t, wl.Release(ctx))
	require.NoError(t, rl.Release(ctx))
	assert.Equal(t, 1.0, s.value("zkrecipes.recipe.acquires{rwlock_write,,/rw,acquired}"))
	assert.Equal(t, 1.0, s.value("zkrecipes.recipe.acquires{rwlock_read,,/rw,acquired}"))
}

// TestMetricsPathLabel checks WithMetricsPathLabel: a lock per entity
// maps to one series.
func TestMetricsPathLabel(t *testing.T) {
	zkc := zktest.Start(t)
	s := newSink()
	_, err := testutil.Dial(context.Background(), zkc.Servers(), recipes.WithMetricsPathLabel(nil))
	require.ErrorIs(t, err, recipes.ErrInvalidArgument)
	var calls []string
	c := connect(t, zkc.Servers(), recipes.WithMetrics(s), recipes.WithNamespace("app"),
		recipes.WithMetricsPathLabel(func(recipe, path string) string {
			calls = append(calls, recipe+" "+path)
			if rest, ok := strings.CutPrefix(path, "/locks/user-"); ok && rest != "" {
				return "/locks/user-*"
			}
			return path
		}))
	ctx := context.Background()
	for _, p := range []string{"/locks/user-1", "/locks/user-2", "/locks/user-1", "/other"} {
		m, err := mutex.New(c, p)
		require.NoError(t, err)
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
	}
	assert.Equal(t, 3.0, s.value("zkrecipes.recipe.acquires{mutex,app,/locks/user-*,acquired}"))
	assert.Equal(t, 1.0, s.value("zkrecipes.recipe.acquires{mutex,app,/other,acquired}"))
	assert.Equal(t, []string{"mutex /locks/user-1", "mutex /locks/user-2", "mutex /other"}, calls, "once per path, without the namespace")
}

// healthyResults are the request results a healthy client may record:
// every other result is an error a dashboard should show.
var healthyResults = map[string]bool{"ok": true, "no_parent": true}

// requestSeries returns the requests series s holds with a value, by
// "op,result".
func (s *sink) requestSeries() map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]float64{}
	for key, v := range s.values {
		if rest, ok := strings.CutPrefix(key, "zkrecipes.requests{"); ok && v != 0 {
			out[strings.TrimSuffix(rest, "}")] = v
		}
	}
	return out
}

// TestMetricsHealthyCycleRecordsNoErrors runs lock and semaphore cycles
// under fresh parents (so the engine meets missing parents, creates them
// and tries again) and checks that no request is counted with an error
// result: the create that finds its parent missing is part of a healthy
// create (result no_parent), not a no_node error.
func TestMetricsHealthyCycleRecordsNoErrors(t *testing.T) {
	zkc := zktest.Start(t)
	s := newSink()
	c := connect(t, zkc.Servers(), recipes.WithMetrics(s), recipes.WithNamespace("app"))
	ctx := context.Background()
	// The namespace node exists: that the first create meets it missing
	// is the namespace's business, not this test's.
	require.NoError(t, (*engine.Client)(c).EnsureContainers(ctx, "/app"))

	for i := range 2 {
		m, err := mutex.New(c, fmt.Sprintf("/fresh/locks/m%d", i))
		require.NoError(t, err)
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		sem, err := semaphore.New(c, fmt.Sprintf("/fresh/sems/s%d", i), 2)
		require.NoError(t, err)
		lease, err := sem.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, lease.Release(ctx))
	}
	got := s.requestSeries()
	for series, v := range got {
		_, result, _ := strings.Cut(series, ",")
		assert.True(t, healthyResults[result], "a healthy cycle counted %v requests %s", v, series)
	}
	assert.Greater(t, got["create,no_parent"], 0.0, "parents were missing and made: %v", got)
	assert.Greater(t, got["create,ok"], 0.0, "%v", got)
	t.Logf("requests of a healthy cycle: %v", got)
}

// TestMetricsSeriesSet checks the series a Client makes when it is made:
// every state it can enter, and for each request op the results it can
// have (a zero series each, so that a dashboard sees the first one), no
// more: no bad_version for an add_auth, no no_node for an exists.
func TestMetricsSeriesSet(t *testing.T) {
	zkc := zktest.Start(t)
	s := newSink()
	c := connect(t, zkc.Servers(), recipes.WithMetrics(s))
	// What the table leaves out does not happen: a missing node is an
	// ok for exists, and for sync too.
	ctx := context.Background()
	ok, _, err := c.Exists(ctx, "/missing")
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, c.Sync(ctx, "/missing"))
	assert.Equal(t, 1.0, s.value("zkrecipes.requests{exists,ok}"))
	assert.Equal(t, 1.0, s.value("zkrecipes.requests{sync,ok}"))
	errs := []string{"connection", "session_expired", "ctx_done", "other"}
	want := map[string][]string{
		"create":       append([]string{"ok", "no_parent", "parent_exists", "no_node", "node_exists"}, errs...),
		"delete":       append([]string{"ok", "no_node", "bad_version"}, errs...),
		"get_data":     append([]string{"ok", "no_node"}, errs...),
		"exists":       append([]string{"ok"}, errs...),
		"get_children": append([]string{"ok", "no_node"}, errs...),
		"set_data":     append([]string{"ok", "no_node", "bad_version"}, errs...),
		"multi":        append([]string{"ok", "no_node", "node_exists", "bad_version"}, errs...),
		"sync":         append([]string{"ok"}, errs...),
		"add_auth":     append([]string{"ok"}, errs...),
	}
	var wantKeys []string
	for op, results := range want {
		for _, r := range results {
			wantKeys = append(wantKeys, "zkrecipes.requests{"+op+","+r+"}")
		}
	}
	for _, st := range []string{"CONNECTED", "SUSPENDED", "RECONNECTED", "LOST", "READ_ONLY"} {
		wantKeys = append(wantKeys, "zkrecipes.connection.state_changes{"+st+"}")
	}
	wantKeys = append(wantKeys, "zkrecipes.connection.suspended{}", "zkrecipes.retries{}", "zkrecipes.deletes.pending{}")
	s.mu.Lock()
	var got []string
	for key := range s.kinds {
		got = append(got, key)
	}
	s.mu.Unlock()
	assert.ElementsMatch(t, wantKeys, got)
	assert.Len(t, got, 58+5+3)
}

// TestMetricsNamespaces checks that the namespace is part of what names a
// recipe path's series: two Clients in two namespaces locking the same
// path report to one Metrics in two series, and WithMetricsPathLabel
// still sees the path without the namespace.
func TestMetricsNamespaces(t *testing.T) {
	zkc := zktest.Start(t)
	s := newSink()
	var seen []string
	label := recipes.WithMetricsPathLabel(func(recipe, path string) string {
		seen = append(seen, path) // one Client at a time: no race
		return path
	})
	ctx := context.Background()
	for _, ns := range []string{"a", "b/c", ""} {
		c := connect(t, zkc.Servers(), recipes.WithMetrics(s), recipes.WithNamespace(ns), label)
		m, err := mutex.New(c, "/m")
		require.NoError(t, err)
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		require.NoError(t, c.Close(ctx))
	}
	assert.Equal(t, 1.0, s.value("zkrecipes.recipe.acquires{mutex,a,/m,acquired}"))
	assert.Equal(t, 1.0, s.value("zkrecipes.recipe.acquires{mutex,b/c,/m,acquired}"))
	assert.Equal(t, 1.0, s.value("zkrecipes.recipe.acquires{mutex,,/m,acquired}"))
	assert.Len(t, s.obs("zkrecipes.recipe.hold{mutex,a,/m}"), 1)
	assert.Len(t, s.obs("zkrecipes.recipe.hold{mutex,b/c,/m}"), 1)
	assert.Equal(t, []string{"/m", "/m", "/m"}, seen)
}

// TestMetricsSemaphoreV1 checks that a V1 semaphore's leases are counted
// as semaphore_v1, each lease an acquisition and a hold.
func TestMetricsSemaphoreV1(t *testing.T) {
	zkc := zktest.Start(t)
	s := newSink()
	c := connect(t, zkc.Servers(), recipes.WithMetrics(s))
	ctx := context.Background()
	v1, err := semaphore.NewV1(c, "/v1", 2)
	require.NoError(t, err)
	leases, err := v1.AcquireN(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, 2.0, s.value("zkrecipes.recipe.held{semaphore_v1,,/v1}"))
	assert.Equal(t, []float64{0, 1}, s.obs("zkrecipes.recipe.queue{semaphore_v1,,/v1}"), "contenders ahead at the first look")
	_, err = v1.TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	require.NoError(t, semaphore.ReleaseAll(ctx, leases))
	assert.Equal(t, 0.0, s.value("zkrecipes.recipe.held{semaphore_v1,,/v1}"))
	assert.Equal(t, 2.0, s.value("zkrecipes.recipe.acquires{semaphore_v1,,/v1,acquired}"))
	assert.Equal(t, 1.0, s.value("zkrecipes.recipe.acquires{semaphore_v1,,/v1,not_acquired}"))
	assert.Len(t, s.obs("zkrecipes.recipe.hold{semaphore_v1,,/v1}"), 2)
}
