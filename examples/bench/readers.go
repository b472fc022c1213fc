package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
)

// ------------------------------------------------------------------- readers

// readers is the reader-throughput scenario: -readers sessions (separate
// Clients in this process) loop ReadLock().Lock;Unlock of one rwlock path
// for -duration per round. No writer takes part, so every reader holds at
// once. The baseline is the contended mutex on as many sessions in the
// same rounds (see workload.go): a lock that admits one holder at a time;
// the ratio is read acquisitions per second over the mutex's.
func (b *bench) readers(ctx context.Context) (string, error) {
	f := b.f
	fmt.Printf("\n== readers: %d sessions (goroutines of this process, each with its own session) loop ReadLock().Lock;Unlock on one rwlock path, %v per side per round\n",
		f.readers, f.duration)
	fmt.Printf("   baseline: the contended mutex on %d sessions (one path), in the same rounds\n", f.readers)
	var most atomic.Int64
	ours, err := b.rwPop(ctx, f.readers, 0, b.root+"/readers/rw", &most)
	if err != nil {
		return "", err
	}
	defer ours.close()
	base, err := b.mutexPop(ctx, f.readers, b.root+"/readers/mutex")
	if err != nil {
		return "", err
	}
	defer base.close()
	o, bs, order, err := b.interleave(ctx, ours, base, "readers", "mutex")
	if err != nil {
		return "", err
	}
	printRounds(ours.classes[:1], o, bs, order, f.duration, "mutex")
	so, sb := summarize(o, 1, f.duration), summarize(bs, 1, f.duration)
	ratio := median(ratios(so.rounds, sb.rounds))
	fmt.Printf("median: readers %.0f acq/s, mutex %.0f acq/s, readers/mutex %.3f; most readers at once %d\n", so.rateAll, sb.rateAll, ratio, most.Load())
	fmt.Printf("wait p50/p99: readers %s/%s; mutex %s/%s\n", ms(so.p50[0]), ms(so.p99[0]), ms(sb.p50[0]), ms(sb.p99[0]))
	fmt.Printf("client CPU per acquisition: readers %.0fµs, mutex %.0fµs\n", so.cpuUs, sb.cpuUs)
	fmt.Printf("readers, requests per read acquisition (sum over %d clients): %s\n", f.readers, so.req)
	fmt.Printf("mutex, requests per acquisition: %s\n", sb.req)
	addReport(reportRow{
		workload: fmt.Sprintf("rwlock readers: %d reading sessions, one path", f.readers),
		ours:     fmt.Sprintf("%.0f reads/s; wait p50 %s, p99 %s", so.rateAll, ms(so.p50[0]), ms(so.p99[0])),
		base:     fmt.Sprintf("%.0f acq/s; wait p50 %s, p99 %s (mutex, %d sessions)", sb.rateAll, ms(sb.p50[0]), ms(sb.p99[0]), f.readers),
		ratio:    ratio,
		note: fmt.Sprintf("ratio = reads/s over the mutex's acq/s; most readers at once %d; CPU µs/acq %.0f vs %.0f; requests/acq %.2f vs %.2f",
			most.Load(), so.cpuUs, sb.cpuUs, so.req.total(), sb.req.total()),
	})
	return fmt.Sprintf("RESULT scenario=readers ours_ops=%.1f rounds=%d sessions=%d duration=%v max_concurrent=%d mutex_contended_ops=%.1f mutex_sessions=%d readers_per_mutex=%.4f p50_ms=%.3f p99_ms=%.3f mutex_p50_ms=%.3f mutex_p99_ms=%.3f cpu_us_per_acq=%.1f cpu_us_per_acq_mutex=%.1f %s requests_per_acq_mutex=%.3f",
		so.rateAll, f.rounds, f.readers, f.duration, most.Load(), sb.rateAll, f.readers, ratio, msf(so.p50[0]), msf(so.p99[0]),
		msf(sb.p50[0]), msf(sb.p99[0]), so.cpuUs, sb.cpuUs, so.req.kv("acq"), sb.req.total()), nil
}

// scenarios in the order they run.
var scenarios = []string{"uncontended", "contended", "contended-procs", "readers", "semaphore", "mixed", "semcontended", "failover"}

// notInAll are the scenarios that "all" leaves out: they run only when
// -which names them.
var notInAll = map[string]bool{}

// parseWhich reads -which: "all" or a comma-separated list of scenarios.
func parseWhich(s string) (map[string]bool, error) {
	which := map[string]bool{}
	for _, w := range strings.Split(s, ",") {
		switch w = strings.TrimSpace(w); {
		case w == "all":
			for _, sc := range scenarios {
				which[sc] = which[sc] || !notInAll[sc]
			}
		case slices.Contains(scenarios, w):
			which[w] = true
		default:
			return nil, fmt.Errorf("-which: %q is not all or one of %s", w, strings.Join(scenarios, ", "))
		}
	}
	return which, nil
}
