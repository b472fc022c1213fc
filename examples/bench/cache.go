package main

// The cache scenario (issue 26): package cache against Apache Curator's
// CuratorCache (peers/BenchCurator.java, the cacheload, cachelat and
// cacheresync commands), on the same tree of the same server, in the same
// rounds (the side that loads first alternates). The tree: -cache-nodes
// leaves (a comma-separated list of sizes, each its own tree and table:
// 10000 by default, "10000,100000" for issue 26's two sizes) under fan-out
// 100 (parents of 100 leaves under one root), 100-byte values. Each side's
// session goes through a zktest proxy of its own. Per round:
//
//   - load: a new cache of the tree, started; time to "initialized"; the
//     nodes there at that moment (Curator 5.4 fires it early past 65,535
//     outstanding reads: CURATOR-690); client CPU per cached node (ours:
//     getrusage of this process; Curator: its process CPU clock); heap
//     bytes per cached node (the heap in use after a full GC, before the
//     start and after "initialized": ours runtime.ReadMemStats' HeapAlloc,
//     Curator's the JVM's used heap); read requests; the server's watches
//     the cache added (wchs, first round).
//   - latency: both caches open, this process sets -cache-sets random
//     leaves at -cache-rate per second, each value beginning with "t<epoch nanos>"; each
//     cache's listener takes the wall clock when the change reaches it:
//     p50, p99 over the round. Client CPU per event: Curator's process CPU
//     over the phase; ours, this process's CPU over the phase less what the
//     same sets cost with no cache open (measured once, before the rounds).
//   - resync: both proxies black-holed, 20 leaves set (values "r..."), both
//     proxies restored (which closes the links: each client reconnects in
//     its session, and each cache reads the tree again; the persistent
//     watch did not deliver those changes): time from the restore to the
//     last of the 20 changes at the listener, and from the restore to the
//     client's RECONNECTED (go-zookeeper waits a second before it dials
//     again once it has tried every server; Curator's client has its own
//     delay), so that the read itself shows as the difference. The resync
//     is done for ours at its Resynced event (the whole merge), for Curator
//     at its last read's reply (its tracer counts the reads, and the
//     benchmark waits for a second without one); the read's time is from
//     the reconnect to that, and the requests are counted.

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/metric"
	"github.com/zkrecipes/zkrecipes/recipes"
)

var (
	cacheMD         string // the -md report's section, once the scenario ran
	cacheSizes      string
	cacheSetsPer    int
	cacheRate       int
	cacheResyncSets = 20
)

func init() {
	scenarios = append(scenarios, "cache")
	flag.StringVar(&cacheSizes, "cache-nodes", "10000", "cache: leaves of the cached tree (fan-out 100, 100-byte values); a comma-separated list runs each size (\"10000,100000\")")
	flag.IntVar(&cacheSetsPer, "cache-sets", 1000, "cache: sets per round (at -cache-rate) for the change-to-event latency")
	flag.IntVar(&cacheRate, "cache-rate", 1000, "cache: sets per second for the change-to-event latency")
}

// cacheSamples is what a listener of ours measured.
type cacheSamples struct {
	mu      sync.Mutex
	recon   time.Time // the client's first RECONNECTED after reset
	lat     []time.Duration
	resync  []time.Time
	resyncd time.Time // the last Resynced event
}

func (s *cacheSamples) listen(ev cache.Event) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.Type == cache.Resynced {
		s.resyncd = now
		return
	}
	if ev.Type != cache.NodeChanged || len(ev.New.Data) == 0 {
		return
	}
	d := ev.New.Data
	switch d[0] {
	case 't':
		end := 1
		for end < len(d) && d[end] >= '0' && d[end] <= '9' {
			end++
		}
		if sent, err := strconv.ParseInt(string(d[1:end]), 10, 64); err == nil {
			s.lat = append(s.lat, now.Sub(time.Unix(0, sent)))
		}
	case 'r':
		s.resync = append(s.resync, now)
	}
}

func (s *cacheSamples) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lat, s.resync, s.resyncd, s.recon = nil, nil, time.Time{}, time.Time{}
}

