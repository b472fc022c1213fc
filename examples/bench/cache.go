package main

// The cache scenario (issue 26): package cache against Apache Curator's
// CuratorCache (peers/BenchCurator.java, the cacheload, cachelat and
// cacheresync commands), on the same tree of the same server, in the same
// rounds (the side that loads first alternates). The tree: -cache-nodes
// leaves under fan-out 100 (parents of 100 leaves under one root), 100-byte
// values. Each side's session goes through a zktest proxy of its own. Per
// round:
//
//   - load: a new cache of the tree, started; time to "initialized"; client
//     CPU per cached node (ours: getrusage of this process; Curator: its
//     process CPU clock).
//   - latency: both caches open, this process sets -cache-sets random
//     leaves at 300/s, each value beginning with "t<epoch nanos>"; each
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
//     delay), so that the read itself shows as the difference. Ours also
//     gives the time to its Resynced event (the whole merge done).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

var (
	cacheMD         string // the -md report's section, once the scenario ran
	cacheLeaves     int
	cacheSetsPer    int
	cacheResyncSets = 20
)

func init() {
	scenarios = append(scenarios, "cache")
	flag.IntVar(&cacheLeaves, "cache-nodes", 2000, "cache: leaves of the cached tree (fan-out 100, 100-byte values)")
	flag.IntVar(&cacheSetsPer, "cache-sets", 300, "cache: sets per round (at 300/s) for the change-to-event latency")
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
	recon                           time.Duration // restore to the client's RECONNECTED
	loadReq, resyncReq              float64       // ours: read requests (getData, getChildren, exists)
	cpuLoad, cpuEvent               float64       // µs per node, per event
	size                            int
}

