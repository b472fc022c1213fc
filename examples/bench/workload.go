package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/metric"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// The recipe workloads (readers, mixed, semcontended) share one shape: a
// population of sessions (separate Clients of this process) loops a timed
// acquisition for -duration per round, and a baseline population, the
// contended mutex on as many sessions, runs in the same rounds, the two
// taking turns at going first. Each side's figures: acquisitions per
// second (by class: read, write, lease...), the wait of each acquisition
// (the time its Lock or Acquire call took; p50 and p99 over every round),
// client CPU per acquisition (getrusage of this process while the side
// runs) and ZooKeeper requests per acquisition (Client.Stats).

// pop is a population of sessions, each looping one acquisition.
type pop struct {
	clients []*recipes.Client
	classes []string // names of the acquisition classes ("read", "write"...)
	// op makes session i acquire and release once, and returns the class
	// of the acquisition and how long the acquiring call took.
	op func(i int) (class int, wait time.Duration, err error)
	// sessions is the number of sessions looping op (default len(clients)).
	sessions int
}

func (p *pop) close() {
	for _, c := range p.clients {
		c.Close(context.Background())
	}
}

func (p *pop) stats() metric.RequestCounts {
	var s metric.RequestCounts
	for _, c := range p.clients {
		s = addStats(s, (*engine.Client)(c).Stats())
	}
	return s
}

