package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// ------------------------------------------------------------------- readers

// readers is the reader-throughput scenario: -readers sessions (separate
// Clients in this process) loop ReadLock().Lock;Unlock of one rwlock path
// for -duration per round. No writer takes part, so every reader holds at
// once; the figure is read acquisitions per second, shown next to the
// mutex's contended figure from the same run (when -which ran it), the
// rate a lock that admits one holder at a time reaches on as many
// sessions.
func (b *bench) readers(ctx context.Context) (string, error) {
	f := b.f
	fmt.Printf("\n== readers: %d sessions (goroutines of this process, each with its own session) loop ReadLock().Lock;Unlock on one rwlock path, %v per round\n",
		f.readers, f.duration)

	path := b.root + "/readers"
	var (
		clients []*recipes.Client
		locks   []*mutex.Mutex
	)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for range f.readers {
		c, err := recipes.Connect(b.servers, recipes.WithSessionTimeout(f.sessionTimeout))
		if err != nil {
			return "", err
		}
		clients = append(clients, c)
		rw, err := rwlock.New(c, path, mutex.WithData(lockData))
		if err != nil {
			return "", err
		}
		locks = append(locks, rw.ReadLock())
	}
	stats := func() recipes.Stats {
		var sum recipes.Stats
		for _, c := range clients {
			sum = addStats(sum, c.Stats())
		}
		return sum
	}

	// Warm up (sessions, the parent, the server's JIT) uncounted.
	if _, err := readRound(ctx, locks, time.Now().Add(min(f.duration, time.Second))); err != nil {
		return "", fmt.Errorf("warm-up: %w", err)
	}

	var (
		rates   []float64
		req     recipes.Stats
		acq     int
		pkts    pktCount
		maxConc int
	)
	tw := table("round", "readers/s", "most at once")
	for r := range f.rounds {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		before, pk := stats(), b.packets()
		res, err := readRound(ctx, locks, time.Now().Add(f.duration))
		if err != nil {
			return "", err
		}
		req = addStats(req, stats().Sub(before))
		acq += res.total
		pkts.add(pk, b.packets(), res.total)
		maxConc = max(maxConc, res.maxConcurrent)
		rate := float64(res.window) / f.duration.Seconds()
		rates = append(rates, rate)
		fmt.Fprintf(tw, "%d\t%.0f\t%d\n", r+1, rate, res.maxConcurrent)
	}
	med := median(rates)
	fmt.Fprintf(tw, "median\t%.0f\t\n", med)
	tw.Flush()
	per := perOp(req, acq)
	fmt.Printf("requests per read acquisition (sum over %d clients): %s\n", f.readers, per)
	fmt.Printf("server packets received per read acquisition (pings included): %s\n", pkts)
	vsMutex, ratio := "na", "na"
	if b.contendedOurs > 0 {
		vsMutex, ratio = fmt.Sprintf("%.1f", b.contendedOurs), fmt.Sprintf("%.3f", med/b.contendedOurs)
		fmt.Printf("readers: %.0f read acquisitions/s on %d sessions; mutex, contended, this run: %.0f acquisitions/s on %d sessions (readers/mutex %.2f)\n",
			med, f.readers, b.contendedOurs, f.sessions, med/b.contendedOurs)
	} else {
		fmt.Printf("readers: %.0f read acquisitions/s on %d sessions (add contended to -which for the mutex's figure next to it)\n", med, f.readers)
	}

	line := fmt.Sprintf("RESULT scenario=readers ours_ops=%.1f rounds=%d sessions=%d duration=%v max_concurrent=%d mutex_contended_ops=%s mutex_sessions=%d readers_per_mutex=%s %s server_pkts_per_acq_ours=%s",
		med, f.rounds, f.readers, f.duration, maxConc, vsMutex, f.sessions, ratio, per.kv("acq"), pkts.kv())
	return line, nil
}

type readResult struct {
	window, total int // acquisitions before the deadline, and in all
	maxConcurrent int // most sessions between Lock returning and Unlock returning
}

// readRound makes every session loop Lock;Unlock of its read lock until
// deadline.
func readRound(ctx context.Context, locks []*mutex.Mutex, deadline time.Time) (readResult, error) {
	var (
		holders, most, inWindow, all atomic.Int64
		stop                         atomic.Bool
		wg                           sync.WaitGroup
		mu                           sync.Mutex
		errs                         []error
	)
	fail := func(err error) {
		stop.Store(true)
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	defer watchdog(deadline)()
	for i, m := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && time.Now().Before(deadline) {
				if _, err := m.Lock(ctx); err != nil {
					fail(fmt.Errorf("session %d: read lock: %w", i, err))
					return
				}
				h := holders.Add(1)
				for {
					old := most.Load()
					if h <= old || most.CompareAndSwap(old, h) {
						break
					}
				}
				if time.Now().Before(deadline) {
					inWindow.Add(1)
				}
				all.Add(1)
				err := m.Unlock(ctx)
				holders.Add(-1) // a hold lasts until its node is deleted
				if err != nil {
					fail(fmt.Errorf("session %d: read unlock: %w", i, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	return readResult{window: int(inWindow.Load()), total: int(all.Load()), maxConcurrent: int(most.Load())}, errors.Join(errs...)
}

// scenarios in the order they run.
var scenarios = []string{"uncontended", "contended", "readers", "semaphore"}

// parseWhich reads -which: "all" or a comma-separated list of scenarios.
func parseWhich(s string) (map[string]bool, error) {
	which := map[string]bool{}
	for _, w := range strings.Split(s, ",") {
		switch w = strings.TrimSpace(w); {
		case w == "all":
			for _, sc := range scenarios {
				which[sc] = true
			}
		case slices.Contains(scenarios, w):
			which[w] = true
		default:
			return nil, fmt.Errorf("-which: %q is not all or one of %s", w, strings.Join(scenarios, ", "))
		}
	}
	return which, nil
}
