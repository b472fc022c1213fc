package recipes

import (
	"fmt"
	"strings"

	"github.com/zkrecipes/zkrecipes/internal/metric"
)

// Metrics is where a Client reports what it measures, set with
// WithMetrics. Adapters implement it: metrics/prommetrics for Prometheus,
// metrics/otelmetrics for OpenTelemetry; anything else takes a few lines.
//
// Its methods return the instrument of one metric of the fixed set (see
// AllMetrics and the table in the package doc) for one set of label
// values. The Client calls them when it is made (the series with fixed
// labels: every state, every request result that can happen) and the
// first time it queues a node at a recipe path (that path's series), and
// keeps what they return: a measurement is then one call of the
// instrument's Add or Observe, with no lookup by name or labels and
// nothing allocated by the Client. (Should a request end with a result
// the package doc's table does not expect for its op, that series is
// asked for then, once.) They may be called concurrently, and for a metric and label
// values they were called with before (by another Client, say): return
// the same series. An instrument that cannot be made (label values that
// do not fit, a metric this version of the adapter does not know) should
// be one that discards its measurements; a nil instrument is taken as
// that.
//
// Without WithMetrics nothing is measured, and the only cost is a nil
// check.
type Metrics interface {
	// Counter returns the counter of metric m (m.Kind is KindCounter) for
	// the given label values: one per name in m.Labels, in that order.
	Counter(m Metric, labelValues ...string) Counter
	// Gauge returns the gauge of metric m (m.Kind is KindGauge) for the
	// given label values, as Counter does.
	Gauge(m Metric, labelValues ...string) Gauge
	// Histogram returns the histogram of metric m (m.Kind is
	// KindHistogram) for the given label values, as Counter does; m.Buckets
	// are its suggested bucket bounds.
	Histogram(m Metric, labelValues ...string) Histogram
}

// Counter is a monotonic sum (prometheus.Counter is one).
type Counter interface {
	// Add adds delta, which is positive: 1 for a count, the seconds
	// spent for a duration.
	Add(delta float64)
}

// Gauge is a value that goes up and down (prometheus.Gauge is one).
type Gauge interface {
	// Add adds delta, the change: +1 or -1 for a count of things held.
	Add(delta float64)
}

// Histogram records the distribution of a value (prometheus.Observer is
// one).
type Histogram interface {
	// Observe records one value: seconds for a duration, else a count.
	Observe(value float64)
}

// MetricKind says which instrument a Metric is.
type MetricKind int

// The kinds of metrics (the engine's, by the same numbers).
const (
	KindCounter   MetricKind = iota + 1 // a Counter
	KindGauge                           // a Gauge
	KindHistogram                       // a Histogram
)

// String names the kind: "counter", "gauge", "histogram".
func (k MetricKind) String() string { return metric.Kind(k).String() }

// Metric describes one metric of the fixed set a Client reports.
type Metric struct {
	// Name is dotted, OpenTelemetry style, without a unit suffix:
	// "zkrecipes.requests". Prometheus adapters write it as
	// PrometheusName gives.
	Name string
	// Kind says which instrument the metric is.
	Kind MetricKind
	// Unit is "s" for durations, else a UCUM annotation such as
	// "{request}".
	Unit string
	// Help says what the metric measures, in a sentence.
	Help string
	// Labels are the label (attribute) names, in the order their values
	// are given to Metrics' methods.
	Labels []string
	// Buckets are suggested histogram bucket bounds (histograms only).
	Buckets []float64
}

// PrometheusName is the metric's name as Prometheus writes it: dots become
// underscores, then "_seconds" for a duration and "_total" for a counter
// are appended, as OpenTelemetry's Prometheus exporter does.
func (m Metric) PrometheusName() string {
	n := strings.ReplaceAll(m.Name, ".", "_")
	if m.Unit == "s" {
		n += "_seconds"
	}
	if m.Kind == KindCounter {
		n += "_total"
	}
	return n
}

// metricOf is the public description of one of the engine's metrics.
func metricOf(m metric.Metric) Metric {
	return Metric{Name: m.Name, Kind: MetricKind(m.Kind), Unit: m.Unit, Help: m.Help,
		Labels: append([]string(nil), m.Labels...), Buckets: append([]float64(nil), m.Buckets...)}
}