// connectN connects n Clients; on error it closes those it made.
func (b *bench) connectN(n int) ([]*recipes.Client, error) {
	var cs []*recipes.Client
	for range n {
		c, err := recipes.Connect(context.Background(), b.servers, recipes.WithSessionTimeout(b.f.sessionTimeout))
		if err != nil {
			for _, c := range cs {
				c.Close(context.Background())
			}
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// mutexPop is the baseline: n sessions loop Lock;Unlock of one mutex path,
// mutual exclusion checked.
func (b *bench) mutexPop(ctx context.Context, n int, path string) (*pop, error) {
	cs, err := b.connectN(n)
	if err != nil {
		return nil, err
	}
	p := &pop{clients: cs, classes: []string{"mutex"}}
	locks := make([]*mutex.Mutex, n)
	for i, c := range cs {
		if locks[i], err = mutex.New(c, path, mutex.WithData(lockData)); err != nil {
			p.close()
			return nil, err
		}
	}
	var holders atomic.Int64
	p.op = func(i int) (int, time.Duration, error) {
		start := time.Now()
		if _, err := locks[i].Acquire(ctx); err != nil {
			return 0, 0, fmt.Errorf("lock: %w", err)
		}
		wait := time.Since(start)
		h := holders.Add(1)
		holders.Add(-1)
		if h != 1 {
			return 0, 0, fmt.Errorf("mutual exclusion violated: %d holders", h)
		}
		if err := locks[i].Release(ctx); err != nil {
			return 0, 0, fmt.Errorf("unlock: %w", err)
		}
		return 0, wait, nil
	}
	return p, nil
}

// popRound is one side's figures for one round.
type popRound struct {
	window []int                // acquisitions made before the deadline, by class
	total  int                  // all acquisitions (some finish after the deadline)
	waits  [][]time.Duration    // waits of the acquisitions in window, by class
	stats  metric.RequestCounts // requests the side's Clients sent
	cpu    time.Duration        // this process's CPU time while the side ran
}

func (r popRound) windowAll() int {
	n := 0
	for _, w := range r.window {
		n += w
	}
	return n
}

// round makes every session loop op until deadline.
func (p *pop) round(deadline time.Time) (popRound, error) {
	n := p.sessions
	if n == 0 {
		n = len(p.clients)
	}
	res := popRound{window: make([]int, len(p.classes)), waits: make([][]time.Duration, len(p.classes))}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		stop atomic.Bool
		errs []error
	)
	before, cpu0 := p.stats(), cpuTime()
	defer watchdog(deadline)()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			window := make([]int, len(p.classes))
			waits := make([][]time.Duration, len(p.classes))
			total := 0
			for !stop.Load() && time.Now().Before(deadline) {
				class, wait, err := p.op(i)
				if err != nil {
					stop.Store(true)
					mu.Lock()
					errs = append(errs, fmt.Errorf("session %d: %w", i, err))
					mu.Unlock()
					break
				}
				total++
				if time.Now().Before(deadline) {
					window[class]++
					waits[class] = append(waits[class], wait)
				}
			}
			mu.Lock()
			res.total += total
			for c := range window {
				res.window[c] += window[c]
				res.waits[c] = append(res.waits[c], waits[c]...)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.cpu = cpuTime() - cpu0
	res.stats = p.stats().Sub(before)
	return res, errors.Join(errs...)
}

// alternate runs one round of two sides, ours first in even rounds and
// base first in odd ones, so that noise lasting longer than a side hits
// both alike. It stops at the first error, or when ctx ends, and returns
// the round's order for the report: "<name of the side that went first>
// first".
func alternate(ctx context.Context, round int, oursName string, ours func() error, baseName string, base func() error) (order string, err error) {
	sides, first := []func() error{ours, base}, oursName
	if round%2 == 1 {
		sides[0], sides[1], first = base, ours, baseName
	}
	for _, side := range sides {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if err := side(); err != nil {
			return "", err
		}
	}
	return first + " first", nil
}

// interleave warms both sides up, then runs -rounds rounds of -duration
// each per side, the side that goes first alternating. It returns the
// rounds of each side and the order of each round.
func (b *bench) interleave(ctx context.Context, ours, base *pop, oursName, baseName string) (o, bs []popRound, order []string, err error) {
	f := b.f
	warm := min(f.duration, time.Second)
	for _, p := range []*pop{ours, base} {
		if _, err := p.round(time.Now().Add(warm)); err != nil {
			return nil, nil, nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	side := func(p *pop, name string, out *[]popRound) func() error {
		return func() error {
			res, err := p.round(time.Now().Add(f.duration))
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*out = append(*out, res)
			return nil
		}
	}
	for r := range f.rounds {
		ord, err := alternate(ctx, r, oursName, side(ours, oursName, &o), baseName, side(base, baseName, &bs))
		if err != nil {
			return nil, nil, nil, err
		}
		order = append(order, ord)
	}
	return o, bs, order, nil
}

// popSummary is one side's figures over all rounds.
type popSummary struct {
	rate     []float64 // median acquisitions/s by class
	rateAll  float64   // median acquisitions/s, all classes
	p50, p99 []time.Duration
	cpuUs    float64 // median client CPU µs per acquisition
	req      perOpStats
	rounds   []float64 // acquisitions/s, all classes, per round
}

func summarize(rounds []popRound, classes int, d time.Duration) popSummary {
	s := popSummary{rate: make([]float64, classes), p50: make([]time.Duration, classes), p99: make([]time.Duration, classes)}
	var (
		stats metric.RequestCounts
		total int
		cpus  []float64
	)
	for c := range classes {
		var rates []float64
		var waits []time.Duration
		for _, r := range rounds {
			rates = append(rates, float64(r.window[c])/d.Seconds())
			waits = append(waits, r.waits[c]...)
		}
		s.rate[c] = median(rates)
		s.p50[c], s.p99[c] = percentile(waits, 0.50), percentile(waits, 0.99)
	}
	for _, r := range rounds {
		s.rounds = append(s.rounds, float64(r.windowAll())/d.Seconds())
		stats, total = addStats(stats, r.stats), total+r.total
		cpus = append(cpus, cpuPerOp(r.cpu, max(r.total, 1)))
	}
	s.rateAll = median(s.rounds)
	s.cpuUs = median(cpus)
	s.req = perOp(stats, total)
	return s
}

// percentile returns the q-quantile of ds by nearest rank, 0 when empty.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	k := int(math.Ceil(q * float64(len(s))))
	return s[min(max(k, 1), len(s))-1]
}

// ms formats a duration in milliseconds with two decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1e3) }

// ratios returns ours/base per round.
func ratios(ours, base []float64) []float64 {
	var rs []float64
	for i := range min(len(ours), len(base)) {
		if base[i] > 0 {
			rs = append(rs, ours[i]/base[i])
		}
	}
	return rs
}

// printRounds prints the per-round table of a workload against its
// baseline: each class's rate, the baseline's, their ratio (all classes
// over the baseline) and the order.
func printRounds(classes []string, o, bs []popRound, order []string, d time.Duration, baseName string) {
	cols := []string{"round"}
	for _, c := range classes {
		cols = append(cols, c+" acq/s")
	}
	cols = append(cols, baseName+" acq/s", "ratio", "order")
	tw := table(cols...)
	for r := range o {
		var row []string
		row = append(row, fmt.Sprint(r+1))
		for c := range classes {
			row = append(row, fmt.Sprintf("%.0f", float64(o[r].window[c])/d.Seconds()))
		}
		or, br := float64(o[r].windowAll())/d.Seconds(), float64(bs[r].windowAll())/d.Seconds()
		ratio := 0.0
		if br > 0 {
			ratio = or / br
		}
		row = append(row, fmt.Sprintf("%.0f", br), fmt.Sprintf("%.3f", ratio), order[r])
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
}
