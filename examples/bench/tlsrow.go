package main

// The TLS row (issue 35, -which tls; not part of "all"): what TLS costs.
// It starts two local servers of the same installation and configuration
// (zktest.Launch), one plain and one TLS-only with client certificates
// (zktest.WithTLS: a secureClientPort on Netty, ssl.clientAuth=need, the
// x509 provider), and measures in the same run:
//
//   - cycle: an uncontended Lock+Unlock (mutex.Acquire and Release) on one
//     session, over TLS against plaintext, in interleaved chunks of -chunk
//     ops whose order rotates (as the uncontended scenario does), both
//     sides warmed up: ops/s and client CPU per op (getrusage of this
//     process while each side runs). Target: CPU over TLS at most
//     tlsCPUTarget times plaintext's.
//   - load: the initial load of a new cache of -tls-cache-nodes leaves
//     (fan-out 100, 100-byte values), package cache against Curator's
//     CuratorCache (BenchCurator.java's cacheload), each on the TLS server
//     (Curator with ZooKeeper's client TLS properties: the Netty client,
//     PEM key and trust stores) and on the plain one (a tree on each):
//     four sides, one load each to warm up, then in rounds whose order
//     rotates: nodes per second to "initialized" and client CPU per node
//     (Curator's: its process's CPU clock). Target: ours over TLS at
//     least tlsLoadTarget times Curator's over TLS, the median of the
//     rounds' ratios. Every client connects to its server directly (no
//     proxy).
//
// ZooKeeper serves TLS only on its Netty connection factory, so the TLS
// server runs Netty and the plain one ZooKeeper's default (NIO): the
// server side differs by more than TLS.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/par"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

const (
	tlsCPUTarget  = 1.3  // cycle: client CPU per op over TLS / plaintext, at most
	tlsLoadTarget = 10.0 // load over TLS: ours / Curator's nodes per second, at least
)

var tlsCacheLeaves int

func init() {
	scenarios = append(scenarios, "tls")
	notInAll["tls"] = true
	flag.IntVar(&tlsCacheLeaves, "tls-cache-nodes", 10000, "tls: leaves of the cache loaded over TLS (fan-out 100, 100-byte values)")
}

// tlsScenario runs the TLS row: its servers, the cycle, the load.
func (b *bench) tlsScenario(ctx context.Context) (string, bool, error) {
	if tlsCacheLeaves < 100 {
		return "", false, fmt.Errorf("-tls-cache-nodes %d: want 100 or more", tlsCacheLeaves)
	}
	plain, err := zktest.Launch(1, zktest.WithoutTLS())
	if err != nil {
		return "", false, err
	}
	defer plain.Close()
	secure, err := zktest.Launch(1, zktest.WithTLS())
	if err != nil {
		return "", false, err
	}
	defer secure.Close()
	fmt.Printf("\n== tls: TLS (client certificates) against plaintext, two local servers of ZooKeeper %s started alike, %d rounds\n",
		secure.Version(), b.f.rounds)
	cyc, err := b.tlsCycle(ctx, plain, secure)
	if err != nil {
		return "", false, fmt.Errorf("cycle: %w", err)
	}
	load, err := b.tlsLoad(ctx, plain, secure)
	if err != nil {
		return "", false, fmt.Errorf("load: %w", err)
	}
	return cyc.result + "\n" + load.result, cyc.ok && load.ok, nil
}

type tlsOutcome struct {
	result string
	ok     bool
}

// tlsSide is one side of the cycle: its loop and what it used.
type tlsSide struct {
	loop      func(n int) error
	time, cpu time.Duration
}

func (s *tlsSide) run(n int) error {
	start, cpu := time.Now(), cpuTime()
	if err := s.loop(n); err != nil {
		return err
	}
	s.time += time.Since(start)
	s.cpu += cpuTime() - cpu
	return nil
}

