// Command bench measures the mutex of package mutex against go-zookeeper on
// one ZooKeeper server, the rwlock and the semaphore against the mutex, and
// the election's failover against the session timeout.
//
// It connects to -servers (default: ZK_SERVERS, "host:port,host:port"), or,
// when neither is set, starts a local server with zktest.Launch and stops it
// at exit. The scenarios, each run in alternating rounds so that machine
// noise hits both sides alike (the side that goes first alternates too):
//
//   - uncontended: one session runs Lock+Unlock on one path, -ops times per
//     round; the baseline is the same three requests made directly on a
//     *zk.Conn: Create (ephemeral-sequential, under a container parent),
//     Children(parent), Delete. Within a round the two sides take turns of
//     -chunk ops each. Target: ours/baseline >= 0.95. Each side's client
//     CPU per op (getrusage of this process, user+system, while that side
//     runs; steadier than wall time on a shared machine) is reported per
//     round too, with its own target: ours/baseline <= 1.10 (cpu_pass in
//     the RESULT line; -strict looks at the throughput ratio only). Ours
//     gets the run's ctx, which can be cancelled; a third side runs the
//     same loop with context.Background(), which nothing can cancel, to
//     show what honouring ctx costs (cpu_ratio_background, cpu_ctx_cost).
//     Both make their requests in the caller's goroutine, through the
//     client's Wire (see internal/engine/wirecall.go).
//   - contended: -sessions sessions (separate Clients, resp. separate
//     *zk.Conn) loop Lock;Unlock on one path for -duration per round; the
//     baseline is go-zookeeper's own zk.NewLock. Target: ours/zk.Lock >= 1.0.
//     The sessions are goroutines of this process (contended), or separate
//     processes, this binary re-run as workers (contended-procs; -procs
//     makes contended run that way too), which share nothing: the mutex
//     shares what it learns about deleted lock nodes among the sessions of
//     one process, which saves it a children list per hand-off when the
//     whole queue lives in one process. Both report client CPU per
//     acquisition (with processes, the workers' getrusage, summed).
//   - readers: -readers sessions (separate Clients of this process) loop
//     ReadLock().Lock;Unlock of one rwlock path for -duration per round;
//     no writer takes part, so they all hold together. Baseline: the
//     contended mutex on as many sessions, in the same alternating rounds
//     (as for mixed and semcontended, see workload.go); reported as read
//     acquisitions/s over the mutex's, with the wait p50/p99, client CPU
//     and requests per acquisition of both; no target.
//   - semaphore: one session runs Acquire+Close on one semaphore path
//     and, in alternating chunks of -chunk on the same session, the mutex's
//     Lock+Unlock on another path, -ops times each per round (the
//     uncontended scenario's style). Reported as the semaphore's rate over
//     the mutex's, with the semaphore's requests per acquire+release
//     (internal mutex create+children+delete, lease create+children+delete:
//     6, where the mutex needs 3); no target.
//   - peers (peers.go): where installed, Apache Curator 5.4 (a single-file
//     Java program on Debian's jars) and Kazoo 2.8 (/usr/bin/python3 with
//     python3-kazoo) run the same workloads as ours against the same server
//     in the same rounds, the side that goes first rotating: cycle
//     (uncontended Lock+Unlock on one session, -ops per round in turns of
//     -chunk), contend (-sessions sessions on one lock: acquisitions/s),
//     queue (10, 100, 1000 waiters over -sessions sessions queued on one
//     lock, then drained: µs per hand-off), rwlock (-readers readers
//     holding together; Kazoo's side is its own ReadLock, whose nodes
//     Curator does not know) and semaphore (-sessions sessions on one
//     semaphore of 4 leases: Curator's InterProcessSemaphoreV2, Kazoo's
//     Semaphore), counter (-sessions sessions incrementing one counter:
//     atomicval.Int64 against Curator's DistributedAtomicLong, optimistic
//     and promoted to a lock: increments/s, p99 and slowest call, failed
//     calls; target ours >= 2 x Curator and p99 < 20 ms) and doublebarrier
//     (10 members entering one double barrier together, then leaving
//     together: ms from the start to the last member's return, median of
//     10 cycles; see peeratomic.go; Curator only), discovery (1,000
//     instances registered one after another, ms for all; 10 service
//     caches seeing a new instance, ms to the last, median of 20;
//     getInstance of a ServiceProvider among 50 and 1,000 instances,
//     calls/s on one thread, target ours >= 10 x Curator; against
//     curator-x-discovery's ServiceDiscovery, ServiceCache and
//     ServiceProvider) and group (100 GroupMembers started at once, ms
//     until every member's membership holds all; 200 members, ms from one
//     member's node going with its expired session until every other has
//     dropped it; see peerdisc.go; Curator only). Each peer is one process (peers/BenchCurator.java,
//     peers/bench_kazoo.py, embedded) started once per run with its
//     sessions connected (same -session-timeout) and warmed up before any
//     clock starts, then given one stdin command per turn; its CPU time is
//     read from its process CPU clock around each command (Linux; else its
//     own figure). Reported: each side's figure and client CPU per op, and
//     ours/peer (for queue, the peer's time per hand-off over ours);
//     target for contend: ours >= 1.5 x Curator. -peers=false skips the
//     peers, -peer-workloads picks workloads (qdepth, a queue's consumers
//     with a backlog of each of -queue-depths items, only when named: see
//     qdepth.go), and a peer that is not
//     installed is skipped with a line saying why. With -md the figures go
//     to a peers table of the report.
//   - cache (cache.go): package cache against Curator's CuratorCache
//     (peers/BenchCurator.java) on one tree of -cache-nodes leaves (10000;
//     "10000,100000" runs both of issue 26's sizes) under fan-out 100,
//     each side's session through a proxy of its own, in alternating
//     rounds: time to "initialized", the nodes there then, client CPU and
//     heap bytes per node, requests; change-to-event latency p50/p99 at
//     -cache-rate (1,000) sets/s and client CPU per event; the resync after
//     both links are black-holed and restored (the reconnect, the read,
//     its requests); server watches per cache. Targets (pass= in its
//     RESULT line, not counted by -strict): p99 <= 10 ms, load and resync
//     read >= 3x Curator's rate, heap <= 0.5x Curator's.
//   - scale (scale.go, scalecache.go; only when named): the discovery,
//     group, cache and waiter rows above at 1x and 10x their size
//     (-scale-factors; 1,000 instances, 100 members, 100,000 leaves and
//     1,000 waiters at 1x), ours and Curator's in the same run, and how
//     each measure grows from 1x to 10x (linear: 10 for a total, 1 per
//     operation); the cache's two sides in the same heap (-scale-heap),
//     with Curator's largest load in it searched for where it fails.
//   - mixed: -mixed-readers reading and -mixed-writers writing sessions on
//     one rwlock path, against the contended mutex on as many sessions:
//     read and write acquisitions/s, the writers' wait p50/p99, and
//     (reads+writes)/s over the mutex's; exclusion checked; no target.
//   - semcontended: -sessions sessions loop Acquire;Close on one
//     semaphore of 4 leases, against the contended mutex on as many
//     sessions: acquisitions/s, wait p50/p99, requests per acquisition;
//     then a round with each lease held 20ms, which must fill all 4; more
//     than 4 holders at once exits with status 1; no target.
//   - failover: 3 election participants, each an OS process (this binary
//     re-run) connected through a zktest.Proxy of its own; the leader's
//     term ends gracefully, by SIGKILL, or by a black-holed connection,
//     -failovers times each, for election.Latch and election.Selector.
//     Reported: time to the next leader's term, median and max, over the
//     negotiated session timeout.
//
// Each scenario reports the median of its per-round ratios, the requests
// our Clients sent per acquisition (Client.Stats), and, when the server
// answers the "srvr" four-letter word, the packets the server received per
// acquisition on each side (pings included). The last lines are machine
// readable:
//
//	RESULT scenario=uncontended ours_ops=... base_ops=... ratio=... ... cpu_us_per_op_ours=... cpu_us_per_op_base=... cpu_ratio=... ...
//	RESULT scenario=contended ours_ops=... base_ops=... ratio=... ...
//	RESULT scenario=readers ours_ops=... mutex_contended_ops=... readers_per_mutex=... ...
//	RESULT scenario=semaphore sem_ops=... mutex_ops=... sem_per_mutex=... ...
//	RESULT scenario=mixed readers=... writers=... read_ops=... write_ops=... mutex_ops=... ratio=... write_p50_ms=... write_p99_ms=... ...
//	RESULT scenario=semcontended sessions=... max_leases=4 sem_ops=... mutex_ops=... ratio=... p50_ms=... p99_ms=... ... max_held=...
//	RESULT scenario=failover recipe=latch|selector way=graceful|kill|blackhole failover_median_ms=... failover_max_ms=... session_timeout_ms=... median_per_timeout=... ...
//	RESULT scenario=cache nodes=... load_ms_ours=... load_ms_curator=... cpu_us_per_node_ours=... lat_p50_ms_ours=... lat_p99_ms_ours=... resync_ms_ours=... ...
//	RESULT scenario=peers workload=cycle|contend|queue10|queue100|queue1000|rwlock|semaphore|counter|counter-promoted|doublebarrier-enter|doublebarrier-leave|workqueue-dq|workqueue-simple|discovery-register|discovery-see|discovery-getinstance-50|discovery-getinstance-1000|group|group-expiry unit=ops_per_s|us_per_handoff|ms ours=... curator=... ours_per_curator=... kazoo=... ours_per_kazoo=... cpu_us_per_op_ours=... ...
//	RESULT scenario=peers workload=qdepth-dq|qdepth-simple depth=... unit=items_per_s ours=...|fails cpu_us_per_item_ours=... curator=...|fails cpu_us_per_item_curator=...
//	RESULT scenario=scale row=discovery|group|cache|waiters measure=... unit=... sizes=1000,10000 ours=...,... curator=...,... growth_ours=... growth_curator=... linear=10|1 cpu_ours=...,... cpu_curator=...,...
//
// Both sides use the same session timeout (-session-timeout). Mutual
// exclusion is checked while the contended rounds run. Any error, or a
// violation of mutual exclusion, exits with status 1; -strict also exits
// with status 3 when a median ratio misses its target.
package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	contention "github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/metric"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	_ "github.com/zkrecipes/zkrecipes/recipes/zktest/zkdocker" // Launch may start a container
)

