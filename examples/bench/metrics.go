package main

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkrecipes/zkrecipes/metrics/prommetrics"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// metricsSide is the uncontended scenario's third side under -metrics:
// the same Lock+Unlock loop on a client of its own made with
// recipes.WithMetrics (Prometheus, on a private registry), at a path of
// its own, taking turns with the other two in the same rounds.
type metricsSide struct {
	c   *recipes.Client
	m   *mutex.Mutex
	ctx context.Context
	reg *prometheus.Registry
	// per round: ops/s and client CPU µs per op with metrics, and their
	// ratios to ours without
	ops, cpus, opsRatios, cpuRatios []float64
}

func newMetricsSide(ctx context.Context, servers []string, sessionTimeout time.Duration, path string) (*metricsSide, error) {
	reg := prometheus.NewRegistry()
	pm, err := prommetrics.New(reg)
	if err != nil {
		return nil, err
	}
	c, err := recipes.Connect(context.Background(), servers, recipes.WithSessionTimeout(sessionTimeout), recipes.WithMetrics(pm))
	if err != nil {
		return nil, err
	}
	m, err := mutex.New(c, path, mutex.WithData(lockData))
	if err != nil {
		c.Close(context.Background())
		return nil, err
	}
	return &metricsSide{c: c, m: m, ctx: ctx, reg: reg}, nil
}

func (s *metricsSide) close() { s.c.Close(context.Background()) }

func (s *metricsSide) loop(n int) error {
	for range n {
		if _, err := s.m.Acquire(s.ctx); err != nil {
			return err
		}
		if err := s.m.Release(s.ctx); err != nil {
			return err
		}
	}
	return nil
}

// round records one round: ours with metrics (ops/s, CPU µs/op) and ours
// without.
func (s *metricsSide) round(ops, cpu, oursOps, oursCPU float64) {
	s.ops, s.cpus = append(s.ops, ops), append(s.cpus, cpu)
	s.opsRatios, s.cpuRatios = append(s.opsRatios, ops/oursOps), append(s.cpuRatios, cpu/oursCPU)
}

// report prints the rounds and returns the RESULT line.
func (s *metricsSide) report() string {
	fmt.Println("\n   metrics on (recipes.WithMetrics, Prometheus), the same rounds:")
	tw := table("round", "metrics ops/s", "metrics/ours ops", "metrics CPU µs/op", "CPU metrics/ours")
	for i := range s.ops {
		fmt.Fprintf(tw, "%d\t%.0f\t%.3f\t%.1f\t%.3f\n", i+1, s.ops[i], s.opsRatios[i], s.cpus[i], s.cpuRatios[i])
	}
	fmt.Fprintf(tw, "median\t%.0f\t%.3f\t%.1f\t%.3f\n", median(s.ops), median(s.opsRatios), median(s.cpus), median(s.cpuRatios))
	tw.Flush()
	samples := 0
	if fams, err := s.reg.Gather(); err == nil {
		for _, f := range fams {
			if f.GetName() == "zkrecipes_recipe_hold_seconds" {
				for _, m := range f.GetMetric() {
					samples += int(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	fmt.Printf("client CPU per Lock+Unlock with metrics over without: %.3f (median of per-round ratios; %d hold samples recorded)\n",
		median(s.cpuRatios), samples)
	return fmt.Sprintf("RESULT scenario=uncontended-metrics metrics_ops=%.1f ops_ratio=%.4f cpu_us_per_op_metrics=%.1f cpu_ratio=%.4f hold_samples=%d",
		median(s.ops), median(s.opsRatios), median(s.cpus), median(s.cpuRatios), samples)
}
