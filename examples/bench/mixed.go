package main

import (
	"context"
	"flag"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// ---------------------------------------------------------------------- mixed

var mixedReaders, mixedWriters int

func init() {
	flag.IntVar(&mixedReaders, "mixed-readers", 16, "mixed: reading sessions")
	flag.IntVar(&mixedWriters, "mixed-writers", 2, "mixed: writing sessions")
}

// rwPop is a population of sessions on one rwlock path: the first readers
// loop ReadLock().Lock;Unlock, the others WriteLock().Lock;Unlock. A
// writer holding alongside anyone else fails the round (counted from Lock
// returning to Unlock being called). most records the most readers that
// held at once, counted from Lock returning to Unlock returning (a read
// hold lasts until its node is deleted).
func (b *bench) rwPop(ctx context.Context, readers, writers int, path string, most *atomic.Int64) (*pop, error) {
	cs, err := b.connectN(readers + writers)
	if err != nil {
		return nil, err
	}
	p := &pop{clients: cs, classes: []string{"read", "write"}}
	locks := make([]*mutex.Mutex, len(cs))
	for i, c := range cs {
		rw, err := rwlock.New(c, path, mutex.WithData(lockData))
		if err != nil {
			p.close()
			return nil, err
		}
		if i < readers {
			locks[i] = rw.ReadLock()
		} else {
			locks[i] = rw.WriteLock()
		}
	}
	var (
		nr, nw atomic.Int64 // readers and writers between Lock returning and Unlock
		held   atomic.Int64 // readers between Lock returning and Unlock returning
	)
	p.op = func(i int) (int, time.Duration, error) {
		class := 0
		if i >= readers {
			class = 1
		}
		start := time.Now()
		if _, err := locks[i].Acquire(ctx); err != nil {
			return 0, 0, fmt.Errorf("%s lock: %w", p.classes[class], err)
		}
		wait := time.Since(start)
		var bad error
		if class == 0 {
			h := held.Add(1)
			defer held.Add(-1)
			for old := most.Load(); h > old && !most.CompareAndSwap(old, h); old = most.Load() {
			}
			nr.Add(1)
			if w := nw.Load(); w != 0 {
				bad = fmt.Errorf("a reader holds while %d writer(s) hold", w)
			}
			nr.Add(-1)
		} else {
			w := nw.Add(1)
			if r := nr.Load(); w != 1 || r != 0 {
				bad = fmt.Errorf("a writer holds while %d writer(s) and %d reader(s) hold", w, r)
			}
			nw.Add(-1)
		}
		if bad != nil {
			return 0, 0, bad
		}
		if err := locks[i].Release(ctx); err != nil {
			return 0, 0, fmt.Errorf("%s unlock: %w", p.classes[class], err)
		}
		return class, wait, nil
	}
	return p, nil
}

// mixed: -mixed-readers reading and -mixed-writers writing sessions loop
// on one rwlock path, against the contended mutex on as many sessions in
// the same rounds. The ratio is all acquisitions (reads and writes) per
// second over the mutex's: what letting readers share buys on a
// population of that size; the writers' wait, next to the mutex's, is what
// a writer pays for waiting out the readers queued ahead of it.
func (b *bench) mixed(ctx context.Context) (string, error) {
	f := b.f
	n := mixedReaders + mixedWriters
	fmt.Printf("\n== mixed: %d reading and %d writing sessions (goroutines of this process, a session each) loop Lock;Unlock on one rwlock path, %v per side per round\n",
		mixedReaders, mixedWriters, f.duration)
	fmt.Printf("   baseline: the contended mutex on %d sessions (one path), in the same rounds\n", n)
	if mixedReaders < 0 || mixedWriters < 1 {
		return "", fmt.Errorf("-mixed-readers must not be negative and -mixed-writers must be at least 1")
	}
	var most atomic.Int64
	ours, err := b.rwPop(ctx, mixedReaders, mixedWriters, b.root+"/mixed/rw", &most)
	if err != nil {
		return "", err
	}
	defer ours.close()
	base, err := b.mutexPop(ctx, n, b.root+"/mixed/mutex")
	if err != nil {
		return "", err
	}
	defer base.close()
	o, bs, order, err := b.interleave(ctx, ours, base, "rwlock", "mutex")
	if err != nil {
		return "", err
	}
	printRounds(ours.classes, o, bs, order, f.duration, "mutex")
	so, sb := summarize(o, 2, f.duration), summarize(bs, 1, f.duration)
	ratio := median(ratios(so.rounds, sb.rounds))
	fmt.Printf("median: read %.0f/s, write %.0f/s, all %.0f/s; mutex %.0f/s; rwlock/mutex %.3f; most readers at once %d\n",
		so.rate[0], so.rate[1], so.rateAll, sb.rateAll, ratio, most.Load())
	fmt.Printf("wait p50/p99: writers %s/%s, readers %s/%s; mutex %s/%s\n",
		ms(so.p50[1]), ms(so.p99[1]), ms(so.p50[0]), ms(so.p99[0]), ms(sb.p50[0]), ms(sb.p99[0]))
	fmt.Printf("client CPU per acquisition: rwlock %.0fµs, mutex %.0fµs\n", so.cpuUs, sb.cpuUs)
	fmt.Printf("rwlock, requests per acquisition: %s\n", so.req)
	fmt.Printf("mutex, requests per acquisition: %s\n", sb.req)
	fmt.Println("exclusion held: no writer held alongside another holder")
	addReport(reportRow{
		workload: fmt.Sprintf("rwlock mixed: %d readers + %d writers, one path", mixedReaders, mixedWriters),
		ours:     fmt.Sprintf("%.0f reads/s + %.0f writes/s; writer wait p50 %s, p99 %s", so.rate[0], so.rate[1], ms(so.p50[1]), ms(so.p99[1])),
		base:     fmt.Sprintf("%.0f acq/s; wait p50 %s, p99 %s (mutex, %d sessions)", sb.rateAll, ms(sb.p50[0]), ms(sb.p99[0]), n),
		ratio:    ratio,
		note: fmt.Sprintf("ratio = (reads+writes)/s over the mutex's; reader wait p50 %s, p99 %s; CPU µs/acq %.0f vs %.0f; requests/acq %.2f vs %.2f",
			ms(so.p50[0]), ms(so.p99[0]), so.cpuUs, sb.cpuUs, so.req.total(), sb.req.total()),
	})
	return fmt.Sprintf("RESULT scenario=mixed readers=%d writers=%d read_ops=%.1f write_ops=%.1f mutex_ops=%.1f ratio=%.4f write_p50_ms=%.3f write_p99_ms=%.3f read_p50_ms=%.3f read_p99_ms=%.3f mutex_p50_ms=%.3f mutex_p99_ms=%.3f cpu_us_per_acq=%.1f cpu_us_per_acq_mutex=%.1f %s requests_per_acq_mutex=%.3f max_readers=%d rounds=%d duration=%v",
		mixedReaders, mixedWriters, so.rate[0], so.rate[1], sb.rateAll, ratio, msf(so.p50[1]), msf(so.p99[1]), msf(so.p50[0]), msf(so.p99[0]),
		msf(sb.p50[0]), msf(sb.p99[0]), so.cpuUs, sb.cpuUs, so.req.kv("acq"), sb.req.total(), most.Load(), f.rounds, f.duration), nil
}

func msf(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
