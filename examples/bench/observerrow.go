package main

// The observers row (issue 36, -which observers; not part of "all"): what
// caches on an observer spare the voters. It starts an ensemble of 3
// voters and 1 observer (zktest.WithObservers) and measures, in rounds
// whose order rotates, the ensemble's write latency (one writer on the
// voters, Set after Set on one node) while -obs-caches new caches of a
// tree of -obs-cache-nodes leaves load, again and again for
// -obs-duration: on the observer side every cache
// is on a client of the observer only, on the voters side on a client of
// one voter each (round robin). Each round also measures the same writes
// with no load (idle). Figures per side: the writes' p50 and p99 during
// the loads, one load's mean time, and client CPU per node loaded (getrusage of
// this process, the writer included). The ratio is the observer side's
// write p99 over the voters side's: below 1, caches on the observer
// disturb writes less. There is no target: it is a measurement. On one
// machine all four servers share its cores, so the observer's reads
// still take CPU from the voters: the row shows what is left of the
// separation there.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/par"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

var (
	obsCaches, obsLeaves, obsIdleWrites int
	obsDuration                         time.Duration
)

func init() {
	scenarios = append(scenarios, "observers")
	notInAll["observers"] = true
	flag.IntVar(&obsCaches, "obs-caches", 8, "observers: caches loading at once on each side")
	flag.IntVar(&obsLeaves, "obs-cache-nodes", 5000, "observers: leaves of the cached tree (fan-out 100, 100-byte values)")
	flag.IntVar(&obsIdleWrites, "obs-idle-writes", 200, "observers: writes timed with no load in each round")
	flag.DurationVar(&obsDuration, "obs-duration", 3*time.Second, "observers: how long each side loads caches, again and again, per round")
}

// obsSide is one side of the row: its clients, one cache each per round.
type obsSide struct {
	name    string
	clients []*recipes.Client
}

// obsRound is one side's figures in one round.
type obsRound struct {
	p50, p99, load time.Duration
	cpuPerNode     float64 // µs
	writes         int
}

// observersScenario runs the observers row on an ensemble of its own.
func (b *bench) observersScenario(ctx context.Context) (string, bool, error) {
	if obsCaches < 1 || obsLeaves < 100 {
		return "", false, fmt.Errorf("-obs-caches %d, -obs-cache-nodes %d: want 1 or more and 100 or more", obsCaches, obsLeaves)
	}
	zkc, err := zktest.Launch(3, zktest.WithObservers(1), zktest.WithoutTLS())
	if err != nil {
		return "", false, err
	}
	defer zkc.Close()
	fmt.Printf("\n== observers: %d caches of %d nodes loading on the observer against on the voters, ZooKeeper %s, 3 voters + 1 observer, %d rounds\n",
		obsCaches, obsLeaves, zkc.Version(), b.f.rounds)
	var clients []*recipes.Client
	defer func() {
		for _, c := range clients {
			c.Close(context.Background())
		}
	}()
	connect := func(servers []string) (*recipes.Client, error) {
		c, err := recipes.Connect(ctx, servers, recipes.WithSessionTimeout(b.f.sessionTimeout))
		if err == nil {
			clients = append(clients, c)
		}
		return c, err
	}
	w, err := connect(zkc.Voters())
	if err != nil {
		return "", false, err
	}
	root, total, err := obsTree(ctx, w, b.root+"/observers")
	if err != nil {
		return "", false, err
	}
	sides := []*obsSide{{name: "observer"}, {name: "voters"}}
	for i := range obsCaches {
		for j, servers := range [][]string{zkc.Observers(), {zkc.Voters()[i%3]}} {
			c, err := connect(servers)
			if err != nil {
				return "", false, err
			}
			sides[j].clients = append(sides[j].clients, c)
		}
	}
	wpath := b.root + "/observers-w"
	if _, err := w.Create(ctx, wpath, cacheValue("w"), 0); err != nil {
		return "", false, err
	}
	return b.observersRounds(ctx, sides, w, wpath, root, total)
}

// obsTree makes the cached tree under base: its root and node count.
func obsTree(ctx context.Context, c *recipes.Client, base string) (string, int, error) {
	root := fmt.Sprintf("%s/tree%d", base, obsLeaves)
	if _, err := c.CreateWithParents(ctx, root, cacheValue("root"), 0); err != nil {
		return "", 0, err
	}
	var level, leaves []string
	for i := range (obsLeaves + 99) / 100 {
		level = append(level, fmt.Sprintf("%s/p%03d", root, i))
	}
	for i := range obsLeaves {
		leaves = append(leaves, fmt.Sprintf("%s/p%03d/n%03d", root, i/100, i%100))
	}
	for _, ps := range [][]string{level, leaves} {
		if err := par.Each(32, ps, func(p string) error {
			_, err := c.Create(ctx, p, cacheValue("init"), 0)
			return err
		}); err != nil {
			return "", 0, err
		}
	}
	return root, 1 + len(level) + len(leaves), nil
}

