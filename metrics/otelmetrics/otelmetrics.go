// Package otelmetrics reports a zkrecipes Client's metrics through the
// OpenTelemetry metrics API (go.opentelemetry.io/otel/metric):
//
//	om, err := otelmetrics.New(otel.GetMeterProvider())
//	...
//	c, err := recipes.Connect(ctx, servers, recipes.WithMetrics(om))
//
// New makes one instrument per metric of the fixed set
// (recipes.AllMetrics), on a Meter named for this module (ScopeName):
// counters are Float64Counters, gauges Float64UpDownCounters, histograms
// Float64Histograms with the metric's bucket bounds as their explicit
// boundaries. Instrument names are the metrics' dotted names
// (zkrecipes.requests, zkrecipes.recipe.wait, ...) with their units ("s"
// for durations); labels become attributes. The table is in package
// recipes' doc.
package otelmetrics

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// ScopeName is the instrumentation scope of the Meter the instruments are
// made on.
const ScopeName = "github.com/zkrecipes/zkrecipes"

// Metrics is a recipes.Metrics that reports to OpenTelemetry instruments.
type Metrics struct {
	counters   map[string]metric.Float64Counter
	gauges     map[string]metric.Float64UpDownCounter
	histograms map[string]metric.Float64Histogram
}

var _ recipes.Metrics = (*Metrics)(nil)

// New makes the instruments of every metric in recipes.AllMetrics on mp's
// Meter ScopeName. It returns an error wrapping recipes.ErrInvalidArgument
// for a nil mp, and the error of an instrument mp could not make.
func New(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		return nil, fmt.Errorf("%w: nil meter provider", recipes.ErrInvalidArgument)
	}
	meter := mp.Meter(ScopeName)
	om := &Metrics{
		counters:   map[string]metric.Float64Counter{},
		gauges:     map[string]metric.Float64UpDownCounter{},
		histograms: map[string]metric.Float64Histogram{},
	}
	for _, m := range recipes.AllMetrics() {
		var err error
		switch m.Kind {
		case recipes.KindCounter:
			om.counters[m.Name], err = meter.Float64Counter(m.Name, metric.WithDescription(m.Help), metric.WithUnit(m.Unit))
		case recipes.KindGauge:
			om.gauges[m.Name], err = meter.Float64UpDownCounter(m.Name, metric.WithDescription(m.Help), metric.WithUnit(m.Unit))
		case recipes.KindHistogram:
			om.histograms[m.Name], err = meter.Float64Histogram(m.Name, metric.WithDescription(m.Help), metric.WithUnit(m.Unit),
				metric.WithExplicitBucketBoundaries(m.Buckets...))
		}
		if err != nil {
			return nil, fmt.Errorf("otelmetrics: %s: %w", m.Name, err)
		}
	}
	return om, nil
}

// attrs makes the attribute set of m's labels, once per series.
func attrs(m recipes.Metric, labelValues []string) (attribute.Set, bool) {
	if len(labelValues) != len(m.Labels) {
		return attribute.Set{}, false
	}
	kv := make([]attribute.KeyValue, len(labelValues))
	for i, v := range labelValues {
		kv[i] = attribute.String(m.Labels[i], v)
	}
	return attribute.NewSet(kv...), true
}

// Counter returns the series of counter m with the given label values.
func (om *Metrics) Counter(m recipes.Metric, labelValues ...string) recipes.Counter {
	c, ok := om.counters[m.Name]
	set, fits := attrs(m, labelValues)
	if !ok || !fits {
		return discard{}
	}
	return counter{c, []metric.AddOption{metric.WithAttributeSet(set)}}
}

// Gauge returns the series of gauge m with the given label values.
func (om *Metrics) Gauge(m recipes.Metric, labelValues ...string) recipes.Gauge {
	g, ok := om.gauges[m.Name]
	set, fits := attrs(m, labelValues)
	if !ok || !fits {
		return discard{}
	}
	return gauge{g, []metric.AddOption{metric.WithAttributeSet(set)}}
}

// Histogram returns the series of histogram m with the given label values.
func (om *Metrics) Histogram(m recipes.Metric, labelValues ...string) recipes.Histogram {
	h, ok := om.histograms[m.Name]
	set, fits := attrs(m, labelValues)
	if !ok || !fits {
		return discard{}
	}
	return histogram{h, []metric.RecordOption{metric.WithAttributeSet(set)}}
}

// The series: an instrument with its attributes bound, the options made
// once so that a measurement builds nothing.
type (
	counter struct {
		c    metric.Float64Counter
		opts []metric.AddOption
	}
	gauge struct {
		g    metric.Float64UpDownCounter
		opts []metric.AddOption
	}
	histogram struct {
		h    metric.Float64Histogram
		opts []metric.RecordOption
	}
)

func (c counter) Add(d float64)       { c.c.Add(context.Background(), d, c.opts...) }
func (g gauge) Add(d float64)         { g.g.Add(context.Background(), d, g.opts...) }
func (h histogram) Observe(v float64) { h.h.Record(context.Background(), v, h.opts...) }

// discard stands in for a metric this version does not know, or label
// values that do not fit it. Nothing is reported.
type discard struct{}

func (discard) Add(float64)     {}
func (discard) Observe(float64) {}
