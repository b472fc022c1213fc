package recipes

import "github.com/zkrecipes/zkrecipes/internal/engine"

// Metrics is where a Client reports what it measures, set with
// WithMetrics. Adapters implement it: metrics/prommetrics for Prometheus,
// metrics/otelmetrics for OpenTelemetry; anything else takes a few lines.
//
// Its methods return the instrument of one metric of the fixed set (see
// AllMetrics and the table in the package doc) for one set of label
// values, one value per name in Metric.Labels, in that order. The Client
// calls them when it is made (every series with fixed labels) and the
// first time it queues a node at a recipe path (that path's series), and
// keeps what they return: a measurement is then one call of the
// instrument's Add or Observe, with no lookup by name or labels. They may
// be called concurrently, and for a metric and label values they were
// called with before (by another Client, say): return the same series.
//
// Without WithMetrics nothing is measured, and the only cost is a nil
// check.
type Metrics = engine.Metrics

// Counter is a monotonic sum; Add is given a positive delta
// (prometheus.Counter is one).
type Counter = engine.Counter

// Gauge is a value that goes up and down; Add is given the change
// (prometheus.Gauge is one).
type Gauge = engine.Gauge

// Histogram records the distribution of a value (prometheus.Observer is
// one).
type Histogram = engine.Histogram

// Metric describes one metric of the fixed set: its Name (dotted,
// OpenTelemetry style, without a unit suffix), Kind, Unit ("s" for
// durations, else a UCUM annotation such as "{request}"), Help, the names
// of its Labels, and suggested histogram Buckets. PrometheusName gives the
// name Prometheus adapters use.
type Metric = engine.Metric

// MetricKind says which instrument a Metric is: KindCounter, KindGauge
// or KindHistogram.
type MetricKind = engine.MetricKind

// The kinds of metrics.
const (
	KindCounter   = engine.KindCounter
	KindGauge     = engine.KindGauge
	KindHistogram = engine.KindHistogram
)

// The metrics a Client reports (see the table in the package doc).
var (
	// MetricStateChanges counts connection state transitions by the state
	// entered (label state).
	MetricStateChanges = engine.MetricStateChanges
	// MetricSuspended counts the seconds spent SUSPENDED.
	MetricSuspended = engine.MetricSuspended
	// MetricRequests counts requests by operation and result (labels op,
	// result).
	MetricRequests = engine.MetricRequests
	// MetricRetries counts pauses before another attempt after a
	// connection error.
	MetricRetries = engine.MetricRetries
	// MetricPendingDeletes is the number of guaranteed deletes in progress.
	MetricPendingDeletes = engine.MetricPendingDeletes
	// MetricAcquires counts acquisitions by recipe, path and result.
	MetricAcquires = engine.MetricAcquires
	// MetricWait is the time from queueing to holding.
	MetricWait = engine.MetricWait
	// MetricHold is the time from holding to release.
	MetricHold = engine.MetricHold
	// MetricQueue is the number of contenders ahead at the first look.
	MetricQueue = engine.MetricQueue
	// MetricHeld is the number of holds held now.
	MetricHeld = engine.MetricHeld
)

// AllMetrics returns the fixed set of metrics a Client reports, for
// adapters that register everything up front.
func AllMetrics() []Metric { return engine.AllMetrics() }

// WithMetrics makes the client report its metrics to m (see Metrics and
// the table in the package doc). A nil m is refused with
// ErrInvalidArgument.
func WithMetrics(m Metrics) Option { return Option(engine.WithMetrics(m)) }

// WithMetricsPathLabel bounds the "path" label's values: the recipe
// metrics of a path are labelled label(recipe, path) instead of path
// (recipe is "mutex", "semaphore", ...; path is the recipe's path without
// the namespace). A service that takes a lock per entity
// ("/locks/user-1234") maps them to one series ("/locks/user-*"), or
// returns "" to drop the path. label is called once per recipe path and
// Client. A nil label is refused with ErrInvalidArgument.
func WithMetricsPathLabel(label func(recipe, path string) string) Option {
	return Option(engine.WithMetricsPathLabel(label))
}
