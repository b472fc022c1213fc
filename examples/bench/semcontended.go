package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/semaphore"
)

// --------------------------------------------------------------- semcontended

// semcontended: -sessions sessions (separate Clients of this process) loop
// Acquire;Close on one semaphore of semMaxLeases leases for -duration
// per round, against the contended mutex on as many sessions in the same
// rounds. Every acquisition, semaphore or mutex, goes through one queue
// (the semaphore's internal mutex under locks/), so the ratio of their
// rates is the cost of the lease on top of that queue: the lease's create,
// children list (with a watch) and delete, 7 requests per acquisition
// where the contended mutex needs 4. A gauge counts the sessions between Acquire returning and
// Close being called; more than semMaxLeases at once fails the run. As the
// loop holds each lease for microseconds, leases rarely overlap in it, so
// one more round follows in which every lease is held semHold before
// Close: there the gauge must reach semMaxLeases and never pass it.
// semHold is how long each lease is held in semcontended's last round.
const semHold = 20 * time.Millisecond

func (b *bench) semContended(ctx context.Context) (string, error) {
	f := b.f
	fmt.Printf("\n== semcontended: %d sessions (goroutines of this process, a session each) loop Acquire;Close on one semaphore of %d leases, %v per side per round\n",
		f.sessions, semMaxLeases, f.duration)
	fmt.Printf("   baseline: the contended mutex on %d sessions (one path), in the same rounds\n", f.sessions)
	cs, err := b.connectN(f.sessions)
	if err != nil {
		return "", err
	}
	ours := &pop{clients: cs, classes: []string{"lease"}}
	defer ours.close()
	sems := make([]*semaphore.Semaphore, len(cs))
	for i, c := range cs {
		if sems[i], err = semaphore.New(c, b.root+"/semcontended/sem", semMaxLeases, semaphore.WithData(lockData)); err != nil {
			return "", err
		}
	}
	var (
		held, most atomic.Int64
		hold       time.Duration // 0 in the timed rounds
	)
	ours.op = func(i int) (int, time.Duration, error) {
		start := time.Now()
		lease, err := sems[i].Acquire(ctx)
		if err != nil {
			return 0, 0, fmt.Errorf("acquire: %w", err)
		}
		wait := time.Since(start)
		h := held.Add(1)
		for old := most.Load(); h > old && !most.CompareAndSwap(old, h); old = most.Load() {
		}
		if hold > 0 {
			time.Sleep(hold)
		}
		held.Add(-1)
		if h > semMaxLeases {
			return 0, 0, fmt.Errorf("%d leases held at once on a semaphore of %d", h, semMaxLeases)
		}
		if err := lease.Release(ctx); err != nil {
			return 0, 0, fmt.Errorf("close: %w", err)
		}
		return 0, wait, nil
	}
	base, err := b.mutexPop(ctx, f.sessions, b.root+"/semcontended/mutex")
	if err != nil {
		return "", err
	}
	defer base.close()
	o, bs, order, err := b.interleave(ctx, ours, base, "semaphore", "mutex")
	if err != nil {
		return "", err
	}
	printRounds(ours.classes, o, bs, order, f.duration, "mutex")
	loopMost := most.Load()
	most.Store(0)
	hold = semHold
	hr, err := ours.round(time.Now().Add(f.duration))
	if err != nil {
		return "", fmt.Errorf("leases held %v: %w", semHold, err)
	}
	holdMost := most.Load()
	if holdMost != semMaxLeases {
		return "", fmt.Errorf("leases held %v each: at most %d held at once, never the maximum %d", semHold, holdMost, semMaxLeases)
	}
	so, sb := summarize(o, 1, f.duration), summarize(bs, 1, f.duration)
	ratio := median(ratios(so.rounds, sb.rounds))
	fmt.Printf("median: semaphore %.0f acq/s, mutex %.0f acq/s, semaphore/mutex %.3f\n", so.rateAll, sb.rateAll, ratio)
	fmt.Printf("most leases held at once (max %d): %d in the timed rounds; %d with every lease held %v (%.0f acq/s)\n",
		semMaxLeases, loopMost, holdMost, semHold, float64(hr.windowAll())/f.duration.Seconds())
	fmt.Printf("wait p50/p99: semaphore %s/%s; mutex %s/%s\n", ms(so.p50[0]), ms(so.p99[0]), ms(sb.p50[0]), ms(sb.p99[0]))
	fmt.Printf("client CPU per acquisition: semaphore %.0fµs, mutex %.0fµs\n", so.cpuUs, sb.cpuUs)
	fmt.Printf("semaphore, requests per Acquire+Close: %s\n", so.req)
	fmt.Printf("mutex, requests per acquisition: %s\n", sb.req)
	addReport(reportRow{
		workload: fmt.Sprintf("semaphore: %d sessions, %d leases, Acquire;Close", f.sessions, semMaxLeases),
		ours:     fmt.Sprintf("%.0f acq/s; wait p50 %s, p99 %s", so.rateAll, ms(so.p50[0]), ms(so.p99[0])),
		base:     fmt.Sprintf("%.0f acq/s; wait p50 %s, p99 %s (mutex, %d sessions)", sb.rateAll, ms(sb.p50[0]), ms(sb.p99[0]), f.sessions),
		ratio:    ratio,
		note: fmt.Sprintf("ratio = semaphore acq/s over the mutex's: both queue on one mutex (the semaphore's internal one), the lease adds its create, children and delete; CPU µs/acq %.0f vs %.0f; requests/acq %.2f vs %.2f",
			so.cpuUs, sb.cpuUs, so.req.total(), sb.req.total()),
	})
	addReport(reportRow{
		workload: fmt.Sprintf("semaphore: most leases held at once (max %d)", semMaxLeases),
		ours:     fmt.Sprintf("%d with holds of %v; %d in the timed rounds", holdMost, semHold, loopMost), base: fmt.Sprintf("max %d", semMaxLeases),
		ratio: float64(max(holdMost, loopMost)), target: semMaxLeases, hasTarget: true, lowerBetter: true, met: true, // more exits with status 1
		note: fmt.Sprintf("sessions between Acquire returning and Close, counted in this process; a round of %v with every lease held %v must fill all %d", f.duration, semHold, semMaxLeases),
	})
	return fmt.Sprintf("RESULT scenario=semcontended sessions=%d max_leases=%d sem_ops=%.1f mutex_ops=%.1f ratio=%.4f p50_ms=%.3f p99_ms=%.3f mutex_p50_ms=%.3f mutex_p99_ms=%.3f cpu_us_per_acq=%.1f cpu_us_per_acq_mutex=%.1f %s requests_per_acq_mutex=%.3f max_held=%d max_held_with_hold=%d hold_ms=%d rounds=%d duration=%v",
		f.sessions, semMaxLeases, so.rateAll, sb.rateAll, ratio, msf(so.p50[0]), msf(so.p99[0]), msf(sb.p50[0]), msf(sb.p99[0]),
		so.cpuUs, sb.cpuUs, so.req.kv("acq"), sb.req.total(), loopMost, holdMost, semHold.Milliseconds(), f.rounds, f.duration), nil
}
