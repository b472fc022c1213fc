// Package metric declares the fixed set of metrics a Client reports and
// the instruments it reports them to. Package recipes exports them as
// its own types; the engine measures; the adapters (prommetrics,
// otelmetrics) register them.
package metric

import "fmt"

// Sink is where a Client reports what it measures. Package recipes
// declares the public interface (recipes.Metrics, with the same methods
// on its own Metric and instrument types) and hands the engine an adapter
// to it; the engine's instruments are the user's own, so a measurement
// goes straight to them. Its methods are called when the client is made,
// the first time a recipe path is used, and the first time a request ends
// in a way possibleResults does not expect; never on the hot path: the
// client keeps the instruments they return and, per measurement, calls
// only their Add or Observe.
type Sink interface {
	// Counter returns the counter of metric m for the given label values
	// (one per name in m.Labels, in that order).
	Counter(m Metric, labelValues ...string) Counter
	// Gauge returns the gauge of metric m for the given label values.
	Gauge(m Metric, labelValues ...string) Gauge
	// Histogram returns the histogram of metric m for the given label values.
	Histogram(m Metric, labelValues ...string) Histogram
}

// Counter is a monotonic sum; Add is given a positive delta.
type Counter interface{ Add(delta float64) }

// Gauge is a value that goes up and down; Add is given the change.
type Gauge interface{ Add(delta float64) }

// Histogram records the distribution of a value.
type Histogram interface{ Observe(value float64) }

// Kind says which instrument a Metric is.
type Kind int

// The kinds of metrics.
const (
	KindCounter Kind = iota + 1
	KindGauge
	KindHistogram
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindCounter:
		return "counter"
	case KindGauge:
		return "gauge"
	case KindHistogram:
		return "histogram"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Metric describes one metric of the fixed set a Client reports.
type Metric struct {
	// Name is dotted, OpenTelemetry style, without a unit suffix:
	// "zkrecipes.requests" (recipes.Metric.PrometheusName gives the
	// Prometheus name).
	Name string
	Kind Kind
	// Unit is "s" for durations, else a UCUM annotation like "{request}".
	Unit string
	Help string
	// Labels are the label (attribute) names, in the order their values
	// are given.
	Labels []string
	// Buckets are suggested histogram bucket bounds (histograms only).
	Buckets []float64
}

var (
	durationBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800}
	queueBuckets    = []float64{0, 1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000}
)

// The metrics a Client reports: the fixed set.
var (
	StateChanges = Metric{Name: "zkrecipes.connection.state_changes", Kind: KindCounter, Unit: "{change}",
		Help:   "Connection state transitions, by the state entered (CONNECTED, SUSPENDED, RECONNECTED, LOST, READ_ONLY).",
		Labels: []string{"state"}}
	Suspended = Metric{Name: "zkrecipes.connection.suspended", Kind: KindCounter, Unit: "s",
		Help: "Time spent SUSPENDED, added when a suspension ends (RECONNECTED, LOST or Close)."}
	Requests = Metric{Name: "zkrecipes.requests", Kind: KindCounter, Unit: "{request}",
		Help:   "ZooKeeper requests sent by the client, by operation and result: ok; no_parent, parent_exists (steps of a healthy create under a missing parent, not errors); no_node, node_exists, bad_version (the server's no); connection, session_expired, ctx_done, other.",
		Labels: []string{"op", "result"}}
	Retries = Metric{Name: "zkrecipes.retries", Kind: KindCounter, Unit: "{retry}",
		Help: "Pauses before trying again after a connection error: Client.Retry, a recipe's wait, a background delete."}
	PendingDeletes = Metric{Name: "zkrecipes.deletes.pending", Kind: KindGauge, Unit: "{delete}",
		Help: "Guaranteed deletes (released holds) still being made, retrying in the background while the connection is down."}
	Acquires = Metric{Name: "zkrecipes.recipe.acquires", Kind: KindCounter, Unit: "{acquire}",
		Help:   "Acquisitions that queued a node, by recipe, namespace, path and result (acquired, not_acquired, ctx_done, lost, error); for a leader latch each term is one.",
		Labels: []string{"recipe", "zk_namespace", "path", "result"}}
	Wait = Metric{Name: "zkrecipes.recipe.wait", Kind: KindHistogram, Unit: "s",
		Help:    "Time from queueing a node (before its create) to holding, for acquisitions that held.",
		Labels:  []string{"recipe", "zk_namespace", "path"},
		Buckets: durationBuckets}
	Hold = Metric{Name: "zkrecipes.recipe.hold", Kind: KindHistogram, Unit: "s",
		Help:    "Time from holding to release (or, for a term, to its end).",
		Labels:  []string{"recipe", "zk_namespace", "path"},
		Buckets: durationBuckets}
	Queue = Metric{Name: "zkrecipes.recipe.queue", Kind: KindHistogram, Unit: "{contender}",
		Help:    "Contenders ahead of ours (for a semaphore, leases taken) at the first look after queueing.",
		Labels:  []string{"recipe", "zk_namespace", "path"},
		Buckets: queueBuckets}
	Held = Metric{Name: "zkrecipes.recipe.held", Kind: KindGauge, Unit: "{hold}",
		Help:   "Holds (locks, leases, leadership terms) held now, by recipe, namespace and path.",
		Labels: []string{"recipe", "zk_namespace", "path"}}
)

// All returns the fixed set of metrics a Client reports, for
// adapters that register everything up front.
func All() []Metric {
	return []Metric{StateChanges, Suspended, Requests, Retries, PendingDeletes,
		Acquires, Wait, Hold, Queue, Held, QueueUnreadable}
}

// QueueUnreadable counts the queue items a consumer met whose data
// did not decode, by what happened to them.
var QueueUnreadable = Metric{Name: "zkrecipes.queue.unreadable", Kind: KindCounter, Unit: "{item}",
	Help:   "Queue items whose data did not decode, met by a consumer, by recipe, namespace, path and result: kept (left in the queue) or handed (to the queue's unreadable handler, and deleted).",
	Labels: []string{"recipe", "zk_namespace", "path", "result"}}

// RequestCounts counts the requests a Client sent, by kind (the engine's
// Client.Stats). Tests use it to prove round-trip counts; the benchmark
// reports it.
type RequestCounts struct {
	Creates  uint64 // create requests (any mode, including containers)
	Deletes  uint64 // delete requests
	GetData  uint64 // getData requests, with or without a watch
	Exists   uint64 // exists requests, with or without a watch
	Children uint64 // getChildren requests, with or without a watch
	SetData  uint64 // setData requests
	Multis   uint64 // multi requests
	// MultiReads counts multiRead requests (each reads many nodes).
	MultiReads uint64
	Syncs      uint64 // sync requests
	Watches    uint64 // watches set (a subset of the reads above)
	// PendingDeletes is the number of guaranteed deletes still retrying in the background.
	PendingDeletes int64
}

// Sub returns the difference s - o of the request counters.
func (s RequestCounts) Sub(o RequestCounts) RequestCounts {
	return RequestCounts{
		Creates: s.Creates - o.Creates, Deletes: s.Deletes - o.Deletes, GetData: s.GetData - o.GetData,
		Exists: s.Exists - o.Exists, Children: s.Children - o.Children, SetData: s.SetData - o.SetData,
		Multis: s.Multis - o.Multis, MultiReads: s.MultiReads - o.MultiReads, Syncs: s.Syncs - o.Syncs, Watches: s.Watches - o.Watches, PendingDeletes: s.PendingDeletes - o.PendingDeletes,
	}
}