const (
	uncontendedTarget = 0.95
	contendedTarget   = 1.0
	// uncontendedCPUTarget bounds our client CPU per Lock+Unlock against
	// the baseline's per op (getrusage of this process while each side
	// runs: steadier than wall time on a shared machine).
	uncontendedCPUTarget = 1.10
)

// lockData is the data of every lock node, on both sides.
var lockData = []byte("zkrecipes-bench")

var acl = zk.WorldACL(zk.PermAll)

type flags struct {
	servers        string
	rounds         int
	ops            int
	chunk          int
	warmup         int
	duration       time.Duration
	sessions       int
	readers        int
	which          string
	sessionTimeout time.Duration
	strict         bool
	procs          bool
	cpuprofile     string
	metrics        bool
}

func main() {
	if kind := os.Getenv(envWorker); kind != "" {
		if err := workerMain(kind); err != nil {
			fmt.Fprintf(os.Stderr, "bench worker (%s): %v\n", kind, err)
			os.Exit(1)
		}
		return
	}
	var f flags
	flag.StringVar(&f.servers, "servers", os.Getenv("ZK_SERVERS"), "ZooKeeper servers, host:port[,host:port...] (default $ZK_SERVERS; empty: start a local server)")
	flag.IntVar(&f.rounds, "rounds", 5, "alternating rounds per scenario")
	flag.IntVar(&f.ops, "ops", 1000, "uncontended and semaphore: operations per side per round")
	flag.IntVar(&f.chunk, "chunk", 50, "uncontended and semaphore: ops per turn; the two sides take turns within a round")
	flag.IntVar(&f.warmup, "warmup", 200, "uncontended and semaphore: operations per side before the first round (also warms the server up)")
	flag.DurationVar(&f.duration, "duration", 5*time.Second, "contended and readers: time per side per round")
	flag.IntVar(&f.sessions, "sessions", 16, "contended: number of sessions contending")
	flag.IntVar(&f.readers, "readers", 32, "readers: number of reading sessions")
	flag.StringVar(&f.which, "which", "all", "scenarios to run: all, or a comma-separated list of uncontended, contended, contended-procs, readers, semaphore, mixed, semcontended, failover, peers, cache, keys, local, herd, queue, held, tls, observers, scale (they run in that order; tls, TLS against plaintext on servers of its own, observers, caches on an observer against on voters on an ensemble of its own, and scale, four rows at 1x and 10x their size beside Curator, only when named)")
	flag.DurationVar(&f.sessionTimeout, "session-timeout", 4*time.Second, "session timeout requested by both sides")
	flag.BoolVar(&f.procs, "procs", false, "contended: run every session in an OS process of its own (this binary re-run as a worker) instead of a goroutine, so that sessions share no state, as with separate services")
	flag.StringVar(&f.cpuprofile, "cpuprofile", "", "write a CPU profile of this process to `file`")
	flag.BoolVar(&f.strict, "strict", false, "exit with status 3 when a median ratio misses its target")
	flag.BoolVar(&f.metrics, "metrics", false, "uncontended: also run Lock+Unlock on a client with recipes.WithMetrics (Prometheus, metrics/prommetrics) as a third side of the same rounds, and report its client CPU per op against ours without metrics")
	flag.Parse()

	code, err := run(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: error:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(f flags) (int, error) {
	switch {
	case f.rounds < 1:
		return 0, fmt.Errorf("-rounds must be at least 1")
	case f.ops < 1:
		return 0, fmt.Errorf("-ops must be at least 1")
	case f.chunk < 1:
		return 0, fmt.Errorf("-chunk must be at least 1")
	case f.warmup < 0:
		return 0, fmt.Errorf("-warmup must not be negative")
	case f.duration <= 0:
		return 0, fmt.Errorf("-duration must be positive")
	case f.sessions < 2:
		return 0, fmt.Errorf("-sessions must be at least 2")
	case f.readers < 1:
		return 0, fmt.Errorf("-readers must be at least 1")
	}
	which, err := parseWhich(f.which)
	if err != nil {
		return 0, err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return 0, err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return 0, err
		}
		defer pprof.StopCPUProfile()
	}

	var zkOpts []zktest.Option
	if which["scale"] {
		zkOpts = append(zkOpts, zktest.WithHeap(scaleServerMB)) // a million nodes
	}
	servers, where, cleanup, err := zookeeper(f.servers, zkOpts...)
	if err != nil {
		return 0, err
	}
	defer cleanup()

	b := &bench{f: f, servers: servers, root: "/zkrecipes-bench/" + zkpath.NewUUID()[:8]}
	fmt.Printf("zkrecipes benchmark: %s, session timeout %v, %s %s/%s, GOMAXPROCS=%d\n",
		where, f.sessionTimeout, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	fmt.Printf("paths under %s\n", b.root)
	defer b.cleanup()

	var results []string
	pass := true
	if which["uncontended"] {
		line, ok, err := b.uncontended(ctx)
		if err != nil {
			return 0, fmt.Errorf("uncontended: %w", err)
		}
		results, pass = append(results, line), pass && ok
	}
	for _, sc := range []struct {
		name  string
		procs bool
	}{{"contended", f.procs}, {"contended-procs", true}} {
		if !which[sc.name] || sc.name == "contended-procs" && f.procs {
			continue // with -procs, contended already ran one process per session
		}
		line, ok, err := b.contended(ctx, sc.procs)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", sc.name, err)
		}
		results, pass = append(results, line), pass && ok
	}
	if which["readers"] {
		line, err := b.readers(ctx)
		if err != nil {
			return 0, fmt.Errorf("readers: %w", err)
		}
		results = append(results, line)
	}
	if which["semaphore"] {
		line, err := b.semaphoreScenario(ctx)
		if err != nil {
			return 0, fmt.Errorf("semaphore: %w", err)
		}
		results = append(results, line)
	}
	for _, sc := range []struct {
		name string
		run  func(context.Context) (string, error)
	}{{"mixed", b.mixed}, {"semcontended", b.semContended}, {"failover", b.failover}} { // mixed.go, semcontended.go, election.go
		if which[sc.name] {
			line, err := sc.run(ctx)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", sc.name, err)
			}
			results = append(results, line)
		}
	}
	if which["peers"] {
		lines, ok, err := b.peers(ctx) // Curator and Kazoo: peers.go
		if err != nil {
			return 0, fmt.Errorf("peers: %w", err)
		}
		results, pass = append(results, lines...), pass && ok
	}
	if which["cache"] {
		line, err := b.cacheScenario(ctx) // package cache against Curator's CuratorCache: cache.go
		if err != nil {
			return 0, fmt.Errorf("cache: %w", err)
		}
		results = append(results, line)
	}
	extra, ok, err := b.perfScenarios(ctx, which) // keys, local, herd, queue, held: perf.go; tls: tlsrow.go; observers: observerrow.go
	if err != nil {
		return 0, err
	}
	results, pass = append(results, extra...), pass && ok
	if err := b.peersMarkdown(); err != nil { // -md when only the peers have figures
		return 0, err
	}
	fmt.Println()
	for _, r := range results {
		fmt.Println(r)
	}
	if f.strict && !pass {
		return 3, nil
	}
	return 0, nil
}