// The metrics a Client reports (see the table in the package doc).
var (
	// MetricStateChanges counts connection state transitions by the state
	// entered (label state).
	MetricStateChanges = metricOf(metric.StateChanges)
	// MetricSuspended counts the seconds spent SUSPENDED.
	MetricSuspended = metricOf(metric.Suspended)
	// MetricRequests counts requests by operation and result (labels op,
	// result). Results ok, no_parent and parent_exists are not errors.
	MetricRequests = metricOf(metric.Requests)
	// MetricRetries counts pauses before another attempt after a
	// connection error.
	MetricRetries = metricOf(metric.Retries)
	// MetricPendingDeletes is the number of guaranteed deletes in progress.
	MetricPendingDeletes = metricOf(metric.PendingDeletes)
	// MetricAcquires counts acquisitions by recipe, namespace, path and
	// result.
	MetricAcquires = metricOf(metric.Acquires)
	// MetricWait is the time from queueing to holding.
	MetricWait = metricOf(metric.Wait)
	// MetricHold is the time from holding to release.
	MetricHold = metricOf(metric.Hold)
	// MetricQueue is the number of contenders ahead at the first look.
	MetricQueue = metricOf(metric.Queue)
	// MetricHeld is the number of holds held now.
	MetricHeld = metricOf(metric.Held)
	// MetricQueueUnreadable counts the queue items a consumer met whose
	// data did not decode, by recipe, namespace, path and result (kept,
	// handed).
	MetricQueueUnreadable = metricOf(metric.QueueUnreadable)
)

// AllMetrics returns the fixed set of metrics a Client reports, for
// adapters that register everything up front.
func AllMetrics() []Metric {
	all := metric.All()
	out := make([]Metric, len(all))
	for i, m := range all {
		out[i] = metricOf(m)
	}
	return out
}

// WithMetrics makes the client report its metrics to m (see Metrics and
// the table in the package doc). A nil m is refused with
// ErrInvalidArgument.
func WithMetrics(m Metrics) Option {
	return func(o *options) error {
		if m == nil {
			return fmt.Errorf("%w: nil metrics", ErrInvalidArgument)
		}
		o.cfg.Metrics = metricsBridge{m}
		return nil
	}
}

// metricsBridge hands the engine's requests for instruments to a Metrics.
// It is asked only when a series is made: the engine keeps the instrument
// m returns (an interface converted, not wrapped), so a measurement goes
// straight to it.
type metricsBridge struct{ m Metrics }

func (b metricsBridge) Counter(m metric.Metric, labelValues ...string) metric.Counter {
	if c := b.m.Counter(metricOf(m), labelValues...); c != nil {
		return c
	}
	return discard{}
}

func (b metricsBridge) Gauge(m metric.Metric, labelValues ...string) metric.Gauge {
	if g := b.m.Gauge(metricOf(m), labelValues...); g != nil {
		return g
	}
	return discard{}
}

func (b metricsBridge) Histogram(m metric.Metric, labelValues ...string) metric.Histogram {
	if h := b.m.Histogram(metricOf(m), labelValues...); h != nil {
		return h
	}
	return discard{}
}

// discard stands in for an instrument a Metrics did not make.
type discard struct{}

func (discard) Add(float64)     {}
func (discard) Observe(float64) {}

// WithMetricsPathLabel bounds the "path" label's values: the recipe
// metrics of a path are labelled label(recipe, path) instead of path
// (recipe is "mutex", "semaphore", ...; path is the recipe's path without
// the namespace, which has a label of its own, zk_namespace). A service
// that takes a lock per entity ("/locks/user-1234") maps them to one
// series ("/locks/user-*"), or returns "" to drop the path. label is
// called once per recipe path and Client. A nil label is refused with
// ErrInvalidArgument.
func WithMetricsPathLabel(label func(recipe, path string) string) Option {
	return func(o *options) error {
		if label == nil {
			return fmt.Errorf("%w: nil metrics path label", ErrInvalidArgument)
		}
		o.cfg.MetricsPath = label
		return nil
	}
}