func (s *cacheSamples) state(st recipes.State) {
	if st != recipes.StateReconnected {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recon.IsZero() {
		s.recon = now
	}
}

// value pads a 100-byte value.
func cacheValue(prefix string) []byte {
	v := []byte(prefix + strings.Repeat(".", max(0, 100-len(prefix))))
	return v[:max(100, len(prefix))]
}

// cacheFigs are one side's figures in one round.
type cacheFigs struct {
	load, p50, p99, resync, resyncd time.Duration
	floor                           time.Duration // ours only: the raw pipelined read of the same nodes (cachefloor.go)
	recon                           time.Duration // restore to the client's RECONNECTED
	read                            time.Duration // the resync's read: reconnect to done (ours: Resynced; Curator: last read)
	loadReq, resyncReq              float64       // read requests (getData, getChildren, exists)
	cpuLoad, cpuEvent               float64       // µs per node, per event
	heap                            float64       // heap bytes per cached node
	size                            int           // nodes at "initialized"
	watches                         int           // the server's watches the load added (first round; -1: not measured)
}

// cacheScenario runs cacheSize for each of -cache-nodes' sizes with one
// Curator peer and one pair of proxies.
func (b *bench) cacheScenario(ctx context.Context) (string, error) {
	var sizes []int
	for _, f := range strings.Split(cacheSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 100 {
			return "", fmt.Errorf("-cache-nodes: %q: want leaf counts of 100 or more", cacheSizes)
		}
		sizes = append(sizes, n)
	}
	cs, err := b.startCacheSides(ctx, nil)
	defer cs.close()
	if err != nil {
		return "", err
	}
	fmt.Printf("\n== cache: package cache against Curator's CuratorCache, sizes %v leaves, %d rounds each\n", sizes, b.f.rounds)
	var lines []string
	cacheMD = ""
	for _, n := range sizes {
		tree, err := b.makeCacheTree(ctx, cs.admin, n)
		if err != nil {
			return "", err
		}
		res, err := b.cacheSize(ctx, cs, tree, cacheOpts{rounds: b.f.rounds})
		if err != nil {
			return "", err
		}
		tree.remove(ctx, cs.admin)
		lines = append(lines, res.line)
		cacheMD += res.md
	}
	return strings.Join(lines, "\n"), nil
}

// cacheOpts shape cacheSize's rounds: how many, and whether only the load
// is measured (the scale scenario) or also the latency and the resync.
type cacheOpts struct {
	rounds     int
	loadOnly   bool
	curMayFail bool // Curator's failure to load is cacheResult.curErr, and its side ends there
}

// cacheResult is what cacheSize measured: its RESULT line, its -md
// section, and each side's figures per round.
type cacheResult struct {
	line, md   string
	ours, curs []cacheFigs
	curErr     error // opt.curMayFail: why Curator's load failed (its process is gone)
}

// cacheSize is one size's rounds on tree.
func (b *bench) cacheSize(ctx context.Context, cs *cacheSides, tree *cacheTree, opt cacheOpts) (cacheResult, error) {
	admin, oc, pxOurs, pxCur, cur, curNote := cs.admin, cs.oc, cs.pxOurs, cs.pxCur, cs.cur, cs.curNote
	root, level, leaves, total := tree.root, tree.level, tree.leaves, tree.total
	cacheLeaves := len(leaves)

	rng := rand.New(rand.NewPCG(26, 26))
	setAll := func(n int, prefix func(int) string, paced bool) error {
		tick := time.Second / time.Duration(max(cacheRate, 1))
		next := time.Now()
		for i := range n {
			if paced {
				time.Sleep(time.Until(next))
				next = next.Add(tick)
			}
			if _, err := admin.Set(ctx, leaves[rng.IntN(len(leaves))], cacheValue(prefix(i)), -1); err != nil {
				return err
			}
		}
		return nil
	}
	latValue := func(int) string { return "t" + strconv.FormatInt(time.Now().UnixNano(), 10) + "-" }

	// What the sets cost this process with no cache open.
	var writerCPU float64
	if !opt.loadOnly {
		c0 := cpuTime()
		if err := setAll(cacheSetsPer, latValue, true); err != nil {
			return cacheResult{}, err
		}
		writerCPU = float64((cpuTime() - c0).Microseconds()) / float64(cacheSetsPer)
	}

	heapNow := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var ours, curs []cacheFigs
	var curErr error
	for r := range opt.rounds {
		o, c := cacheFigs{watches: -1}, cacheFigs{watches: -1}
		var s cacheSamples
		stopListening := oc.Listen(s.state)
		var cc *cache.Cache
		var err error
		watches := func() int {
			if r > 0 {
				return -1
			}
			w, err := b.watchCount()
			if err != nil {
				return -1
			}
			return w
		}
		loadOurs := func() error {
			cc, err = cache.New(oc, root)
			if err != nil {
				return err
			}
			cc.Listen(s.listen)
			w0, h0 := watches(), heapNow()
			c0, t0, st0 := cpuTime(), time.Now(), (*engine.Client)(oc).Stats()
			if err := cc.Start(ctx); err != nil {
				return err
			}
			if err := cc.WaitReady(ctx); err != nil {
				return err
			}
			o.load = time.Since(t0)
			o.size = cc.Size()
			o.loadReq = reads((*engine.Client)(oc).Stats().Sub(st0))
			o.cpuLoad = float64((cpuTime() - c0).Microseconds()) / float64(o.size)
			o.heap = (float64(heapNow()) - float64(h0)) / float64(o.size)
			if w1 := watches(); w0 >= 0 && w1 >= 0 {
				o.watches = w1 - w0
			}
			return nil
		}
		loadCur := func() error {
			if cur == nil {
				return nil
			}
			w0 := watches()
			a, err := cur.do(6*time.Minute+time.Duration(total)*time.Millisecond/2, "cacheload %s", root)
			if err != nil && opt.curMayFail {
				curErr, cur, c.size = err, nil, -1
				return nil
			}
			if err != nil {
				return err
			}
			c.load = time.Duration(a.seconds * float64(time.Second))
			c.cpuLoad = a.cpu * 1e6 / float64(max(a.ops, 1))
			c.size = a.ops
			if len(a.extra) == 3 {
				c.heap = a.extra[0] / max(a.extra[1], 1)
				c.loadReq = a.extra[2]
			}
			if w1 := watches(); w0 >= 0 && w1 >= 0 {
				c.watches = w1 - w0
			}
			return nil
		}
		first, second := loadOurs, loadCur
		if r%2 == 1 {
			first, second = loadCur, loadOurs
		}
		if err := first(); err != nil {
			return cacheResult{}, err
		}
		if err := second(); err != nil {
			return cacheResult{}, err
		}
		// Ours must hold every node; Curator's shortfall (CURATOR-690 in
		// 5.4) is reported, not fatal.
		if o.size != total {
			return cacheResult{}, fmt.Errorf("round %d: at initialized ours held %d nodes of %d", r+1, o.size, total)
		}
		curShort := cur != nil && c.size < total
		// The floor of a load: the same nodes read raw, on the same link.
		all := append(append([]string{root}, level...), leaves...)
		floor, floorReq, err := rawFloor(ctx, oc, all)
		if err != nil {
			return cacheResult{}, err
		}
		o.floor = floor

		if !opt.loadOnly {
			// Latency.
			s.reset()
			if cur != nil {
				if _, err := cur.do(time.Minute, "cachelat-start"); err != nil {
					return cacheResult{}, err
				}
			}
			var curCPU0 time.Duration
			if cur != nil {
				curCPU0, _ = processCPU(cur.cmd.Process.Pid)
			}
			c0 := cpuTime()
			if err := setAll(cacheSetsPer, latValue, true); err != nil {
				return cacheResult{}, err
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				s.mu.Lock()
				n := len(s.lat)
				s.mu.Unlock()
				if n >= cacheSetsPer || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			ourCPU := cpuTime() - c0
			s.mu.Lock()
			o.p50, o.p99 = percentile(s.lat, 0.5), percentile(s.lat, 0.99)
			// At this rate two sets of one leaf may come within one read:
			// coalesced into one event (as Curator does), so a few fewer
			// samples than sets is no fault.
			heard := len(s.lat)
			s.mu.Unlock()
			if heard < cacheSetsPer*9/10 {
				return cacheResult{}, fmt.Errorf("round %d: our cache heard %d of %d changes", r+1, heard, cacheSetsPer)
			}
			o.cpuEvent = max(0, float64(ourCPU.Microseconds())/float64(heard)-writerCPU)
			if cur != nil {
				a, err := cur.do(time.Minute, "cachelat-wait %d", cacheSetsPer)
				if err != nil {
					return cacheResult{}, err
				}
				curCPU1, _ := processCPU(cur.cmd.Process.Pid)
				c.p50 = time.Duration(a.seconds * float64(time.Second))
				c.p99 = time.Duration(a.total) * time.Microsecond
				c.cpuEvent = float64((curCPU1 - curCPU0).Microseconds()) / float64(max(a.ops, 1))
				if a.ops < cacheSetsPer*9/10 && !curShort {
					return cacheResult{}, fmt.Errorf("round %d: Curator's cache heard %d of %d changes", r+1, a.ops, cacheSetsPer)
				}
			}

			// Resync after the links are lost.
			s.reset()
			if cur != nil {
				if _, err := cur.do(time.Minute, "cacheresync-start"); err != nil {
					return cacheResult{}, err
				}
			}
			st0 := (*engine.Client)(oc).Stats()
			pxOurs.Blackhole()
			pxCur.Blackhole()
			// Distinct leaves, so that each set is one change to find.
			perm := rng.Perm(len(leaves))[:cacheResyncSets]
			for i, k := range perm {
				if _, err := admin.Set(ctx, leaves[k], cacheValue("r"+strconv.Itoa(i)), -1); err != nil {
					return cacheResult{}, err
				}
			}
			restored := time.Now()
			pxOurs.Restore()
			pxCur.Restore()
			deadline = time.Now().Add(2 * time.Minute)
			for {
				s.mu.Lock()
				done := len(s.resync) >= cacheResyncSets && !s.resyncd.IsZero()
				s.mu.Unlock()
				if done || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			s.mu.Lock()
			if len(s.resync) < cacheResyncSets || s.resyncd.IsZero() {
				s.mu.Unlock()
				return cacheResult{}, fmt.Errorf("round %d: our cache found %d of %d changes after the restore (resynced: %v)", r+1, len(s.resync), cacheResyncSets, !s.resyncd.IsZero())
			}
			o.resync = s.resync[len(s.resync)-1].Sub(restored)
			o.resyncd = s.resyncd.Sub(restored)
			o.resyncReq = reads((*engine.Client)(oc).Stats().Sub(st0))
			if !s.recon.IsZero() {
				o.recon = s.recon.Sub(restored)
			}
			o.read = o.resyncd - o.recon
			s.mu.Unlock()
			stopListening()
			if cur != nil {
				a, err := cur.do(4*time.Minute, "cacheresync-wait %d %d", cacheResyncSets, restored.UnixNano())
				if err != nil {
					return cacheResult{}, err
				}
				if a.ops < cacheResyncSets && !curShort {
					return cacheResult{}, fmt.Errorf("round %d: Curator's cache found %d of %d changes after the restore", r+1, a.ops, cacheResyncSets)
				}
				c.resync = time.Duration(a.seconds * float64(time.Second))
				c.recon = time.Duration(a.total) * time.Microsecond
				if len(a.extra) == 3 {
					// Curator's RECONNECTED reaches its listeners after the
					// cache's first reads may have begun: the read is timed
					// from its first reply (one round trip short).
					c.resyncd = time.Duration(a.extra[0] * float64(time.Microsecond))
					c.resyncReq = a.extra[1]
					c.read = c.resyncd - min(c.recon, time.Duration(a.extra[2]*float64(time.Microsecond)))
				}
			}
		} else {
			stopListening()
		}
		if err := cc.Close(ctx); err != nil {
			return cacheResult{}, err
		}
		ours, curs = append(ours, o), append(curs, c)
		line := fmt.Sprintf("   round %d: raw read of the same nodes %s (%d multiReads); ours load %s (%d nodes, %.1f µs CPU/node, %.0f heap B/node, %.0f reads, %d watches), latency p50 %s p99 %s (%.0f µs CPU/event), resync %s (reconnected after %s, read %s, %.0f reads)",
			r+1, ms(o.floor), floorReq, ms(o.load), o.size, o.cpuLoad, o.heap, o.loadReq, o.watches, ms(o.p50), ms(o.p99), o.cpuEvent, ms(o.resync), ms(o.recon), ms(o.read), o.resyncReq)
		if cur != nil {
			line += fmt.Sprintf("; Curator load %s (%d nodes, %.1f µs CPU/node, %.0f heap B/node, %.0f reads, %d watches), latency p50 %s p99 %s (%.0f µs CPU/event), resync %s (reconnected after %s, read %s, %.0f reads)",
				ms(c.load), c.size, c.cpuLoad, c.heap, c.loadReq, c.watches, ms(c.p50), ms(c.p99), c.cpuEvent, ms(c.resync), ms(c.recon), ms(c.read), c.resyncReq)
		}
		fmt.Println(line)
	}

	med := func(figs []cacheFigs, get func(cacheFigs) float64) float64 {
		var xs []float64
		for _, f := range figs {
			xs = append(xs, get(f))
		}
		return median(xs)
	}
	// The heap figure leaves out the first round: the JVM's first load
	// frees megabytes of its start-up (the source launcher's compile) that
	// the heap before it still held, and its figure comes out near zero
	// or below.
	medHeap := func(figs []cacheFigs) float64 {
		if len(figs) > 1 {
			figs = figs[1:]
		}
		return med(figs, func(f cacheFigs) float64 { return f.heap })
	}
	msOf := func(get func(cacheFigs) time.Duration) func(cacheFigs) float64 {
		return func(f cacheFigs) float64 { return float64(get(f).Microseconds()) / 1e3 }
	}
	type col struct {
		name, unit string
		get        func(cacheFigs) float64
	}
	cols := []col{
		{"nodes_at_initialized", "", func(f cacheFigs) float64 { return float64(f.size) }},
		{"load_ms", "ms", msOf(func(f cacheFigs) time.Duration { return f.load })},
		{"load_nodes_per_s", "/s", func(f cacheFigs) float64 { return float64(f.size) / f.load.Seconds() }},
		{"cpu_us_per_node", "µs", func(f cacheFigs) float64 { return f.cpuLoad }},
		{"heap_bytes_per_node", "B", nil}, // medHeap
		{"load_requests", "", func(f cacheFigs) float64 { return f.loadReq }},
		{"lat_p50_ms", "ms", msOf(func(f cacheFigs) time.Duration { return f.p50 })},
		{"lat_p99_ms", "ms", msOf(func(f cacheFigs) time.Duration { return f.p99 })},
		{"cpu_us_per_event", "µs", func(f cacheFigs) float64 { return f.cpuEvent }},
		{"resync_ms", "ms", msOf(func(f cacheFigs) time.Duration { return f.resync })},
		{"reconnect_ms", "ms", msOf(func(f cacheFigs) time.Duration { return f.recon })},
		{"resync_read_ms", "ms", msOf(func(f cacheFigs) time.Duration { return f.read })},
		{"resync_requests", "", func(f cacheFigs) float64 { return f.resyncReq }},
	}
	var res strings.Builder
	fmt.Fprintf(&res, "RESULT scenario=cache nodes=%d sets=%d rate=%d resync_sets=%d", total, cacheSetsPer, cacheRate, cacheResyncSets)
	medCol := func(figs []cacheFigs, c col) float64 {
		if c.get == nil {
			return medHeap(figs)
		}
		return med(figs, c.get)
	}
	for _, c := range cols {
		fmt.Fprintf(&res, " %s_ours=%.3f", c.name, medCol(ours, c))
		if cur != nil {
			fmt.Fprintf(&res, " %s_curator=%.3f", c.name, medCol(curs, c))
		}
	}
	fmt.Fprintf(&res, " watches_ours=%d", ours[0].watches)
	floorMs := med(ours, msOf(func(f cacheFigs) time.Duration { return f.floor }))
	fmt.Fprintf(&res, " load_floor_ms=%.3f load_over_floor_x=%.2f", floorMs, med(ours, cols[1].get)/floorMs)
	pass := med(ours, cols[7].get) <= 10
	if cur != nil {
		loadX := med(curs, cols[1].get) / med(ours, cols[1].get) * med(ours, cols[0].get) / max(med(curs, cols[0].get), 1)
		readX := med(curs, cols[11].get) / med(ours, cols[11].get)
		heapX := medHeap(ours) / medHeap(curs)
		fmt.Fprintf(&res, " watches_curator=%d load_rate_x=%.2f resync_read_rate_x=%.2f heap_ratio=%.2f", curs[0].watches, loadX, readX, heapX)
		pass = pass && loadX >= 3 && readX >= 3 && heapX <= 0.5
	}
	fmt.Fprintf(&res, " writer_cpu_us_per_set=%.1f pass=%t", writerCPU, pass)
	var md strings.Builder
	fmt.Fprintf(&md, "\n## cache: package cache against Curator's CuratorCache, %d nodes\n\n", total)
	fmt.Fprintf(&md, "One tree of %d nodes (%d leaves under fan-out 100, 100-byte values), each side's session through a proxy of its own, %d alternating rounds, medians. Latency: %d sets per round at %d/s, wall clock from the set to the listener. Resync: both links black-holed while %d leaves change, then restored.\n\n", total, cacheLeaves, opt.rounds, cacheSetsPer, cacheRate, cacheResyncSets)
	curCell := func(c col) string {
		if cur == nil {
			return curNote
		}
		return fmt.Sprintf("%.1f %s", medCol(curs, c), c.unit)
	}
	fmt.Fprintf(&md, "| measure | ours | Curator CuratorCache |\n|---|---|---|\n")
	for _, c := range cols {
		fmt.Fprintf(&md, "| %s | %.1f %s | %s |\n", c.name, medCol(ours, c), c.unit, curCell(c))
	}
	fmt.Fprintf(&md, "| load_floor_ms: the same nodes read raw (64 getData per multiRead, 64 in flight; paths known) | %.1f ms (load %.2f× it) | |\n", floorMs, med(ours, cols[1].get)/floorMs)
	if cur != nil {
		fmt.Fprintf(&md, "| server watches per cache (wchs, first round) | %d | %d |\n", ours[0].watches, curs[0].watches)
	} else {
		fmt.Fprintf(&md, "| server watches per cache (wchs, first round) | %d | |\n", ours[0].watches)
	}
	fmt.Fprintf(&md, "\nCPU is the client's: ours this process's getrusage (for events, less what the same sets cost with no cache open, %.0f µs per set), Curator's its process CPU clock. Heap: bytes in use after a full GC, after \"initialized\" less before the start, per node cached then (Go HeapAlloc; the JVM's used heap, -XX:+UseSerialGC), the median of the rounds after the first (the JVM's first load frees start-up memory the heap before it held). resync_ms runs from the restore to the last changed leaf heard; reconnect_ms to the client's RECONNECTED; resync_read_ms from that (Curator: or its first read's reply, if earlier) to the read's end (ours: the Resynced event; Curator: its last read's reply). Requests: getData, getChildren, exists and multiRead (ours: one multiRead per 64 nodes; Curator's counted by its tracer).\n", writerCPU)
	fmt.Printf("   medians: %s\n", strings.TrimPrefix(res.String(), "RESULT "))
	return cacheResult{line: res.String(), md: md.String(), ours: ours, curs: curs, curErr: curErr}, nil
}

// reads counts the read requests in s (a multiRead as one).
func reads(s metric.RequestCounts) float64 {
	return float64(s.GetData + s.Children + s.Exists + s.MultiReads)
}