type bench struct {
	f       flags
	servers []string
	root    string
}

// ---------------------------------------------------------------- uncontended

func (b *bench) uncontended(ctx context.Context) (string, bool, error) {
	f := b.f
	fmt.Printf("\n== uncontended: Lock+Unlock on one path, one session, %d ops per side per round, in alternating chunks of %d\n", f.ops, f.chunk)
	fmt.Println("   baseline: go-zookeeper Create(ephemeral-sequential, container parent) + Children + Delete")

	c, err := recipes.Connect(context.Background(), b.servers, recipes.WithSessionTimeout(f.sessionTimeout))
	if err != nil {
		return "", false, err
	}
	defer c.Close(context.Background())
	m, err := mutex.New(c, b.root+"/uncontended/ours", mutex.WithData(lockData))
	if err != nil {
		return "", false, err
	}
	raw, err := dialRaw(b.servers, f.sessionTimeout)
	if err != nil {
		return "", false, err
	}
	defer raw.Close()
	base := &rawLoop{conn: raw.conn, parent: b.root + "/uncontended/base"}
	var met *metricsSide
	if f.metrics {
		if met, err = newMetricsSide(ctx, b.servers, f.sessionTimeout, b.root+"/uncontended/metrics"); err != nil {
			return "", false, err
		}
		defer met.close()
	}

	// ours runs with the run's ctx, which can be cancelled: Lock and
	// Unlock must return when it ends even while a request is in flight.
	// The client's Wire writes each request from the caller's goroutine
	// and hands it the reply, so the caller waits for the reply or for ctx
	// without a goroutine hand-off (see internal/engine/wirecall.go). The
	// same loop with context.Background(), which nothing can cancel (as
	// nothing can cancel the raw loop's requests), is a side of its own:
	// what honouring ctx costs is the difference.
	loop := func(ctx context.Context, n int) error {
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
	oursLoop := func(n int) error { return loop(ctx, n) }
	bgLoop := func(n int) error { return loop(context.Background(), n) }
	if f.warmup > 0 {
		if err := oursLoop(f.warmup); err != nil {
			return "", false, fmt.Errorf("ours: %w", err)
		}
		if err := bgLoop(f.warmup); err != nil {
			return "", false, fmt.Errorf("ours with context.Background(): %w", err)
		}
		if err := base.run(f.warmup); err != nil {
			return "", false, fmt.Errorf("baseline: %w", err)
		}
		if met != nil {
			if err := met.loop(f.warmup); err != nil {
				return "", false, fmt.Errorf("ours with metrics: %w", err)
			}
		}
	}

	var (
		ours, bases, ratios []float64
		oursReq             metric.RequestCounts
		oursOps             int
		basePkts, oursPkts  pktCount
		// client CPU µs per op of each side, and their ratio, per round
		oursCPUs, baseCPUs, cpuRatios []float64
		// ours with context.Background(): CPU µs per op, over the raw
		// loop's, and ours (cancellable ctx) over it, per round
		bgCPUs, bgRatios, ctxCosts []float64
	)
	tw := table("round", "ours ops/s", "base ops/s", "ours/base", "ours CPU µs/op", "base CPU µs/op", "CPU ours/base")
	for r := range f.rounds {
		// The round's ops run in chunks, ours and the baseline taking
		// turns (and turns at going first), so that noise lasting more than
		// a few milliseconds hits both sides alike.
		var (
			oursTime, baseTime, metTime time.Duration
			oursCPU, baseCPU, metCPU    time.Duration // this process's CPU time while each side ran
			bgCPU                       time.Duration
		)
		sides := []func(n int) error{
			func(n int) error {
				before, pk := (*engine.Client)(c).Stats(), b.packets()
				start, cpu := time.Now(), cpuTime()
				if err := oursLoop(n); err != nil {
					return fmt.Errorf("ours: %w", err)
				}
				oursTime += time.Since(start)
				oursCPU += cpuTime() - cpu
				oursReq = addStats(oursReq, (*engine.Client)(c).Stats().Sub(before))
				oursOps += n
				oursPkts.add(pk, b.packets(), n)
				return nil
			},
			func(n int) error {
				pk := b.packets()
				start, cpu := time.Now(), cpuTime()
				if err := base.run(n); err != nil {
					return fmt.Errorf("baseline: %w", err)
				}
				baseTime += time.Since(start)
				baseCPU += cpuTime() - cpu
				basePkts.add(pk, b.packets(), n)
				return nil
			},
			func(n int) error {
				cpu := cpuTime()
				if err := bgLoop(n); err != nil {
					return fmt.Errorf("ours with context.Background(): %w", err)
				}
				bgCPU += cpuTime() - cpu
				return nil
			},
		}
		if met != nil {
			sides = append(sides, func(n int) error {
				start, cpu := time.Now(), cpuTime()
				if err := met.loop(n); err != nil {
					return fmt.Errorf("ours with metrics: %w", err)
				}
				metTime += time.Since(start)
				metCPU += cpuTime() - cpu
				return nil
			})
		}
		for done, k := 0, 0; done < f.ops; k++ {
			n := min(f.chunk, f.ops-done)
			first := (r + k) % len(sides)
			for i := range sides {
				side := sides[(first+i)%len(sides)]
				if err := ctx.Err(); err != nil {
					return "", false, err
				}
				if err := side(n); err != nil {
					return "", false, err
				}
			}
			done += n
		}
		or, br := float64(f.ops)/oursTime.Seconds(), float64(f.ops)/baseTime.Seconds()
		ours, bases, ratios = append(ours, or), append(bases, br), append(ratios, or/br)
		oc, bc := cpuPerOp(oursCPU, f.ops), cpuPerOp(baseCPU, f.ops)
		oursCPUs, baseCPUs, cpuRatios = append(oursCPUs, oc), append(baseCPUs, bc), append(cpuRatios, oc/bc)
		gc := cpuPerOp(bgCPU, f.ops)
		bgCPUs, bgRatios, ctxCosts = append(bgCPUs, gc), append(bgRatios, gc/bc), append(ctxCosts, oc/gc)
		if met != nil {
			met.round(float64(f.ops)/metTime.Seconds(), cpuPerOp(metCPU, f.ops), or, oc)
		}
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.3f\t%.0f\t%.0f\t%.3f\n", r+1, or, br, or/br, oc, bc, oc/bc)
	}
	ratio := median(ratios)
	ok := ratio >= uncontendedTarget
	cpuRatio := median(cpuRatios)
	cpuOK := cpuRatio <= uncontendedCPUTarget
	fmt.Fprintf(tw, "median\t%.0f\t%.0f\t%.3f\t%.0f\t%.0f\t%.3f\n",
		median(ours), median(bases), ratio, median(oursCPUs), median(baseCPUs), cpuRatio)
	tw.Flush()
	fmt.Printf("ours/base throughput %.3f (target >= %.2f: %s); client CPU per op ours/base %.3f (target <= %.2f: %s)\n",
		ratio, uncontendedTarget, verdict(ok), cpuRatio, uncontendedCPUTarget, verdict(cpuOK))
	per := perOp(oursReq, oursOps)
	fmt.Printf("ours, requests per Lock+Unlock: %s\n", per)
	fmt.Printf("server packets received per op (pings included): ours %s, baseline %s\n", oursPkts, basePkts)
	fmt.Printf("client CPU per op (this process, user+system, median over rounds): ours %.0fµs, baseline %.0fµs\n",
		median(oursCPUs), median(baseCPUs))
	fmt.Printf("ours with context.Background(), the same rounds: CPU %.0fµs/op, %.3f of the raw loop's; ours (cancellable ctx) over it %.3f\n",
		median(bgCPUs), median(bgRatios), median(ctxCosts))

	addReport(reportRow{
		workload: "cycle: uncontended Lock+Unlock, one session",
		ours:     fmt.Sprintf("%.0f ops/s", median(ours)), base: fmt.Sprintf("%.0f ops/s (raw create+children+delete)", median(bases)),
		ratio: ratio, target: uncontendedTarget, met: ok, hasTarget: true,
		note: fmt.Sprintf("requests/op %.2f", per.total()),
	}, reportRow{
		workload: "cycle: client CPU per op, ours over the raw loop",
		ours:     fmt.Sprintf("%.0f µs/op", median(oursCPUs)), base: fmt.Sprintf("%.0f µs/op", median(baseCPUs)),
		ratio: cpuRatio, target: uncontendedCPUTarget, met: cpuOK, hasTarget: true, lowerBetter: true,
		note: fmt.Sprintf("getrusage of this process while each side runs; the ctx is cancellable, and Lock and Unlock return when it ends even while a request is in flight: the client's Wire makes each request in the caller's goroutine, who waits for the reply or for ctx; the same loop with context.Background() in the same rounds costs %.3f of the raw loop (see BenchmarkLockUnlock in package mutex)", median(bgRatios)),
	}, reportRow{
		workload: "cycle: client CPU per op, a cancellable ctx over context.Background()",
		ours:     fmt.Sprintf("%.0f µs/op", median(oursCPUs)), base: fmt.Sprintf("%.0f µs/op", median(bgCPUs)),
		ratio: median(ctxCosts), lowerBetter: true,
		note: "what honouring ctx while a request is in flight costs: go-zookeeper's calls block until the reply and cannot be abandoned, so the client's Wire writes each watch-free request itself, from the caller's goroutine, and hands it the reply; the caller waits for that or for ctx",
	})
	line := fmt.Sprintf("RESULT scenario=uncontended ours_ops=%.1f base_ops=%.1f ratio=%.4f target=%.2f pass=%t rounds=%d ops=%d %s server_pkts_per_op_ours=%s server_pkts_per_op_base=%s cpu_us_per_op_ours=%.1f cpu_us_per_op_base=%.1f cpu_ratio=%.4f cpu_target=%.2f cpu_pass=%t cpu_us_per_op_background=%.1f cpu_ratio_background=%.4f cpu_ctx_cost=%.4f",
		median(ours), median(bases), ratio, uncontendedTarget, ok, f.rounds, f.ops, per.kv("op"), oursPkts.kv(), basePkts.kv(),
		median(oursCPUs), median(baseCPUs), cpuRatio, uncontendedCPUTarget, cpuOK, median(bgCPUs), median(bgRatios), median(ctxCosts))
	if met != nil {
		line += "\n" + met.report()
	}
	return line, ok, nil
}

// cpuPerOp returns CPU time per op in microseconds.
func cpuPerOp(d time.Duration, ops int) float64 {
	return float64(d.Nanoseconds()) / 1e3 / float64(ops)
}

// rawLoop is the uncontended baseline: the three requests an uncontended
// lock needs, made directly on a *zk.Conn, with nodes named as ours are
// and the parent a container as ours is.
type rawLoop struct {
	conn   *zk.Conn
	parent string
}

func (l *rawLoop) run(n int) error {
	for range n {
		prefix := l.parent + "/" + zkpath.ProtectedPrefix + zkpath.NewUUID() + "-" + mutex.LockName
		var (
			node string
			err  error
		)
		for {
			node, err = l.conn.Create(prefix, lockData, zk.FlagEphemeral|zk.FlagSequence, acl)
			if !errors.Is(err, recipes.ErrNoNode) {
				break
			}
			// The server reaps an empty container parent; make it again.
			if err := ensureContainers(l.conn, l.parent); err != nil {
				return err
			}
		}
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		kids, _, err := l.conn.Children(l.parent)
		if err != nil {
			return fmt.Errorf("children: %w", err)
		}
		name := node[len(l.parent)+1:]
		lowest := ""
		for _, k := range kids {
			if lowest == "" || contention.SortKey(k, mutex.LockName) < contention.SortKey(lowest, mutex.LockName) {
				lowest = k
			}
		}
		if lowest != name {
			return fmt.Errorf("uncontended baseline: %s is not the lowest of %v", name, kids)
		}
		if err := l.conn.Delete(node, -1); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
	}
	return nil
}

func ensureContainers(conn *zk.Conn, path string) error {
	if path == "/" || path == "" {
		return nil
	}
	for {
		_, err := conn.CreateContainer(path, nil, zk.FlagContainer, acl)
		switch {
		case err == nil || errors.Is(err, recipes.ErrNodeExists):
			return nil
		case errors.Is(err, recipes.ErrNoNode):
			if err := ensureContainers(conn, path[:max(strings.LastIndex(path, "/"), 1)]); err != nil {
				return err
			}
		default:
			return fmt.Errorf("create container %s: %w", path, err)
		}
	}
}

// ------------------------------------------------------------------ contended

func (b *bench) contended(ctx context.Context, procs bool) (string, bool, error) {
	f := b.f
	where := "goroutines of this process, each with its own session"
	if procs {
		where = "separate OS processes, one session each"
	}
	fmt.Printf("\n== contended: %d sessions (%s) loop Lock;Unlock on one path, %v per side per round\n", f.sessions, where, f.duration)
	fmt.Println("   baseline: go-zookeeper zk.NewLock(conn, path, acl).Lock/Unlock on as many sessions")

	oursPath, zkPath := fmt.Sprintf("%s/contended-%t/ours", b.root, procs), fmt.Sprintf("%s/contended-%t/zklock", b.root, procs)
	var ourSide, zkSide side
	defer func() {
		for _, s := range []side{ourSide, zkSide} {
			if s != nil {
				s.close()
			}
		}
	}()
	var err error
	if procs {
		if ourSide, err = startProcs(f.sessions, "ours", b.servers, oursPath, f.sessionTimeout); err != nil {
			return "", false, err
		}
		if zkSide, err = startProcs(f.sessions, "zklock", b.servers, zkPath, f.sessionTimeout); err != nil {
			return "", false, err
		}
	} else {
		if ourSide, err = newOursInProc(ctx, f.sessions, b.servers, oursPath, f.sessionTimeout); err != nil {
			return "", false, err
		}
		if zkSide, err = newZKInProc(f.sessions, b.servers, zkPath, f.sessionTimeout); err != nil {
			return "", false, err
		}
	}

	// Warm up both sides (sessions, parents, the server's JIT) uncounted.
	warm := min(f.duration, time.Second)
	for _, s := range []side{ourSide, zkSide} {
		if _, err := s.round(time.Now().Add(warm)); err != nil {
			return "", false, fmt.Errorf("warm-up: %w", err)
		}
	}

	var (
		ours, bases, ratios []float64
		oursReq             metric.RequestCounts
		oursAcq             int
		oursPkts, basePkts  pktCount
		oursCPU, baseCPU    []float64 // client CPU µs per acquisition, per round
	)
	tw := table("round", "ours acq/s", "zk.Lock acq/s", "ours/zk.Lock", "order")
	for r := range f.rounds {
		var or, br float64
		order, err := alternate(ctx, r, "ours",
			func() error {
				pk := b.packets()
				res, err := ourSide.round(time.Now().Add(f.duration))
				if err != nil {
					return fmt.Errorf("ours: %w", err)
				}
				or = float64(res.window) / f.duration.Seconds()
				oursReq = addStats(oursReq, res.stats)
				oursAcq += res.total
				oursPkts.add(pk, b.packets(), res.total)
				oursCPU = append(oursCPU, cpuPerOp(res.cpu, max(res.total, 1)))
				return nil
			},
			"zk.Lock", func() error {
				pk := b.packets()
				res, err := zkSide.round(time.Now().Add(f.duration))
				if err != nil {
					return fmt.Errorf("zk.Lock: %w", err)
				}
				br = float64(res.window) / f.duration.Seconds()
				basePkts.add(pk, b.packets(), res.total)
				baseCPU = append(baseCPU, cpuPerOp(res.cpu, max(res.total, 1)))
				return nil
			},
		)
		if err != nil {
			return "", false, err
		}
		if br == 0 {
			return "", false, fmt.Errorf("zk.Lock made no acquisition in %v", f.duration)
		}
		ours, bases, ratios = append(ours, or), append(bases, br), append(ratios, or/br)
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.3f\t%s\n", r+1, or, br, or/br, order)
	}
	ratio := median(ratios)
	ok := ratio >= contendedTarget
	fmt.Fprintf(tw, "median\t%.0f\t%.0f\t%.3f\ttarget >= %.2f: %s\n", median(ours), median(bases), ratio, contendedTarget, verdict(ok))
	tw.Flush()
	per := perOp(oursReq, oursAcq)
	fmt.Printf("ours, requests per acquisition (sum over %d clients): %s\n", f.sessions, per)
	fmt.Printf("server packets received per acquisition (pings included): ours %s, zk.Lock %s\n", oursPkts, basePkts)
	fmt.Printf("client CPU per acquisition (median over rounds; %s): ours %.0fµs, zk.Lock %.0fµs\n", cpuWhose(procs), median(oursCPU), median(baseCPU))
	fmt.Println("mutual exclusion held on both sides")

	how := "one process"
	if procs {
		how = "one process each"
	}
	addReport(reportRow{
		workload: fmt.Sprintf("contend: %d sessions on one path, %s", f.sessions, how),
		ours:     fmt.Sprintf("%.0f acq/s", median(ours)), base: fmt.Sprintf("%.0f acq/s (zk.Lock, as many sessions)", median(bases)),
		ratio: ratio, target: contendedTarget, met: ok, hasTarget: true,
		note: fmt.Sprintf("requests/acq %.2f; server packets/acq ours %s, zk.Lock %s; client CPU µs/acq ours %.0f, zk.Lock %.0f (%s)",
			per.total(), oursPkts, basePkts, median(oursCPU), median(baseCPU), cpuWhose(procs)),
	})
	line := fmt.Sprintf("RESULT scenario=contended ours_ops=%.1f base_ops=%.1f ratio=%.4f target=%.2f pass=%t rounds=%d sessions=%d procs=%t duration=%v %s server_pkts_per_acq_ours=%s server_pkts_per_acq_base=%s cpu_us_per_acq_ours=%.1f cpu_us_per_acq_base=%.1f",
		median(ours), median(bases), ratio, contendedTarget, ok, f.rounds, f.sessions, procs, f.duration, per.kv("acq"), oursPkts.kv(), basePkts.kv(), median(oursCPU), median(baseCPU))
	return line, ok, nil
}

// cpuWhose says whose CPU time the contended figures count.
func cpuWhose(procs bool) string {
	if procs {
		return "the worker processes' getrusage, summed"
	}
	return "this process's getrusage while the side runs"
}

// side is one contender population of the contended scenario.
type side interface {
	// round makes every session loop Lock;Unlock until deadline.
	round(deadline time.Time) (roundResult, error)
	close()
}

type roundResult struct {
	window int                  // acquisitions made before the deadline
	total  int                  // all acquisitions (waiters queued at the deadline finish their turn)
	stats  metric.RequestCounts // requests our Clients sent (zero for zk.Lock)
	cpu    time.Duration        // the side's client CPU time in the round (with -procs: the workers'; else this process's)
}

// inProc is a side whose sessions are goroutines of this process.
type inProc struct {
	lock, unlock func(i int) error
	n            int
	stats        func() metric.RequestCounts
	closers      []func()
}

func (s *inProc) round(deadline time.Time) (roundResult, error) {
	before, cpu := s.stats(), cpuTime()
	window, total, err := contend(s.n, deadline, s.lock, s.unlock)
	return roundResult{window: window, total: total, stats: s.stats().Sub(before), cpu: cpuTime() - cpu}, err
}

func (s *inProc) close() {
	for _, c := range s.closers {
		c()
	}
}

func newOursInProc(ctx context.Context, n int, servers []string, path string, timeout time.Duration) (side, error) {
	s := &inProc{n: n}
	var (
		clients []*recipes.Client
		locks   []*mutex.Mutex
	)
	for range n {
		c, err := recipes.Connect(context.Background(), servers, recipes.WithSessionTimeout(timeout))
		if err != nil {
			s.close()
			return nil, err
		}
		clients = append(clients, c)
		s.closers = append(s.closers, func() { c.Close(context.Background()) })
		m, err := mutex.New(c, path, mutex.WithData(lockData))
		if err != nil {
			s.close()
			return nil, err
		}
		locks = append(locks, m)
	}
	s.lock = func(i int) error { _, err := locks[i].Acquire(ctx); return err }
	s.unlock = func(i int) error { return locks[i].Release(ctx) }
	s.stats = func() metric.RequestCounts {
		var sum metric.RequestCounts
		for _, c := range clients {
			sum = addStats(sum, (*engine.Client)(c).Stats())
		}
		return sum
	}
	return s, nil
}

func newZKInProc(n int, servers []string, path string, timeout time.Duration) (side, error) {
	s := &inProc{n: n, stats: func() metric.RequestCounts { return metric.RequestCounts{} }}
	var locks []*zk.Lock
	for range n {
		r, err := dialRaw(servers, timeout)
		if err != nil {
			s.close()
			return nil, err
		}
		s.closers = append(s.closers, r.Close)
		locks = append(locks, zk.NewLock(r.conn, path, acl))
	}
	s.lock = func(i int) error { return locks[i].LockWithData(lockData) }
	s.unlock = func(i int) error { return locks[i].Unlock() }
	return s, nil
}

// contend runs n workers that loop lock(i); unlock(i) until deadline. It
// returns the acquisitions made before the deadline and in all. It fails
// on any error and when two workers hold at once.
func contend(n int, deadline time.Time, lock, unlock func(i int) error) (window, total int, err error) {
	return holdLoop(n, deadline, 1, func(i int) (func() error, error) {
		if err := lock(i); err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		return func() error { return unlock(i) }, nil
	})
}

// holdLoop runs n workers that loop acquire(i) and the release it returns
// until deadline, and returns the acquisitions begun before the deadline
// and in all. It fails on any error, and when more than most workers hold
// at once (a worker stops counting itself just before it releases, so a
// successor that the release lets in is never counted with it).
func holdLoop(n int, deadline time.Time, most int64, acquire func(i int) (release func() error, err error)) (window, total int, err error) {
	var (
		holders, inWindow, all atomic.Int64
		stop                   atomic.Bool
		wg                     sync.WaitGroup
		mu                     sync.Mutex
		errs                   []error
	)
	fail := func(err error) {
		stop.Store(true)
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	defer watchdog(deadline)()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && time.Now().Before(deadline) {
				release, err := acquire(i)
				if err != nil {
					fail(fmt.Errorf("session %d: %w", i, err))
					return
				}
				if h := holders.Add(1); h > most {
					fail(fmt.Errorf("session %d: %d holders at once, at most %d allowed", i, h, most))
				}
				if time.Now().Before(deadline) {
					inWindow.Add(1)
				}
				all.Add(1)
				holders.Add(-1)
				if err := release(); err != nil {
					fail(fmt.Errorf("session %d: release: %w", i, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	return int(inWindow.Load()), int(all.Load()), errors.Join(errs...)
}

// watchdog ends the program when a round is stuck well past its deadline
// (a lock that never comes would otherwise hang the benchmark). The
// returned function disarms it.
func watchdog(deadline time.Time) func() {
	t := time.AfterFunc(time.Until(deadline)+2*time.Minute, func() {
		fmt.Fprintln(os.Stderr, "bench: a contended round is stuck two minutes past its deadline; giving up")
		os.Exit(2)
	})
	return func() { t.Stop() }
}

// ---------------------------------------------------- one process per session

// With -procs every session of a side is a process running this same
// binary in worker mode (the environment variables below say which side,
// where and what). The protocol on the worker's stdin/stdout:
//
//	worker: READY
//	parent: GO <deadline, Unix nanoseconds>
//	worker: H <start> <end>            one line per hold (Unix nanoseconds), after the deadline
//	worker: DONE <window> <total> <creates> <children> <getData> <exists> <deletes> <multis> <watches> <cpu ns>
//	parent: EXIT (or end of input)
//
// The parent checks that the holds of all workers never overlap.
const (
	envWorker  = "ZKRECIPES_BENCH_WORKER" // "ours" or "zklock"
	envServers = "ZKRECIPES_BENCH_SERVERS"
	envPath    = "ZKRECIPES_BENCH_PATH"
	envTimeout = "ZKRECIPES_BENCH_TIMEOUT"
)

type procSide struct {
	workers []*worker
}

type worker struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startProcs(n int, kind string, servers []string, path string, timeout time.Duration) (side, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	s := &procSide{}
	for i := range n {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), envWorker+"="+kind, envServers+"="+strings.Join(servers, ","),
			envPath+"="+path, envTimeout+"="+timeout.String())
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			s.close()
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			s.close()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			s.close()
			return nil, fmt.Errorf("start worker: %w", err)
		}
		w := &worker{cmd: cmd, in: in, out: bufio.NewScanner(out)}
		s.workers = append(s.workers, w)
		if !w.out.Scan() || w.out.Text() != "READY" {
			s.close()
			return nil, fmt.Errorf("%s worker %d did not start (%q)", kind, i, w.out.Text())
		}
	}
	return s, nil
}

func (s *procSide) round(deadline time.Time) (roundResult, error) {
	defer watchdog(deadline)()
	for _, w := range s.workers {
		if _, err := fmt.Fprintf(w.in, "GO %d\n", deadline.UnixNano()); err != nil {
			return roundResult{}, err
		}
	}
	type interval struct{ start, end int64 }
	var (
		res   roundResult
		holds []interval
	)
	for i, w := range s.workers {
		for {
			if !w.out.Scan() {
				return res, fmt.Errorf("worker %d ended: %v", i, w.out.Err())
			}
			if strings.HasPrefix(w.out.Text(), "ERROR") {
				return res, fmt.Errorf("worker %d: %s", i, w.out.Text())
			}
			fields := strings.Fields(w.out.Text())
			nums := make([]int64, len(fields))
			for j := 1; j < len(fields); j++ {
				v, err := strconv.ParseInt(fields[j], 10, 64)
				if err != nil {
					return res, fmt.Errorf("worker %d: bad line %q", i, w.out.Text())
				}
				nums[j] = v
			}
			switch {
			case len(fields) == 3 && fields[0] == "H":
				holds = append(holds, interval{nums[1], nums[2]})
				continue
			case len(fields) == 11 && fields[0] == "DONE":
				res.window += int(nums[1])
				res.total += int(nums[2])
				res.cpu += time.Duration(nums[10])
				res.stats = addStats(res.stats, metric.RequestCounts{
					Creates: uint64(nums[3]), Children: uint64(nums[4]), GetData: uint64(nums[5]), Exists: uint64(nums[6]),
					Deletes: uint64(nums[7]), Multis: uint64(nums[8]), Watches: uint64(nums[9]),
				})
			default:
				return res, fmt.Errorf("worker %d: unexpected line %q", i, w.out.Text())
			}
			break
		}
	}
	slices.SortFunc(holds, func(a, b interval) int { return cmp.Compare(a.start, b.start) })
	for i := 1; i < len(holds); i++ {
		if holds[i].start < holds[i-1].end {
			return res, fmt.Errorf("mutual exclusion violated: holds [%d, %d] and [%d, %d] overlap",
				holds[i-1].start, holds[i-1].end, holds[i].start, holds[i].end)
		}
	}
	return res, nil
}

func (s *procSide) close() {
	for _, w := range s.workers {
		fmt.Fprintln(w.in, "EXIT")
		w.in.Close()
	}
	for _, w := range s.workers {
		done := make(chan struct{})
		go func() {
			_ = w.cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = w.cmd.Process.Kill()
			<-done
		}
	}
}

// workerMain is the body of a -procs worker process.
func workerMain(kind string) error {
	servers := strings.Split(os.Getenv(envServers), ",")
	path := os.Getenv(envPath)
	timeout, err := time.ParseDuration(os.Getenv(envTimeout))
	if err != nil {
		return err
	}
	ctx := context.Background()
	var (
		lock, unlock func() error
		stats        = func() metric.RequestCounts { return metric.RequestCounts{} }
	)
	switch kind {
	case "ours":
		c, err := recipes.Connect(context.Background(), servers, recipes.WithSessionTimeout(timeout))
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		m, err := mutex.New(c, path, mutex.WithData(lockData))
		if err != nil {
			return err
		}
		lock = func() error { _, err := m.Acquire(ctx); return err }
		unlock = func() error { return m.Release(ctx) }
		stats = (*engine.Client)(c).Stats
	case "zklock":
		r, err := dialRaw(servers, timeout)
		if err != nil {
			return err
		}
		defer r.Close()
		l := zk.NewLock(r.conn, path, acl)
		lock = func() error { return l.LockWithData(lockData) }
		unlock = l.Unlock
	case "latch", "selector": // failover participants: election.go
		return electionWorker(kind, servers, path, timeout)
	default:
		return fmt.Errorf("unknown worker kind %q", kind)
	}

	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "READY")
	out.Flush()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		if cmd == "EXIT" {
			return nil
		}
		ns, err := strconv.ParseInt(arg, 10, 64)
		if cmd != "GO" || err != nil {
			return fmt.Errorf("bad command %q", in.Text())
		}
		deadline := time.Unix(0, ns)
		before, cpu0 := stats(), cpuTime()
		window, total := 0, 0
		var holds []int64 // start, end pairs; printed after the round
		for time.Now().Before(deadline) {
			if err := lock(); err != nil {
				fmt.Fprintf(out, "ERROR lock: %v\n", err)
				out.Flush()
				return err
			}
			start := time.Now()
			if start.Before(deadline) {
				window++
			}
			total++
			end := time.Now()
			if err := unlock(); err != nil {
				fmt.Fprintf(out, "ERROR unlock: %v\n", err)
				out.Flush()
				return err
			}
			holds = append(holds, start.UnixNano(), end.UnixNano())
		}
		for i := 0; i < len(holds); i += 2 {
			fmt.Fprintf(out, "H %d %d\n", holds[i], holds[i+1])
		}
		cpu := cpuTime() - cpu0 // the hold lines above are not counted
		d := stats().Sub(before)
		fmt.Fprintf(out, "DONE %d %d %d %d %d %d %d %d %d %d\n", window, total,
			d.Creates, d.Children, d.GetData, d.Exists, d.Deletes, d.Multis, d.Watches, cpu.Nanoseconds())
		out.Flush()
	}
	return in.Err()
}

// ------------------------------------------------------------------- helpers

// rawConn is a go-zookeeper connection whose event channel is drained.
type rawConn struct {
	conn    *zk.Conn
	drained chan struct{}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func dialRaw(servers []string, timeout time.Duration) (*rawConn, error) {
	conn, events, err := zk.Connect(servers, timeout, zk.WithLogger(quiet{}))
	if err != nil {
		return nil, fmt.Errorf("zk.Connect: %w", err)
	}
	limit := time.After(15 * time.Second)
	for connected := false; !connected; {
		select {
		case ev := <-events:
			connected = ev.State == zk.StateHasSession
		case <-limit:
			conn.Close()
			return nil, fmt.Errorf("zk.Connect: no session within 15s")
		}
	}
	r := &rawConn{conn: conn, drained: make(chan struct{})}
	go func() { // go-zookeeper's event channel must not fill up
		defer close(r.drained)
		for range events {
		}
	}()
	return r, nil
}

func (r *rawConn) Close() {
	r.conn.Close()
	<-r.drained
}

// packets returns the number of packets the servers have received, or -1
// when one of them does not answer "srvr". (zk.FLWSrvr cannot parse the
// version line of Debian's build, so the answer is parsed here.)
func (b *bench) packets() int64 {
	var n int64
	for _, s := range b.servers {
		v, err := srvrReceived(s)
		if err != nil {
			return -1
		}
		n += v
	}
	return n
}

func srvrReceived(server string) (int64, error) {
	conn, err := net.DialTimeout("tcp", server, 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return 0, err
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "Received: "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("no Received line in %q", out)
}

// pktCount accumulates server packets per operation.
type pktCount struct {
	pkts int64
	ops  int
	bad  bool
}

func (p *pktCount) add(before, after int64, ops int) {
	if before < 0 || after < 0 || after < before {
		p.bad = true
		return
	}
	p.pkts += after - before
	p.ops += ops
}

func (p pktCount) String() string {
	if p.bad || p.ops == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", float64(max(p.pkts, 0))/float64(p.ops))
}

func (p pktCount) kv() string {
	if p.bad || p.ops == 0 {
		return "na"
	}
	return fmt.Sprintf("%.3f", float64(max(p.pkts, 0))/float64(p.ops))
}

// requests per operation, from Client.Stats.
type perOpStats struct {
	creates, children, getData, exists, deletes, multis, watches float64
}

func perOp(s metric.RequestCounts, ops int) perOpStats {
	if ops == 0 {
		return perOpStats{}
	}
	d := float64(ops)
	return perOpStats{
		creates: float64(s.Creates) / d, children: float64(s.Children) / d, getData: float64(s.GetData) / d,
		exists: float64(s.Exists) / d, deletes: float64(s.Deletes) / d, multis: float64(s.Multis) / d,
		watches: float64(s.Watches) / d,
	}
}

func (p perOpStats) total() float64 {
	return p.creates + p.children + p.getData + p.exists + p.deletes + p.multis
}

func (p perOpStats) String() string {
	return fmt.Sprintf("creates %.2f, children %.2f, getData %.2f, exists %.2f, deletes %.2f, multis %.2f (total %.2f; watches set %.2f)",
		p.creates, p.children, p.getData, p.exists, p.deletes, p.multis, p.total(), p.watches)
}

// kv formats the figures as key=value pairs, keys ending in _per_<unit>.
func (p perOpStats) kv(unit string) string {
	return fmt.Sprintf("creates_per_%[7]s=%.3[1]f children_per_%[7]s=%.3[2]f getdata_per_%[7]s=%.3[3]f exists_per_%[7]s=%.3[4]f deletes_per_%[7]s=%.3[5]f requests_per_%[7]s=%.3[6]f",
		p.creates, p.children, p.getData, p.exists, p.deletes, p.total(), unit)
}

func addStats(a, b metric.RequestCounts) metric.RequestCounts {
	return metric.RequestCounts{
		Creates: a.Creates + b.Creates, Deletes: a.Deletes + b.Deletes, GetData: a.GetData + b.GetData,
		Exists: a.Exists + b.Exists, Children: a.Children + b.Children, SetData: a.SetData + b.SetData,
		Multis: a.Multis + b.Multis, Watches: a.Watches + b.Watches, PendingDeletes: a.PendingDeletes + b.PendingDeletes,
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

func table(cols ...string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	return tw
}

// zookeeper returns the servers to use, a description, and a function that
// stops the server this program started, if any.
func zookeeper(flagServers string, opts ...zktest.Option) ([]string, string, func(), error) {
	var servers []string
	for _, s := range strings.Split(flagServers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			servers = append(servers, s)
		}
	}
	if len(servers) > 0 {
		return servers, "server " + strings.Join(servers, ",") + " (ZooKeeper " + srvrVersion(servers[0]) + ")", func() {}, nil
	}
	fmt.Println("no -servers and no ZK_SERVERS: starting a local ZooKeeper...")
	cl, err := zktest.Launch(1, opts...)
	if err != nil {
		return nil, "", nil, err
	}
	return cl.Servers(), "local server " + cl.ConnectString() + " (ZooKeeper " + cl.Version() + ", started by zktest.Launch)", func() { cl.Close() }, nil
}

// srvrVersion asks the server at addr for its release with the srvr
// four-letter word ("3.9.6"), or says it is unknown.
func srvrVersion(addr string) string {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "version unknown"
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return "version unknown"
	}
	out, _ := io.ReadAll(conn)
	line, _, _ := strings.Cut(string(out), "\n")
	v, ok := strings.CutPrefix(strings.TrimSpace(line), "Zookeeper version: ")
	if !ok {
		return "version unknown (srvr refused?)"
	}
	v, _, _ = strings.Cut(v, "-")
	v, _, _ = strings.Cut(v, ",")
	return v
}

// cleanup removes what the benchmark left: zk.Lock's persistent parent and
// the (container) ancestors when empty. Errors are ignored: containers
// may already have been reaped.
func (b *bench) cleanup() {
	r, err := dialRaw(b.servers, b.f.sessionTimeout)
	if err != nil {
		return
	}
	defer r.Close()
	for _, p := range []string{
		b.root + "/contended/zklock", b.root + "/contended", b.root + "/uncontended/base",
		b.root + "/uncontended/ours", b.root + "/uncontended", b.root + "/readers", b.root + "/semaphore", b.root, "/zkrecipes-bench",
	} {
		_ = r.conn.Delete(p, -1)
	}
}