// observersRounds warms each side up with one load, runs the rounds and
// reports.
func (b *bench) observersRounds(ctx context.Context, sides []*obsSide, w *recipes.Client, wpath, root string, total int) (string, bool, error) {
	for _, s := range sides {
		if _, err := s.load(ctx, w, wpath, root, total); err != nil {
			return "", false, fmt.Errorf("warm-up %s: %w", s.name, err)
		}
	}
	var idle []time.Duration
	figs := make([][]obsRound, len(sides))
	tw := table("round", "side", "write p50", "write p99", "writes", "load", "CPU µs/node")
	for r := range b.f.rounds {
		lat, err := timeWrites(ctx, w, wpath, obsIdleWrites, nil)
		if err != nil {
			return "", false, err
		}
		idle = append(idle, percentile(lat, 0.99))
		fmt.Fprintf(tw, "%d\tidle\t%s\t%s\t%d\t\t\n", r+1, ms(percentile(lat, 0.5)), ms(percentile(lat, 0.99)), len(lat))
		for i := range sides {
			k := (r + i) % len(sides)
			f, err := sides[k].load(ctx, w, wpath, root, total)
			if err != nil {
				return "", false, fmt.Errorf("%s: %w", sides[k].name, err)
			}
			figs[k] = append(figs[k], f)
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%.2f\n", r+1, sides[k].name, ms(f.p50), ms(f.p99), f.writes, ms(f.load), f.cpuPerNode)
		}
	}
	tw.Flush()
	return obsReport(figs, idle, total), true, nil
}

// obsReport prints and records the medians of the rounds.
func obsReport(figs [][]obsRound, idle []time.Duration, total int) string {
	med := func(rs []obsRound, get func(obsRound) float64) float64 {
		var xs []float64
		for _, r := range rs {
			xs = append(xs, get(r))
		}
		return median(xs)
	}
	p99 := func(r obsRound) float64 { return float64(r.p99.Microseconds()) / 1e3 }
	p50 := func(r obsRound) float64 { return float64(r.p50.Microseconds()) / 1e3 }
	load := func(r obsRound) float64 { return float64(r.load.Microseconds()) / 1e3 }
	cpu := func(r obsRound) float64 { return r.cpuPerNode }
	var ratio []float64
	for i := range figs[0] {
		ratio = append(ratio, p99(figs[0][i])/p99(figs[1][i]))
	}
	var idleMs []float64
	for _, d := range idle {
		idleMs = append(idleMs, float64(d.Microseconds())/1e3)
	}
	o, v := figs[0], figs[1]
	fmt.Printf("write p99 while caches load: observer %.2f ms, voters %.2f ms (observer/voters %.3f; rounds %.3f), idle %.2f ms\n",
		med(o, p99), med(v, p99), median(ratio), ratio, median(idleMs))
	addReport(reportRow{
		workload: "observers: write p99 while caches load, caches on the observer against on the voters",
		ours:     fmt.Sprintf("%.2f ms (p50 %.2f)", med(o, p99), med(o, p50)), base: fmt.Sprintf("%.2f ms (p50 %.2f)", med(v, p99), med(v, p50)),
		ratio: median(ratio), lowerBetter: true,
		note: fmt.Sprintf("idle p99 %.2f ms; load %.0f against %.0f ms; client CPU %.2f against %.2f µs/node", median(idleMs), med(o, load), med(v, load), med(o, cpu), med(v, cpu)),
	})
	return fmt.Sprintf("RESULT scenario=observers write_p99_ms_observer=%.3f write_p99_ms_voters=%.3f p99_ratio=%.4f idle_p99_ms=%.3f load_ms_observer=%.1f load_ms_voters=%.1f cpu_us_per_node_observer=%.3f cpu_us_per_node_voters=%.3f caches=%d nodes=%d rounds=%d",
		med(o, p99), med(v, p99), median(ratio), median(idleMs), med(o, load), med(v, load), med(o, cpu), med(v, cpu), obsCaches, total, len(o))
}

// load starts a new cache of root on each of the side's clients at once,
// again and again for -obs-duration (once at least), and times w's writes
// to wpath meanwhile. Its load time is the mean of one load of them all.
func (s *obsSide) load(ctx context.Context, w *recipes.Client, wpath, root string, total int) (obsRound, error) {
	stop := make(chan struct{})
	var (
		lat  []time.Duration
		werr error
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		lat, werr = timeWrites(ctx, w, wpath, -1, stop)
	}()
	c0, t0 := cpuTime(), time.Now()
	loads := 0
	var err error
	for err == nil && (loads == 0 || time.Since(t0) < obsDuration) {
		err = s.loadOnce(ctx, root)
		loads++
	}
	el, cpu := time.Since(t0), cpuTime()-c0
	close(stop)
	wg.Wait()
	if err = errors.Join(err, werr); err != nil {
		return obsRound{}, err
	}
	return obsRound{p50: percentile(lat, 0.5), p99: percentile(lat, 0.99), load: el / time.Duration(loads), writes: len(lat),
		cpuPerNode: float64(cpu.Microseconds()) / float64(total*len(s.clients)*loads)}, nil
}

// loadOnce starts a new cache of root on each of the side's clients at
// once, waits until all are initialized and closes them.
func (s *obsSide) loadOnce(ctx context.Context, root string) error {
	caches := make([]*cache.Cache, len(s.clients))
	for i, c := range s.clients {
		cc, err := cache.New(c, root)
		if err != nil {
			return err
		}
		caches[i] = cc
		defer cc.Close(context.Background())
	}
	return par.Each(len(caches), caches, func(cc *cache.Cache) error {
		if err := cc.Start(ctx); err != nil {
			return err
		}
		return cc.WaitReady(ctx)
	})
}

// timeWrites sets wpath n times (n < 0: until stop closes), one write at
// a time, and returns each write's latency.
func timeWrites(ctx context.Context, w *recipes.Client, wpath string, n int, stop <-chan struct{}) ([]time.Duration, error) {
	var lat []time.Duration
	data := cacheValue("write")
	for i := 0; n < 0 || i < n; i++ {
		select {
		case <-stop:
			return lat, nil
		default:
		}
		t := time.Now()
		if _, err := w.Set(ctx, wpath, data, -1); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t))
	}
	return lat, nil
}
