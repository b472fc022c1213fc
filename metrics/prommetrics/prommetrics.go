// Package prommetrics reports a zkrecipes Client's metrics to Prometheus
// (github.com/prometheus/client_golang):
//
//	pm, err := prommetrics.New(prometheus.DefaultRegisterer)
//	...
//	c, err := recipes.Connect(ctx, servers, recipes.WithMetrics(pm))
//
// New registers one collector per metric of the fixed set
// (recipes.AllMetrics), named as Metric.PrometheusName gives:
// zkrecipes_requests_total, zkrecipes_recipe_wait_seconds and so on (the
// table is in package recipes' doc). Several Clients may share one
// Metrics: their measurements add up in the same series. To tell them
// apart, register through prometheus.WrapRegistererWith with a label of
// your own, one Metrics per Client.
package prommetrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Metrics is a recipes.Metrics that reports to Prometheus collectors.
type Metrics struct {
	counters   map[string]*prometheus.CounterVec
	gauges     map[string]*prometheus.GaugeVec
	histograms map[string]*prometheus.HistogramVec
}

var _ recipes.Metrics = (*Metrics)(nil)

// New makes the collectors of every metric in recipes.AllMetrics and
// registers them with reg. It returns an error wrapping
// recipes.ErrInvalidArgument for a nil reg, and the registry's error when
// a collector of the same name is registered already (a second New on the
// same registry, say).
func New(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: nil prometheus registerer", recipes.ErrInvalidArgument)
	}
	pm := &Metrics{
		counters:   map[string]*prometheus.CounterVec{},
		gauges:     map[string]*prometheus.GaugeVec{},
		histograms: map[string]*prometheus.HistogramVec{},
	}
	var cs []prometheus.Collector
	for _, m := range recipes.AllMetrics() {
		name := m.PrometheusName()
		switch m.Kind {
		case recipes.KindCounter:
			v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: m.Help}, m.Labels)
			pm.counters[m.Name], cs = v, append(cs, v)
		case recipes.KindGauge:
			v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: m.Help}, m.Labels)
			pm.gauges[m.Name], cs = v, append(cs, v)
		case recipes.KindHistogram:
			v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: m.Help, Buckets: m.Buckets}, m.Labels)
			pm.histograms[m.Name], cs = v, append(cs, v)
		}
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return nil, fmt.Errorf("prommetrics: %w", err)
		}
	}
	return pm, nil
}

// Counter returns the series of counter m with the given label values.
func (pm *Metrics) Counter(m recipes.Metric, labelValues ...string) recipes.Counter {
	v, ok := pm.counters[m.Name]
	if !ok {
		return discard{}
	}
	c, err := v.GetMetricWithLabelValues(labelValues...)
	if err != nil {
		return discard{}
	}
	return c
}

// Gauge returns the series of gauge m with the given label values.
func (pm *Metrics) Gauge(m recipes.Metric, labelValues ...string) recipes.Gauge {
	v, ok := pm.gauges[m.Name]
	if !ok {
		return discard{}
	}
	g, err := v.GetMetricWithLabelValues(labelValues...)
	if err != nil {
		return discard{}
	}
	return g
}

// Histogram returns the series of histogram m with the given label values.
func (pm *Metrics) Histogram(m recipes.Metric, labelValues ...string) recipes.Histogram {
	v, ok := pm.histograms[m.Name]
	if !ok {
		return discard{}
	}
	h, err := v.GetMetricWithLabelValues(labelValues...)
	if err != nil {
		return discard{}
	}
	return h
}

// discard stands in for a metric this version does not know, or label
// values that do not fit it: a newer client's, say. Nothing is reported.
type discard struct{}

func (discard) Add(float64)     {}
func (discard) Observe(float64) {}