func (b *bench) cacheScenario(ctx context.Context) (string, error) {
	root := b.root + "/cache"
	parents := (cacheLeaves + 99) / 100
	total := 1 + parents + cacheLeaves
	fmt.Printf("\n== cache: a cache of %d nodes (%d leaves under fan-out 100, 100-byte values), ours against Curator's CuratorCache, %d rounds\n", total, cacheLeaves, b.f.rounds)
	admin, err := recipes.Connect(ctx, b.servers, recipes.WithSessionTimeout(b.f.sessionTimeout))
	if err != nil {
		return "", err
	}
	defer admin.Close(context.Background())
	if _, err := admin.CreateWithParents(ctx, root, cacheValue("root"), 0); err != nil {
		return "", err
	}
	var leaves []string
	var level []string
	for i := range parents {
		level = append(level, fmt.Sprintf("%s/p%03d", root, i))
	}
	for i := range cacheLeaves {
		leaves = append(leaves, fmt.Sprintf("%s/p%03d/n%03d", root, i/100, i%100))
	}
	for _, ps := range [][]string{level, leaves} {
		if err := parallelDo(32, ps, func(p string) error {
			_, err := admin.Create(ctx, p, cacheValue("init"), 0)
			return err
		}); err != nil {
			return "", err
		}
	}

	pxOurs, err := zktest.ListenProxy(b.servers[0])
	if err != nil {
		return "", err
	}
	defer pxOurs.Close()
	pxCur, err := zktest.ListenProxy(b.servers[0])
	if err != nil {
		return "", err
	}
	defer pxCur.Close()
	oc, err := recipes.Connect(ctx, []string{pxOurs.Addr()}, recipes.WithSessionTimeout(b.f.sessionTimeout))
	if err != nil {
		return "", err
	}
	defer oc.Close(context.Background())

	var cur *peerProc
	curNote := ""
	dir, err := os.MkdirTemp("", "zkrecipes-bench-cache-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if peersOn {
		p, version, err := startCurator(dir, []string{pxCur.Addr()}, b.f.sessionTimeout, 1)
		switch {
		case errors.Is(err, interop.ErrUnavailable):
			curNote = "not run: " + err.Error()
		case err != nil:
			return "", err
		default:
			if err := p.ready(); err != nil {
				return "", err
			}
			defer p.close()
			cur = p
			fmt.Printf("   Curator: %s, CuratorCache\n", version)
		}
	} else {
		curNote = "not run: -peers=false"
	}
	if curNote != "" {
		fmt.Println("   Curator:", curNote)
	}

	rng := rand.New(rand.NewPCG(26, 26))
	setAll := func(n int, prefix func(int) string, paced bool) error {
		tick := time.Second / 300
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
	c0 := cpuTime()
	if err := setAll(cacheSetsPer, latValue, true); err != nil {
		return "", err
	}
	writerCPU := float64((cpuTime() - c0).Microseconds()) / float64(cacheSetsPer)

	var ours, curs []cacheFigs
	for r := range b.f.rounds {
		var o, c cacheFigs
		var s cacheSamples
		stopListening := oc.Listen(s.state)
		var cc *cache.Cache
		loadOurs := func() error {
			cc, err = cache.New(oc, root)
			if err != nil {
				return err
			}
			cc.Listen(s.listen)
			c0, t0, st0 := cpuTime(), time.Now(), engine.Of(oc).Stats()
			if err := cc.Start(ctx); err != nil {
				return err
			}
			if err := cc.WaitInitialized(ctx); err != nil {
				return err
			}
			o.load = time.Since(t0)
			o.loadReq = reads(engine.Of(oc).Stats().Sub(st0))
			o.cpuLoad = float64((cpuTime() - c0).Microseconds()) / float64(cc.Size())
			o.size = cc.Size()
			return nil
		}
		loadCur := func() error {
			if cur == nil {
				return nil
			}
			a, err := cur.do(6*time.Minute, "cacheload %s", root)
			if err != nil {
				return err
			}
			c.load = time.Duration(a.seconds * float64(time.Second))
			c.cpuLoad = a.cpu * 1e6 / float64(max(a.ops, 1))
			c.size = a.ops
			return nil
		}
		first, second := loadOurs, loadCur
		if r%2 == 1 {
			first, second = loadCur, loadOurs
		}
		if err := first(); err != nil {
			return "", err
		}
		if err := second(); err != nil {
			return "", err
		}
		if o.size != total || cur != nil && c.size != total {
			return "", fmt.Errorf("round %d: at initialized ours held %d nodes, Curator %d, of %d", r+1, o.size, c.size, total)
		}

		// Latency.
		s.reset()
		if cur != nil {
			if _, err := cur.do(time.Minute, "cachelat-start"); err != nil {
				return "", err
			}
		}
		var curCPU0 time.Duration
		if cur != nil {
			curCPU0, _ = processCPU(cur.cmd.Process.Pid)
		}
		c0 := cpuTime()
		if err := setAll(cacheSetsPer, latValue, true); err != nil {
			return "", err
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
		if len(s.lat) < cacheSetsPer {
			s.mu.Unlock()
			return "", fmt.Errorf("round %d: our cache heard %d of %d changes", r+1, len(s.lat), cacheSetsPer)
		}
		s.mu.Unlock()
		o.cpuEvent = max(0, float64(ourCPU.Microseconds())/float64(cacheSetsPer)-writerCPU)
		if cur != nil {
			a, err := cur.do(time.Minute, "cachelat-wait %d", cacheSetsPer)
			if err != nil {
				return "", err
			}
			curCPU1, _ := processCPU(cur.cmd.Process.Pid)
			c.p50 = time.Duration(a.seconds * float64(time.Second))
			c.p99 = time.Duration(a.total) * time.Microsecond
			c.cpuEvent = float64((curCPU1 - curCPU0).Microseconds()) / float64(cacheSetsPer)
			if a.ops < cacheSetsPer {
				return "", fmt.Errorf("round %d: Curator's cache heard %d of %d changes", r+1, a.ops, cacheSetsPer)
			}
		}

		// Resync after the links are lost.
		s.reset()
		if cur != nil {
			if _, err := cur.do(time.Minute, "cacheresync-start"); err != nil {
				return "", err
			}
		}
		st0 := engine.Of(oc).Stats()
		pxOurs.Blackhole()
		pxCur.Blackhole()
		// Distinct leaves, so that each set is one change to find.
		perm := rng.Perm(len(leaves))[:cacheResyncSets]
		for i, k := range perm {
			if _, err := admin.Set(ctx, leaves[k], cacheValue("r"+strconv.Itoa(i)), -1); err != nil {
				return "", err
			}
		}
		restored := time.Now()
		pxOurs.Restore()
		pxCur.Restore()
		deadline = time.Now().Add(time.Minute)
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
			return "", fmt.Errorf("round %d: our cache found %d of %d changes after the restore (resynced: %v)", r+1, len(s.resync), cacheResyncSets, !s.resyncd.IsZero())
		}
		o.resync = s.resync[len(s.resync)-1].Sub(restored)
		o.resyncd = s.resyncd.Sub(restored)
		o.resyncReq = reads(engine.Of(oc).Stats().Sub(st0))
		if !s.recon.IsZero() {
			o.recon = s.recon.Sub(restored)
		}
		s.mu.Unlock()
		stopListening()
		if cur != nil {
			a, err := cur.do(2*time.Minute, "cacheresync-wait %d %d", cacheResyncSets, restored.UnixNano())
			if err != nil {
				return "", err
			}
			if a.ops < cacheResyncSets {
				return "", fmt.Errorf("round %d: Curator's cache found %d of %d changes after the restore", r+1, a.ops, cacheResyncSets)
			}
			c.resync = time.Duration(a.seconds * float64(time.Second))
			c.recon = time.Duration(a.total) * time.Microsecond
		}
		if err := cc.Close(ctx); err != nil {
			return "", err
		}
		ours, curs = append(ours, o), append(curs, c)
		line := fmt.Sprintf("   round %d: ours load %s (%.1f µs CPU/node), latency p50 %s p99 %s (%.0f µs CPU/event), resync %s (reconnected after %s, Resynced %s)",
			r+1, ms(o.load), o.cpuLoad, ms(o.p50), ms(o.p99), o.cpuEvent, ms(o.resync), ms(o.recon), ms(o.resyncd))
		if cur != nil {
			line += fmt.Sprintf("; Curator load %s (%.1f µs CPU/node), latency p50 %s p99 %s (%.0f µs CPU/event), resync %s (reconnected after %s)",
				ms(c.load), c.cpuLoad, ms(c.p50), ms(c.p99), c.cpuEvent, ms(c.resync), ms(c.recon))
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
	msOf := func(get func(cacheFigs) time.Duration) func(cacheFigs) float64 {
		return func(f cacheFigs) float64 { return float64(get(f).Microseconds()) / 1e3 }
	}
	type col struct {
		name string
		get  func(cacheFigs) float64
	}
	cols := []col{
		{"load_ms", msOf(func(f cacheFigs) time.Duration { return f.load })},
		{"cpu_us_per_node", func(f cacheFigs) float64 { return f.cpuLoad }},
		{"lat_p50_ms", msOf(func(f cacheFigs) time.Duration { return f.p50 })},
		{"lat_p99_ms", msOf(func(f cacheFigs) time.Duration { return f.p99 })},
		{"cpu_us_per_event", func(f cacheFigs) float64 { return f.cpuEvent }},
		{"resync_ms", msOf(func(f cacheFigs) time.Duration { return f.resync })},
		{"reconnect_ms", msOf(func(f cacheFigs) time.Duration { return f.recon })},
		{"resync_after_reconnect_ms", msOf(func(f cacheFigs) time.Duration { return f.resync - f.recon })},
	}
	var res strings.Builder
	fmt.Fprintf(&res, "RESULT scenario=cache nodes=%d sets=%d resync_sets=%d", total, cacheSetsPer, cacheResyncSets)
	for _, c := range cols {
		fmt.Fprintf(&res, " %s_ours=%.3f", c.name, med(ours, c.get))
		if cur != nil {
			fmt.Fprintf(&res, " %s_curator=%.3f", c.name, med(curs, c.get))
		}
	}
	fmt.Fprintf(&res, " resynced_ms_ours=%.3f load_requests_ours=%.0f resync_requests_ours=%.0f", med(ours, msOf(func(f cacheFigs) time.Duration { return f.resyncd })),
		med(ours, func(f cacheFigs) float64 { return f.loadReq }), med(ours, func(f cacheFigs) float64 { return f.resyncReq }))
	if cur != nil {
		lo, lc := med(ours, cols[0].get), med(curs, cols[0].get)
		fmt.Fprintf(&res, " load_speedup=%.2f", lc/lo)
	}
	fmt.Fprintf(&res, " writer_cpu_us_per_set=%.1f", writerCPU)
	var md strings.Builder
	fmt.Fprintf(&md, "\n## cache: package cache against Curator's CuratorCache\n\n")
	fmt.Fprintf(&md, "One tree of %d nodes (%d leaves under fan-out 100, 100-byte values), each side's session through a proxy of its own, %d alternating rounds, medians. Latency: %d sets per round at 300/s, wall clock from the set to the listener. Resync: both links black-holed while %d leaves change, then restored.\n\n", total, cacheLeaves, b.f.rounds, cacheSetsPer, cacheResyncSets)
	curCell := func(c col, unit string) string {
		if cur == nil {
			return curNote
		}
		return fmt.Sprintf("%.1f %s", med(curs, c.get), unit)
	}
	fmt.Fprintf(&md, "| measure | ours | Curator CuratorCache |\n|---|---|---|\n")
	for i, c := range cols {
		unit := []string{"ms", "µs", "ms", "ms", "µs", "ms", "ms", "ms"}[i]
		fmt.Fprintf(&md, "| %s | %.1f %s | %s |\n", c.name, med(ours, c.get), unit, curCell(c, unit))
	}
	fmt.Fprintf(&md, "\nOur read requests: %.0f per load, %.0f per resync (getData, getChildren, exists).\n", med(ours, func(f cacheFigs) float64 { return f.loadReq }), med(ours, func(f cacheFigs) float64 { return f.resyncReq }))
	fmt.Fprintf(&md, "\nCPU is the client's: ours this process's getrusage (for events, less what the same sets cost with no cache open, %.0f µs per set), Curator's its process CPU clock. resync_ms runs from the restore to the last changed leaf heard; reconnect_ms to the client's RECONNECTED (go-zookeeper redials a second after it has tried every server); the difference is the read.\n", writerCPU)
	cacheMD = md.String()
	fmt.Printf("   medians: %s\n", strings.TrimPrefix(res.String(), "RESULT "))
	return res.String(), nil
}

// reads counts the read requests in s.
func reads(s engine.Stats) float64 { return float64(s.GetData + s.Children + s.Exists) }

// parallelDo runs fn on every item, n at a time, and returns the first error.
func parallelDo(n int, items []string, fn func(string) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		ch    = make(chan string)
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				if err := fn(it); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
	return first
}