// lockLoop connects a client with opts and returns n × Lock+Unlock of a
// mutex at path on it, and the client's Close.
func lockLoop(ctx context.Context, servers []string, path string, timeout time.Duration, opts ...recipes.Option) (func(n int) error, func(), error) {
	c, err := recipes.Connect(ctx, servers, append(opts, recipes.WithSessionTimeout(timeout))...)
	if err != nil {
		return nil, nil, err
	}
	m, err := mutex.New(c, path, mutex.WithData(lockData))
	if err != nil {
		c.Close(context.Background())
		return nil, nil, err
	}
	loop := func(n int) error {
		for range n {
			if _, err := m.Acquire(ctx); err != nil {
				return err
			}
			if err := m.Release(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	return loop, func() { c.Close(context.Background()) }, nil
}

// tlsCycle measures Lock+Unlock over TLS against plaintext.
func (b *bench) tlsCycle(ctx context.Context, plain, secure *zktest.Cluster) (tlsOutcome, error) {
	f := b.f
	fmt.Printf("-- cycle: uncontended Lock+Unlock, one session each, %d ops per side per round in alternating chunks of %d\n", f.ops, f.chunk)
	pl, pclose, err := lockLoop(ctx, plain.Servers(), b.root+"/tls/plain", f.sessionTimeout)
	if err != nil {
		return tlsOutcome{}, err
	}
	defer pclose()
	sl, sclose, err := lockLoop(ctx, secure.Servers(), b.root+"/tls/secure", f.sessionTimeout, recipes.WithTLS(secure.ClientTLS()))
	if err != nil {
		return tlsOutcome{}, err
	}
	defer sclose()
	sides := []*tlsSide{{loop: sl}, {loop: pl}} // TLS, plaintext
	for _, s := range sides {
		if err := s.loop(f.warmup); err != nil {
			return tlsOutcome{}, err
		}
	}
	var tOps, pOps, tCPU, pCPU, opsRatio, cpuRatio []float64
	tw := table("round", "TLS ops/s", "plain ops/s", "TLS/plain", "TLS CPU µs/op", "plain CPU µs/op", "CPU TLS/plain")
	for r := range f.rounds {
		for _, s := range sides {
			s.time, s.cpu = 0, 0
		}
		for done, k := 0, 0; done < f.ops; k++ {
			n := min(f.chunk, f.ops-done)
			for i := range sides {
				if err := ctx.Err(); err != nil {
					return tlsOutcome{}, err
				}
				if err := sides[(r+k+i)%len(sides)].run(n); err != nil {
					return tlsOutcome{}, err
				}
			}
			done += n
		}
		to, po := float64(f.ops)/sides[0].time.Seconds(), float64(f.ops)/sides[1].time.Seconds()
		tc, pc := cpuPerOp(sides[0].cpu, f.ops), cpuPerOp(sides[1].cpu, f.ops)
		tOps, pOps, tCPU, pCPU = append(tOps, to), append(pOps, po), append(tCPU, tc), append(pCPU, pc)
		opsRatio, cpuRatio = append(opsRatio, to/po), append(cpuRatio, tc/pc)
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.3f\t%.0f\t%.0f\t%.3f\n", r+1, to, po, to/po, tc, pc, tc/pc)
	}
	cr := median(cpuRatio)
	ok := cr <= tlsCPUTarget
	fmt.Fprintf(tw, "median\t%.0f\t%.0f\t%.3f\t%.0f\t%.0f\t%.3f\n", median(tOps), median(pOps), median(opsRatio), median(tCPU), median(pCPU), cr)
	tw.Flush()
	fmt.Printf("client CPU per op TLS/plain %.3f (target <= %.2f: %s); throughput TLS/plain %.3f\n", cr, tlsCPUTarget, verdict(ok), median(opsRatio))
	addReport(reportRow{
		workload: "tls: cycle, client CPU per op over TLS against plaintext",
		ours:     fmt.Sprintf("%.0f µs/op", median(tCPU)), base: fmt.Sprintf("%.0f µs/op (plaintext)", median(pCPU)),
		ratio: cr, target: tlsCPUTarget, met: ok, hasTarget: true, lowerBetter: true,
		note: fmt.Sprintf("throughput %.0f against %.0f ops/s (%.3f)", median(tOps), median(pOps), median(opsRatio)),
	})
	return tlsOutcome{ok: ok, result: fmt.Sprintf("RESULT scenario=tls-cycle tls_ops=%.1f plain_ops=%.1f ops_ratio=%.4f cpu_us_per_op_tls=%.1f cpu_us_per_op_plain=%.1f cpu_ratio=%.4f cpu_target=%.2f cpu_pass=%t rounds=%d ops=%d",
		median(tOps), median(pOps), median(opsRatio), median(tCPU), median(pCPU), cr, tlsCPUTarget, ok, f.rounds, f.ops)}, nil
}

// curatorTLSArgs writes the Java client's PEM key store (the client's
// key and certificate in one file) into dir and returns the system
// properties that make ZooKeeper's Java client speak TLS to secure.
func curatorTLSArgs(dir string, secure *zktest.Cluster) ([]string, error) {
	ca, cert, key := secure.TLSFiles()
	var store []byte
	for _, f := range []string{key, cert} {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		store = append(store, data...)
	}
	ks := filepath.Join(dir, "client-keystore.pem")
	if err := os.WriteFile(ks, store, 0o600); err != nil {
		return nil, err
	}
	return []string{
		"-Dzookeeper.client.secure=true",
		"-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
		"-Dzookeeper.ssl.keyStore.location=" + ks, "-Dzookeeper.ssl.keyStore.type=PEM",
		"-Dzookeeper.ssl.trustStore.location=" + ca, "-Dzookeeper.ssl.trustStore.type=PEM",
	}, nil
}

// tlsTree makes the load's tree on admin's server and returns its root
// and the paths of its nodes.
func (b *bench) tlsTree(ctx context.Context, admin *recipes.Client) (string, []string, error) {
	root := fmt.Sprintf("%s/tls-cache%d", b.root, tlsCacheLeaves)
	if _, err := admin.CreateWithParents(ctx, root, cacheValue("root"), 0); err != nil {
		return "", nil, err
	}
	parents := (tlsCacheLeaves + 99) / 100
	var level, leaves []string
	for i := range parents {
		level = append(level, fmt.Sprintf("%s/p%03d", root, i))
	}
	for i := range tlsCacheLeaves {
		leaves = append(leaves, fmt.Sprintf("%s/p%03d/n%03d", root, i/100, i%100))
	}
	for _, ps := range [][]string{level, leaves} {
		if err := par.Each(32, ps, func(p string) error {
			_, err := admin.Create(ctx, p, cacheValue("init"), 0)
			return err
		}); err != nil {
			return "", nil, err
		}
	}
	return root, append(append([]string{root}, level...), leaves...), nil
}

// tlsLoadOurs loads a new cache of root on c: nodes per second to
// "initialized" and client CPU µs per node.
func tlsLoadOurs(ctx context.Context, c *recipes.Client, root string, total int) (rate, cpu float64, err error) {
	cc, err := cache.New(c, root)
	if err != nil {
		return 0, 0, err
	}
	defer cc.Close(context.Background())
	c0, t0 := cpuTime(), time.Now()
	if err := cc.Start(ctx); err != nil {
		return 0, 0, err
	}
	if err := cc.WaitReady(ctx); err != nil {
		return 0, 0, err
	}
	d, used := time.Since(t0), cpuTime()-c0
	if n := cc.Size(); n != total {
		return 0, 0, fmt.Errorf("ours held %d nodes of %d at initialized", n, total)
	}
	return float64(total) / d.Seconds(), float64(used.Microseconds()) / float64(total), nil
}

// tlsLoader is one side of the load: ours or Curator's, over TLS or
// plaintext, and its figures by round.
type tlsLoader struct {
	name        string
	load        func() (rate, cpu float64, err error)
	rates, cpus []float64
	floors      []float64 // ours: the raw read of the same nodes, nodes/s
}

// tlsLoad measures the cache load over TLS, ours against Curator's, and
// each over plaintext beside it (what TLS costs each).
func (b *bench) tlsLoad(ctx context.Context, plain, secure *zktest.Cluster) (tlsOutcome, error) {
	dir, err := os.MkdirTemp("", "zkrecipes-bench-tls-")
	if err != nil {
		return tlsOutcome{}, err
	}
	defer os.RemoveAll(dir)
	var loaders []*tlsLoader
	for _, s := range []struct {
		name string
		zkc  *zktest.Cluster
		opts []recipes.Option
	}{{"TLS", secure, []recipes.Option{recipes.WithTLS(secure.ClientTLS())}}, {"plain", plain, nil}} {
		c, err := recipes.Connect(ctx, s.zkc.Servers(), append(s.opts, recipes.WithSessionTimeout(b.f.sessionTimeout))...)
		if err != nil {
			return tlsOutcome{}, err
		}
		defer c.Close(context.Background())
		root, paths, err := b.tlsTree(ctx, c)
		if err != nil {
			return tlsOutcome{}, err
		}
		total := len(paths)
		ours := &tlsLoader{name: "ours " + s.name}
		ours.load = func() (float64, float64, error) {
			// The floor first: the same nodes read raw on the same link
			// (cachefloor.go), what no load can beat.
			d, _, err := rawFloor(ctx, c, paths)
			if err != nil {
				return 0, 0, err
			}
			ours.floors = append(ours.floors, float64(total)/d.Seconds())
			return tlsLoadOurs(ctx, c, root, total)
		}
		loaders = append(loaders, ours)
		cur, err := b.tlsCurator(filepath.Join(dir, s.name), s.zkc)
		if err != nil {
			return tlsOutcome{}, err
		}
		if cur != nil {
			defer cur.close()
			loaders = append(loaders, &tlsLoader{name: "Curator " + s.name, load: func() (float64, float64, error) { return tlsLoadCurator(cur, root, total) }})
		}
	}
	fmt.Printf("-- load: a new cache of %d nodes (%d leaves, fan-out 100, 100-byte values), ours against Curator's CuratorCache, over TLS and plaintext\n",
		1+(tlsCacheLeaves+99)/100+tlsCacheLeaves, tlsCacheLeaves)
	for _, l := range loaders { // warm-up: one load each (the JVMs' JIT), not counted
		if _, _, err := l.load(); err != nil {
			return tlsOutcome{}, fmt.Errorf("%s: %w", l.name, err)
		}
	}
	for r := range b.f.rounds {
		for i := range loaders {
			l := loaders[(r+i)%len(loaders)]
			rate, cpu, err := l.load()
			if err != nil {
				return tlsOutcome{}, fmt.Errorf("%s: %w", l.name, err)
			}
			l.rates, l.cpus = append(l.rates, rate), append(l.cpus, cpu)
		}
	}
	return b.tlsLoadReport(loaders), nil
}

// tlsLoadCurator has the Curator peer load a new CuratorCache of root.
func tlsLoadCurator(cur *peerProc, root string, total int) (rate, cpu float64, err error) {
	a, err := cur.do(6*time.Minute, "cacheload %s", root)
	if err != nil {
		return 0, 0, err
	}
	if a.ops != total {
		return 0, 0, fmt.Errorf("Curator held %d nodes of %d at initialized", a.ops, total)
	}
	return float64(a.ops) / a.seconds, a.cpu * 1e6 / float64(a.ops), nil
}

// tlsCurator starts a Curator peer for zkc (over TLS to a TLS cluster),
// its files in dir, or returns nil (and says why) when it cannot run.
func (b *bench) tlsCurator(dir string, zkc *zktest.Cluster) (*peerProc, error) {
	if !peersOn {
		fmt.Println("   Curator: not run: -peers=false")
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var args []string
	if zkc.TLS() {
		var err error
		if args, err = curatorTLSArgs(dir, zkc); err != nil {
			return nil, err
		}
	}
	p, version, err := startCuratorJVM(dir, zkc.Servers(), b.f.sessionTimeout, 1, args)
	switch {
	case errors.Is(err, interop.ErrUnavailable):
		fmt.Println("   Curator: not run:", err)
		return nil, nil
	case err != nil:
		return nil, err
	}
	if err := p.ready(); err != nil {
		p.close()
		return nil, err
	}
	how := "ZooKeeper's default client (NIO), plaintext"
	if zkc.TLS() {
		how = "ZooKeeper's Netty client over TLS (PEM stores)"
	}
	fmt.Printf("   Curator: %s, CuratorCache, %s\n", version, how)
	return p, nil
}

// tlsLoadReport prints the load's table and reports it: the target is
// ours over TLS against Curator's over TLS, round by round.
func (b *bench) tlsLoadReport(loaders []*tlsLoader) tlsOutcome {
	cols := []string{"round"}
	for _, l := range loaders {
		cols = append(cols, l.name+" nodes/s", "µs/node")
	}
	tw := table(append(cols, "ours/Curator over TLS")...)
	var ratios []float64
	for r := range b.f.rounds {
		row := fmt.Sprint(r + 1)
		for _, l := range loaders {
			row += fmt.Sprintf("\t%.0f\t%.1f", l.rates[r], l.cpus[r])
		}
		if len(loaders) == 4 { // ours TLS, Curator TLS, ours plain, Curator plain
			ratios = append(ratios, loaders[0].rates[r]/loaders[1].rates[r])
			row += fmt.Sprintf("\t%.1f", ratios[r])
		}
		fmt.Fprintln(tw, row)
	}
	row, kv := "median", ""
	for _, l := range loaders {
		row += fmt.Sprintf("\t%.0f\t%.1f", median(l.rates), median(l.cpus))
		key := strings.ToLower(strings.ReplaceAll(l.name, " ", "_"))
		kv += fmt.Sprintf(" %s_nodes_per_s=%.1f %s_cpu_us_per_node=%.2f", key, median(l.rates), key, median(l.cpus))
	}
	ratio := median(ratios)
	fmt.Fprintf(tw, "%s\t%.1f\n", row, ratio)
	tw.Flush()
	for _, l := range loaders {
		if len(l.floors) > 0 { // the warm-up's included
			fmt.Printf("%s: the floor, the same nodes read raw (64 per multiRead, 64 in flight), %.0f nodes/s (median)\n", l.name, median(l.floors))
			kv += fmt.Sprintf(" %s_floor_nodes_per_s=%.1f", strings.ToLower(strings.ReplaceAll(l.name, " ", "_")), median(l.floors))
		}
	}
	if len(loaders) != 4 {
		fmt.Println("load: no Curator side, no ratio")
		return tlsOutcome{ok: true, result: "RESULT scenario=tls-load curator=not-run" + kv}
	}
	ok := ratio >= tlsLoadTarget
	oursCost, curCost := median(loaders[2].rates)/median(loaders[0].rates), median(loaders[3].rates)/median(loaders[1].rates)
	fmt.Printf("load over TLS ours/Curator %.1f× (target >= %.0f×: %s); plaintext over TLS rate: ours %.2f, Curator %.2f\n",
		ratio, tlsLoadTarget, verdict(ok), oursCost, curCost)
	addReport(reportRow{
		workload: "tls: cache load over TLS, ours against Curator's",
		ours:     fmt.Sprintf("%.0f nodes/s", median(loaders[0].rates)), base: fmt.Sprintf("%.0f nodes/s (CuratorCache over TLS)", median(loaders[1].rates)),
		ratio: ratio, target: tlsLoadTarget, met: ok, hasTarget: true,
		note: fmt.Sprintf("client CPU per node %.1f against %.1f µs; over plaintext %.0f against %.0f nodes/s", median(loaders[0].cpus), median(loaders[1].cpus), median(loaders[2].rates), median(loaders[3].rates)),
	})
	return tlsOutcome{ok: ok, result: fmt.Sprintf("RESULT scenario=tls-load ratio=%.3f target=%.1f pass=%t rounds=%d leaves=%d%s", ratio, tlsLoadTarget, ok, b.f.rounds, tlsCacheLeaves, kv)}
}
