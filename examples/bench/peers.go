package main

import (
	"archive/zip"
	"bufio"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// The peers scenario (issue 12): our recipes next to Apache Curator 5.4
// (Java) and Kazoo 2.8 (Python) on the same workloads, against the same
// server, in the same rounds. Each peer is one process, started once per
// run with its sessions connected and then kept warm: it takes one command
// per round on stdin and answers with its figures (see the head of
// peers/BenchCurator.java). Its CPU time is read from its process CPU
// clock around each command (processCPU), which has nanoseconds where the
// JVM's own figure has 10 ms ticks. A peer that is not installed is
// skipped with a line saying why.

//go:embed peers/BenchCurator.java
var benchCuratorSource []byte

//go:embed peers/bench_kazoo.py
var benchKazooSource []byte

const (
	peerSemLeases = 4 // semaphore: leases of the one semaphore
	// peerContendTarget is the target for contend: ours at least
	// 1.5 times Curator's acquisitions/s.
	peerContendTarget = 1.5
)

var (
	peerQueueSizes = []int{10, 100, 1000}
	peersOn        bool
	peerWorkloads  string
	// peerQueueCap is the largest queue a peer is given. Neither needs a
	// cap at 1000 waiters (measured on 2 cores: Curator about 2.3ms and
	// Kazoo about 2.7ms per hand-off, each waiter a thread of the one
	// peer process); a larger size in peerQueueSizes is left out for a
	// peer, with a note, beyond its cap.
	peerQueueCap = map[string]int{"curator": 1000, "kazoo": 1000}
)

func init() {
	scenarios = append(scenarios, "peers")
	flag.BoolVar(&peersOn, "peers", true, "peers: run Curator 5.4 (java + Debian's jars) and Kazoo 2.8 (/usr/bin/python3 with python3-kazoo) where installed; -peers=false skips them")
	flag.StringVar(&peerWorkloads, "peer-workloads", "cycle,contend,queue,rwlock,semaphore,counter,doublebarrier,workqueue,discovery,group", "peers: the workloads to run, a comma-separated list of cycle, contend, queue, rwlock, semaphore, counter, doublebarrier, workqueue, discovery, group; and qdepth (not by default: queues tens of thousands of items, -queue-depths)")
}

// ---------------------------------------------------------- peer processes

// peerProc is a running peer program.
type peerProc struct {
	label, key string // "Curator 5.4", "curator"
	cmd        *exec.Cmd
	in         io.WriteCloser
	out        *bufio.Scanner
	stderr     *tailBuffer
	done       chan struct{}
}

// peerAnswer is a peer's "DONE <ops> <seconds> <cpuSeconds> <total> <most>".
type peerAnswer struct {
	ops, total, most int
	seconds, cpu     float64
	extra            []float64 // counter's and doublebarrier's further figures
}

// tailBuffer keeps the last 8 KiB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 16<<10 {
		t.b = append([]byte(nil), t.b[len(t.b)-8<<10:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// startCurator starts BenchCurator.java with sessions sessions, or says
// why it cannot (an error wrapping interop.ErrUnavailable).
func startCurator(dir string, servers []string, timeout time.Duration, sessions int) (*peerProc, string, error) {
	return startCuratorJVM(dir, servers, timeout, sessions, nil)
}

// startCuratorJVM is startCurator with jvmArgs (system properties) given
// to the JVM before the program.
func startCuratorJVM(dir string, servers []string, timeout time.Duration, sessions int, jvmArgs []string) (*peerProc, string, error) {
	cp, err := interop.JavaClasspath()
	if err != nil {
		return nil, "", err
	}
	java := ""
	if h := os.Getenv("JAVA_HOME"); h != "" {
		if _, err := os.Stat(filepath.Join(h, "bin", "java")); err == nil {
			java = filepath.Join(h, "bin", "java")
		}
	}
	if java == "" {
		if java, err = exec.LookPath("java"); err != nil {
			return nil, "", fmt.Errorf("%w: no java 17 on PATH (apt-get install openjdk-17-jre-headless)", interop.ErrUnavailable)
		}
	}
	src := filepath.Join(dir, "BenchCurator.java")
	if err := os.WriteFile(src, benchCuratorSource, 0o644); err != nil {
		return nil, "", err
	}
	version := "Curator"
	if jars, _ := filepath.Glob(filepath.Join(interop.JavaDir, "curator-recipes-*.jar")); len(jars) == 1 && os.Getenv(interop.ClasspathEnv) == "" {
		version = strings.TrimSuffix(filepath.Base(jars[0]), ".jar") // curator-recipes-5.4.0, Debian's versioned name
	} else if v := jarVersion(cp, "curator-recipes"); v != "" {
		version = "curator-recipes-" + v // from the classpath's jar (CURATOR_CLASSPATH)
	}
	if out, err := exec.Command(java, "-version").CombinedOutput(); err == nil {
		// openjdk version "17.0.15" 2025-04-15
		if _, v, ok := strings.Cut(strings.SplitN(string(out), "\n", 2)[0], " version "); ok && len(strings.Fields(v)) > 0 {
			version += ", java " + strings.Trim(strings.Fields(v)[0], `"`)
		}
	}
	// The JIT is left at its default (tiered up to C2): the peer is kept
	// warm, so it runs compiled code, as a long-lived service would.
	label := "Curator"
	if v, ok := strings.CutPrefix(strings.SplitN(version, ",", 2)[0], "curator-recipes-"); ok {
		label = "Curator " + v
	}
	// Soft references cleared at every GC, so that the cache scenario's
	// heap figures (used heap after System.gc()) hold no stale caches;
	// jvmArgs (system properties: the TLS row's) before the program.
	argv := append([]string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:SoftRefLRUPolicyMSPerMB=0"}, jvmArgs...)
	argv = append(argv, "-cp", cp, src, strings.Join(servers, ","), strconv.FormatInt(timeout.Milliseconds(), 10), strconv.Itoa(sessions))
	p, err := startPeer(label, "curator", java, argv...)
	return p, version, err
}

// jarVersion returns the version in the Maven metadata of the first jar of
// classpath cp whose name begins with artifact, or "".
func jarVersion(cp, artifact string) string {
	for _, j := range filepath.SplitList(cp) {
		if !strings.HasPrefix(filepath.Base(j), artifact) || !strings.HasSuffix(j, ".jar") {
			continue
		}
		z, err := zip.OpenReader(j)
		if err != nil {
			return ""
		}
		defer z.Close()
		for _, f := range z.File {
			if !strings.HasSuffix(f.Name, "/"+artifact+"/pom.properties") {
				continue
			}
			r, err := f.Open()
			if err != nil {
				return ""
			}
			b, _ := io.ReadAll(r)
			r.Close()
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "version="); ok {
					return v
				}
			}
		}
		return ""
	}
	return ""
}

// startKazoo starts bench_kazoo.py with sessions sessions, or says why it
// cannot.
func startKazoo(dir string, servers []string, timeout time.Duration, sessions int) (*peerProc, string, error) {
	if err := interop.KazooAvailable(); err != nil {
		return nil, "", err
	}
	version := "kazoo"
	if out, err := exec.Command(interop.Python, "-I", "-c", "import kazoo.version as v, sys; print(v.__version__, sys.version.split()[0])").Output(); err == nil {
		f := strings.Fields(string(out))
		if len(f) == 2 {
			version = "kazoo " + f[0] + ", Python " + f[1]
		}
	}
	src := filepath.Join(dir, "bench_kazoo.py")
	if err := os.WriteFile(src, benchKazooSource, 0o644); err != nil {
		return nil, "", err
	}
	p, err := startPeer("Kazoo 2.8", "kazoo", interop.Python, "-I", "-u", src,
		strings.Join(servers, ","), strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64), strconv.Itoa(sessions))
	return p, version, err
}

func startPeer(label, key, bin string, args ...string) (*peerProc, error) {
	p := &peerProc{label: label, key: key, stderr: &tailBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stderr = p.stderr
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", label, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	p.out = bufio.NewScanner(out)
	return p, nil
}

// ready waits for the peer's READY line.
func (p *peerProc) ready() error {
	defer watchdog(time.Now().Add(time.Minute))()
	if !p.out.Scan() || p.out.Text() != "READY" {
		return fmt.Errorf("%s did not start: %q; stderr: %s", p.label, p.out.Text(), p.stderr)
	}
	return nil
}

// do sends one command and reads the answer. A peer that does not answer
// within limit after the command is given up on (the watchdog ends the
// program two minutes later).
func (p *peerProc) do(limit time.Duration, format string, args ...any) (peerAnswer, error) {
	return p.doQueued(limit, fmt.Sprintf(format, args...), nil)
}

// doQueued is do for a command that may print QUEUED before its answer (a
// queue): then it calls queued and, when that returns, sends GO.
//
// The answer's CPU time is the peer process's CPU clock read around the
// command (from GO for a queue) where processCPU can read it, else the
// peer's own figure.
func (p *peerProc) doQueued(limit time.Duration, cmd string, queued func() error) (peerAnswer, error) {
	defer watchdog(time.Now().Add(limit))()
	cpu0, clockOK := processCPU(p.cmd.Process.Pid)
	if _, err := fmt.Fprintln(p.in, cmd); err != nil {
		return peerAnswer{}, fmt.Errorf("%s: %q: %w; stderr: %s", p.label, cmd, err, p.stderr)
	}
	for {
		if !p.out.Scan() {
			<-p.done
			return peerAnswer{}, fmt.Errorf("%s: %q: no answer (exited: %v); stderr: %s", p.label, cmd, p.cmd.ProcessState, p.stderr)
		}
		if p.out.Text() != "QUEUED" || queued == nil {
			break
		}
		if err := queued(); err != nil {
			return peerAnswer{}, err
		}
		cpu0, clockOK = processCPU(p.cmd.Process.Pid)
		if _, err := fmt.Fprintln(p.in, "GO"); err != nil {
			return peerAnswer{}, fmt.Errorf("%s: %q: GO: %w; stderr: %s", p.label, cmd, err, p.stderr)
		}
	}
	cpu1, clockOK1 := processCPU(p.cmd.Process.Pid)
	line := p.out.Text()
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "DONE" {
		return peerAnswer{}, fmt.Errorf("%s: %q: %s; stderr: %s", p.label, cmd, line, p.stderr)
	}
	var (
		a    peerAnswer
		errs []error
	)
	atoi := func(s string) int { v, err := strconv.Atoi(s); errs = append(errs, err); return v }
	atof := func(s string) float64 { v, err := strconv.ParseFloat(s, 64); errs = append(errs, err); return v }
	a.ops, a.seconds, a.cpu, a.total, a.most = atoi(f[1]), atof(f[2]), atof(f[3]), atoi(f[4]), atoi(f[5])
	for _, x := range f[6:] {
		a.extra = append(a.extra, atof(x))
	}
	if err := errors.Join(errs...); err != nil {
		return a, fmt.Errorf("%s: bad answer %q: %w", p.label, line, err)
	}
	if clockOK && clockOK1 {
		a.cpu = (cpu1 - cpu0).Seconds()
	}
	return a, nil
}

func (p *peerProc) close() {
	_, _ = fmt.Fprintln(p.in, "exit")
	_ = p.in.Close()
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// ---------------------------------------------------------------- scenario

// peerFig is one side's figure in one round: rate in ops per second (for
// queue, hand-offs per second) and client CPU µs per op.
type peerFig struct{ rate, cpuUS float64 }

// peerSide is one of ours, Curator and Kazoo in a workload.
type peerSide struct {
	label, key string
	run        func(r int) (peerFig, error)
}

// peerRow is one workload's medians, for the RESULT line and the report.
type peerRow struct {
	workload, key string // description; RESULT's workload=
	queue         bool   // figures are µs per hand-off (the rate's inverse)
	rate, cpu     map[string]float64
	ratio         map[string]float64 // peer key -> median over rounds of ours/peer
	note          map[string]string  // peer key -> why it has no figure, or a remark
	target        float64            // ours/Curator target, or 0
	latency       string             // figures are milliseconds (1e3/rate) of this, e.g. "ms to all in"
}

// peerRows are the peers scenario's figures for the -md report.
var peerRows []peerRow

var peerKeys = []string{"curator", "kazoo"}

func (r peerRow) value(key string) string {
	v, ok := r.rate[key]
	switch {
	case !ok:
		return "na"
	case r.queue:
		return fmt.Sprintf("%.0f", 1e6/v)
	case r.latency != "":
		return fmt.Sprintf("%.1f", 1e3/v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

// cell is the report's text for one side: the figure and the CPU per op.
func (r peerRow) cell(key string) string {
	if _, ok := r.rate[key]; !ok {
		return r.note[key]
	}
	s := fmt.Sprintf("%.0f ops/s, CPU %.0f µs/op", r.rate[key], r.cpu[key])
	if r.queue {
		s = fmt.Sprintf("%.0f µs/hand-off, CPU %.0f µs/hand-off", 1e6/r.rate[key], r.cpu[key])
	}
	if r.latency != "" {
		s = fmt.Sprintf("%.1f %s", 1e3/r.rate[key], r.latency)
	}
	if n := r.note[key]; n != "" {
		s += " (" + n + ")"
	}
	return s
}

func (r peerRow) ratioCell(key string) string {
	v, ok := r.ratio[key]
	if !ok {
		return "—"
	}
	s := fmt.Sprintf("%.2f", v)
	if key == "curator" && r.target > 0 {
		s += fmt.Sprintf(" (target ≥ %g: %s)", r.target, verdict(v >= r.target))
	}
	return s
}

// peers runs the peers scenario; it returns RESULT lines and whether the
// targets were met.
func (b *bench) peers(ctx context.Context) ([]string, bool, error) {
	fmt.Printf("\n== peers: ours next to Curator 5.4 and Kazoo 2.8 on the same server, in the same rounds (the side that goes first rotates)\n")
	if !peersOn {
		fmt.Println("peers: skipped (-peers=false)")
		return nil, true, nil
	}
	work := map[string]bool{}
	for _, w := range strings.Split(peerWorkloads, ",") {
		switch w = strings.TrimSpace(w); w {
		case "cycle", "contend", "queue", "rwlock", "semaphore", "counter", "doublebarrier", "workqueue", "discovery", "group", "qdepth":
			work[w] = true
		default:
			return nil, false, fmt.Errorf("-peer-workloads: %q is not one of cycle, contend, queue, rwlock, semaphore, counter, doublebarrier, workqueue, discovery, group, qdepth", w)
		}
	}
	pw, stop, err := b.startPeers(ctx, []string{"curator", "kazoo"}, nil)
	defer stop()
	if err != nil {
		return nil, false, err
	}
	if len(pw.procs) == 0 {
		fmt.Println("peers: neither Curator nor Kazoo is installed (scripts/install-deps.sh installs both); nothing to compare")
		return nil, true, nil
	}
	var (
		lines []string
		pass  = true
	)
	for _, w := range []struct {
		name string
		run  func() ([]string, bool, error)
	}{{"cycle", pw.cycle}, {"contend", pw.contend}, {"queue", pw.queue}, {"rwlock", pw.rwlock}, {"semaphore", pw.semaphore},
		{"counter", pw.counter}, {"doublebarrier", pw.doubleBarrier}, {"workqueue", pw.workqueue},
		{"discovery", pw.discovery}, {"group", pw.group}, {"qdepth", pw.qdepth}} { // peeratomic.go, workqueue below, peerdisc.go, qdepth.go

		if !work[w.name] {
			continue
		}
		ls, ok, err := w.run()
		if err != nil {
			return lines, false, fmt.Errorf("%s: %w", w.name, err)
		}
		lines, pass = append(lines, ls...), pass && ok
	}
	return lines, pass, nil
}

// startPeers starts the peers named by keys (curator, kazoo) where
// installed, Curator's JVM with jvmArgs, and as many sessions of ours:
// max(-sessions, -readers) each; with no peer installed (or none named)
// only ours. stop ends it all (also after an error).
func (b *bench) startPeers(ctx context.Context, keys []string, jvmArgs []string) (_ *peerWork, stop func(), err error) {
	f := b.f
	var cleanups []func()
	stop = func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	sessions := max(f.sessions, f.readers)
	dir, err := os.MkdirTemp("", "zkrecipes-bench-peers-")
	if err != nil {
		return nil, stop, err
	}
	cleanups = append(cleanups, func() { os.RemoveAll(dir) })

	var procs []*peerProc
	cleanups = append(cleanups, func() {
		for _, p := range procs {
			p.close()
		}
	})
	skipped := map[string]string{}
	type starter func(string, []string, time.Duration, int) (*peerProc, string, error)
	curator := func(dir string, servers []string, timeout time.Duration, sessions int) (*peerProc, string, error) {
		return startCuratorJVM(dir, servers, timeout, sessions, jvmArgs)
	}
	for _, s := range []struct {
		key, label string
		start      starter
	}{{"curator", "Curator 5.4", curator}, {"kazoo", "Kazoo 2.8", startKazoo}} {
		if !slices.Contains(keys, s.key) {
			skipped[s.key] = "not run here"
			continue
		}
		p, version, err := s.start(dir, b.servers, f.sessionTimeout, sessions)
		if errors.Is(err, interop.ErrUnavailable) {
			fmt.Printf("peers: %s skipped, not installed: %v\n", strings.Fields(s.label)[0], err)
			skipped[s.key] = "not installed"
			peerSetup = append(peerSetup, s.label+": not installed")
			continue
		}
		if err != nil {
			return nil, stop, err
		}
		procs = append(procs, p)
		fmt.Printf("peers: %s: %s, %d sessions, session timeout %v\n", strings.Fields(s.label)[0], version, sessions, f.sessionTimeout)
		peerSetup = append(peerSetup, fmt.Sprintf("%s: %s, %d sessions", s.label, version, sessions))
	}
	for _, p := range procs {
		if err := p.ready(); err != nil {
			return nil, stop, err
		}
	}
	clients := make([]*recipes.Client, 0, sessions)
	cleanups = append(cleanups, func() {
		for _, c := range clients {
			c.Close(context.Background())
		}
	})
	for range sessions {
		c, err := recipes.Connect(context.Background(), b.servers, recipes.WithSessionTimeout(f.sessionTimeout))
		if err != nil {
			return nil, stop, err
		}
		clients = append(clients, c)
	}
	cleanups = append(cleanups, func() { b.deleteTree(b.root + "/peers") })
	return &peerWork{b: b, ctx: ctx, clients: clients, procs: procs, skipped: skipped}, stop, nil
}

// peerWork holds what the peers workloads share.
type peerWork struct {
	b       *bench
	ctx     context.Context
	clients []*recipes.Client
	procs   []*peerProc
	skipped map[string]string // peer key -> why it is absent

	warmed map[string]bool               // workloads warmed up (warmOnce)
	nRound int                           // rounds of each row; 0: -rounds
	notes  map[string]map[string]float64 // a row's further medians: key -> "side/figure" -> value
	pkts   map[string][]float64          // queueRow: server packets per hand-off, per side, per round
}

// rounds is the rounds of each row: -rounds, unless the scale scenario
// set fewer.
func (w *peerWork) rounds() int {
	if w.nRound > 0 {
		return w.nRound
	}
	return w.b.f.rounds
}

// note records a further median of a row's side (the scale scenario
// reads them).
func (w *peerWork) note(key, side, fig string, v float64) {
	if w.notes == nil {
		w.notes = map[string]map[string]float64{}
	}
	if w.notes[key] == nil {
		w.notes[key] = map[string]float64{}
	}
	w.notes[key][side+"/"+fig] = v
}

func (w *peerWork) path(workload, side string) string {
	return fmt.Sprintf("%s/peers/%s/%s", w.b.root, workload, side)
}

// compare runs rounds of the sides (rotating which goes first), prints a
// table and records the medians.
func (w *peerWork) compare(row peerRow, rounds int, sides []peerSide) (string, bool, error) {
	row.rate, row.cpu, row.ratio = map[string]float64{}, map[string]float64{}, map[string]float64{}
	if row.note == nil {
		row.note = map[string]string{}
	}
	for k, why := range w.skipped {
		row.note[k] = why
	}
	rates, cpus, ratios := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	unit, cpuUnit := "ops/s", "CPU µs/op"
	if row.queue {
		unit, cpuUnit = "µs/hand-off", "CPU µs/hand-off"
	}
	if row.latency != "" {
		unit = "ms"
	}
	cols := []string{"round"}
	for _, s := range sides {
		cols = append(cols, s.label+" "+unit)
		if s.key != "ours" {
			cols = append(cols, "ours/"+strings.Fields(s.label)[0])
		}
	}
	for _, s := range sides {
		cols = append(cols, s.label+" "+cpuUnit)
	}
	tw := table(append(cols, "first")...)
	show := func(rate float64) float64 {
		switch {
		case row.queue:
			return 1e6 / rate
		case row.latency != "":
			return 1e3 / rate
		}
		return rate
	}
	showf := func(v float64) string {
		if row.latency != "" {
			return fmt.Sprintf("%.1f", v)
		}
		return fmt.Sprintf("%.0f", v)
	}
	for r := range rounds {
		figs := map[string]peerFig{}
		first := sides[r%len(sides)].label
		for i := range sides {
			s := sides[(r+i)%len(sides)]
			if err := w.ctx.Err(); err != nil {
				return "", false, err
			}
			fg, err := s.run(r)
			if err != nil {
				return "", false, fmt.Errorf("%s: %w", s.label, err)
			}
			if fg.rate <= 0 {
				return "", false, fmt.Errorf("%s made no acquisition", s.label)
			}
			figs[s.key] = fg
			rates[s.key], cpus[s.key] = append(rates[s.key], fg.rate), append(cpus[s.key], fg.cpuUS)
		}
		for _, s := range sides[1:] {
			ratios[s.key] = append(ratios[s.key], figs["ours"].rate/figs[s.key].rate)
		}
		var vals []string
		for _, s := range sides {
			vals = append(vals, showf(show(figs[s.key].rate)))
			if s.key != "ours" {
				vals = append(vals, fmt.Sprintf("%.2f", figs["ours"].rate/figs[s.key].rate))
			}
		}
		for _, s := range sides {
			vals = append(vals, fmt.Sprintf("%.0f", figs[s.key].cpuUS))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", r+1, strings.Join(vals, "\t"), first)
	}
	var vals []string
	for _, s := range sides {
		row.rate[s.key], row.cpu[s.key] = median(rates[s.key]), median(cpus[s.key])
		vals = append(vals, showf(show(row.rate[s.key])))
		if s.key != "ours" {
			row.ratio[s.key] = median(ratios[s.key])
			vals = append(vals, fmt.Sprintf("%.2f", row.ratio[s.key]))
		}
	}
	for _, s := range sides {
		vals = append(vals, fmt.Sprintf("%.0f", row.cpu[s.key]))
	}
	fmt.Fprintf(tw, "median\t%s\t\n", strings.Join(vals, "\t"))
	tw.Flush()
	ok := true
	if c, has := row.ratio["curator"]; has && row.target > 0 {
		ok = c >= row.target
		fmt.Printf("ours/Curator %.2f (target >= %.1f: %s)\n", c, row.target, verdict(ok))
	}
	for _, k := range peerKeys {
		if n := row.note[k]; n != "" {
			fmt.Printf("%s: %s\n", map[string]string{"curator": "Curator", "kazoo": "Kazoo"}[k], n)
		}
	}
	peerRows = append(peerRows, row)

	var kv strings.Builder
	fmt.Fprintf(&kv, "RESULT scenario=peers workload=%s", row.key)
	if row.queue {
		kv.WriteString(" unit=us_per_handoff")
	} else if row.latency != "" {
		kv.WriteString(" unit=ms")
	} else {
		kv.WriteString(" unit=ops_per_s")
	}
	fmt.Fprintf(&kv, " ours=%s cpu_us_per_op_ours=%.1f", row.value("ours"), row.cpu["ours"])
	for _, k := range peerKeys {
		if _, has := row.rate[k]; !has {
			fmt.Fprintf(&kv, " %[1]s=na cpu_us_per_op_%[1]s=na ours_per_%[1]s=na", k)
			continue
		}
		fmt.Fprintf(&kv, " %s=%s cpu_us_per_op_%s=%.1f ours_per_%s=%.4f", k, row.value(k), k, row.cpu[k], k, row.ratio[k])
	}
	if row.target > 0 {
		fmt.Fprintf(&kv, " target_ours_per_curator=%.2f pass=%t", row.target, ok)
	}
	fmt.Fprintf(&kv, " rounds=%d", rounds)
	return kv.String(), ok, nil
}

// peerSides returns ours and a side per running peer; cmd makes a peer's
// command for round r, and fig its figure from the answer.
func (w *peerWork) peerSides(ours peerSide, limit time.Duration, fig func(peerAnswer) peerFig, cmd func(p *peerProc, r int) string) []peerSide {
	sides := []peerSide{ours}
	for _, p := range w.procs {
		sides = append(sides, peerSide{label: p.label, key: p.key, run: func(r int) (peerFig, error) {
			a, err := p.do(limit, "%s", cmd(p, r))
			if err != nil {
				return peerFig{}, err
			}
			return fig(a), nil
		}})
	}
	return sides
}

// timedFig is the figure of a timed round: acquisitions begun before the
// deadline per second, CPU per acquisition made.
func timedFig(a peerAnswer) peerFig {
	return peerFig{rate: float64(a.ops) / a.seconds, cpuUS: a.cpu * 1e6 / float64(max(a.total, 1))}
}

// ------------------------------------------------------------------- cycle

func (w *peerWork) cycle() ([]string, bool, error) {
	f := w.b.f
	fmt.Printf("\n-- peers cycle: uncontended Lock+Unlock on one path, one session, %d ops per side per round, in turns of %d (the first side rotates every turn)\n", f.ops, f.chunk)
	m, err := mutex.New(w.clients[0], w.path("cycle", "ours"), mutex.WithData(lockData))
	if err != nil {
		return nil, false, err
	}
	ours := func(n int) (peerAnswer, error) {
		start, cpu := time.Now(), cpuTime()
		for range n {
			if _, err := m.Acquire(w.ctx); err != nil {
				return peerAnswer{}, err
			}
			if err := m.Release(w.ctx); err != nil {
				return peerAnswer{}, err
			}
		}
		return peerAnswer{ops: n, total: n, seconds: time.Since(start).Seconds(), cpu: (cpuTime() - cpu).Seconds()}, nil
	}
	type chunker struct {
		label, key string
		run        func(n int) (peerAnswer, error)
	}
	all := []chunker{{"ours", "ours", ours}}
	for _, p := range w.procs {
		path := w.path("cycle", p.key)
		all = append(all, chunker{p.label, p.key, func(n int) (peerAnswer, error) {
			return p.do(time.Minute+time.Duration(n)*100*time.Millisecond, "cycle %s %d", path, n)
		}})
	}
	// Warm up: the JVM's JIT (a peer's first workload), the parents, the
	// server; at least 500 ops, whatever -warmup says.
	for _, c := range all {
		if _, err := c.run(max(f.warmup, 500)); err != nil {
			return nil, false, fmt.Errorf("%s: warm-up: %w", c.label, err)
		}
	}
	// A round runs every side's ops in turns of -chunk; a side's figure
	// is its ops over the time its turns took.
	var (
		sums map[string]*peerAnswer
		last = -1
	)
	runRound := func(r int) error {
		sums = map[string]*peerAnswer{}
		for _, c := range all {
			sums[c.key] = &peerAnswer{}
		}
		for done, k := 0, 0; done < f.ops; k++ {
			n := min(f.chunk, f.ops-done)
			for i := range all {
				c := all[(r+k+i)%len(all)]
				if err := w.ctx.Err(); err != nil {
					return err
				}
				a, err := c.run(n)
				if err != nil {
					return fmt.Errorf("%s: %w", c.label, err)
				}
				s := sums[c.key]
				s.ops, s.total, s.seconds, s.cpu = s.ops+a.ops, s.total+a.total, s.seconds+a.seconds, s.cpu+a.cpu
			}
			done += n
		}
		return nil
	}
	// compare calls the sides one after another per round; the first
	// call of a round runs the whole interleaved round and the others
	// read their share.
	side := func(c chunker) peerSide {
		return peerSide{label: c.label, key: c.key, run: func(r int) (peerFig, error) {
			if last != r {
				if err := runRound(r); err != nil {
					return peerFig{}, err
				}
				last = r
			}
			s := sums[c.key]
			return peerFig{rate: float64(s.ops) / s.seconds, cpuUS: s.cpu * 1e6 / float64(s.ops)}, nil
		}}
	}
	var sides []peerSide
	for _, c := range all {
		sides = append(sides, side(c))
	}
	line, ok, err := w.compare(peerRow{workload: "cycle: uncontended Lock+Unlock, one session", key: "cycle"}, f.rounds, sides)
	return []string{line}, ok, err
}

// ----------------------------------------------------------------- contend

func (w *peerWork) contend() ([]string, bool, error) {
	f := w.b.f
	fmt.Printf("\n-- peers contend: %d sessions loop Lock;Unlock on one path, %v per side per round (acquisitions/s)\n", f.sessions, f.duration)
	path := w.path("contend", "ours")
	locks := make([]*mutex.Mutex, f.sessions)
	for i := range locks {
		var err error
		if locks[i], err = mutex.New(w.clients[i], path, mutex.WithData(lockData)); err != nil {
			return nil, false, err
		}
	}
	round := func(d time.Duration) (peerFig, error) {
		return peerLoop(f.sessions, d, 1, func(i int) (func() error, error) {
			if _, err := locks[i].Acquire(w.ctx); err != nil {
				return nil, err
			}
			return func() error { return locks[i].Release(w.ctx) }, nil
		})
	}
	ours := peerSide{label: "ours", key: "ours", run: func(int) (peerFig, error) { return round(f.duration) }}
	sides := w.peerSides(ours, f.duration+time.Minute, timedFig, func(p *peerProc, _ int) string {
		return fmt.Sprintf("contend %s %d %d", w.path("contend", p.key), f.sessions, f.duration.Milliseconds())
	})
	if err := w.warm(sides, func(s peerSide) error {
		if s.key == "ours" {
			_, err := round(min(f.duration, time.Second))
			return err
		}
		_, err := w.proc(s.key).do(time.Minute, "contend %s %d %d", w.path("contend", s.key), f.sessions, min(f.duration, time.Second).Milliseconds())
		return err
	}); err != nil {
		return nil, false, err
	}
	line, ok, err := w.compare(peerRow{
		workload: fmt.Sprintf("contend: %d sessions, one lock path", f.sessions), key: "contend", target: peerContendTarget,
	}, f.rounds, sides)
	return []string{line}, ok, err
}

// peerLoop is our side of a timed workload: n goroutines, one per
// session, loop acquire(i) and its release for d. It checks that at most
// most hold at once and returns acquisitions begun before the deadline
// per second (as the peers count them) and this process's CPU per
// acquisition made.
func peerLoop(n int, d time.Duration, most int64, acquire func(i int) (release func() error, err error)) (peerFig, error) {
	cpu := cpuTime()
	window, all, err := holdLoop(n, time.Now().Add(d), most, acquire)
	if err != nil {
		return peerFig{}, err
	}
	return peerFig{rate: float64(window) / d.Seconds(), cpuUS: cpuPerOp(cpuTime()-cpu, max(all, 1))}, nil
}

func (w *peerWork) proc(key string) *peerProc {
	for _, p := range w.procs {
		if p.key == key {
			return p
		}
	}
	return nil
}

// warm runs one uncounted round of every side.
func (w *peerWork) warm(sides []peerSide, fn func(peerSide) error) error {
	for _, s := range sides {
		if err := fn(s); err != nil {
			return fmt.Errorf("%s: warm-up: %w", s.label, err)
		}
	}
	return nil
}

// ------------------------------------------------------------------- queue

func (w *peerWork) queue() ([]string, bool, error) {
	f := w.b.f
	fmt.Printf("\n-- peers queue: N waiters (a lock object each, over %d sessions) queue behind a holder, then drain; time from the holder's release to the last hand-off\n", f.sessions)
	// Warm up with a small queue on every side.
	if err := w.warmQueue(); err != nil {
		return nil, false, err
	}
	var (
		lines []string
		pass  = true
	)
	for _, n := range peerQueueSizes {
		line, ok, err := w.queueRow(n, peerQueueCap)
		if err != nil {
			return lines, false, err
		}
		lines, pass = append(lines, line), pass && ok
	}
	fmt.Println("(ours/peer is the peer's time per hand-off over ours: above 1, our drain is faster)")
	return lines, pass, nil
}

// warmQueue drains a queue of 10 waiters on every side, once.
func (w *peerWork) warmQueue() error {
	if !w.warmOnce("queue") {
		return nil
	}
	warmPath := func(key string) string { return w.path("queue", key+"-warm") }
	if _, err := w.drainOurs(warmPath("ours"), 10); err != nil {
		return fmt.Errorf("ours: warm-up: %w", err)
	}
	for _, p := range w.procs {
		if _, err := w.drainPeer(p, warmPath(p.key), 10); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	return nil
}

// queueRow is the queue row of n waiters; a peer is left out beyond its
// cap.
func (w *peerWork) queueRow(n int, caps map[string]int) (string, bool, error) {
	row := peerRow{workload: fmt.Sprintf("queue: %d waiters drained", n), key: fmt.Sprintf("queue%d", n), queue: true, note: map[string]string{}}
	sides := []peerSide{{label: "ours", key: "ours", run: func(r int) (peerFig, error) {
		return w.drainOurs(w.path("queue", fmt.Sprintf("ours-%d-%d", n, r)), n)
	}}}
	for _, p := range w.procs {
		if limit := caps[p.key]; n > limit {
			row.note[p.key] = fmt.Sprintf("capped at %d waiters: too slow beyond", limit)
			continue
		}
		sides = append(sides, peerSide{label: p.label, key: p.key, run: func(r int) (peerFig, error) {
			return w.drainPeer(p, w.path("queue", fmt.Sprintf("%s-%d-%d", p.key, n, r)), n)
		}})
	}
	fmt.Printf("%d waiters:\n", n)
	w.pkts = map[string][]float64{}
	line, ok, err := w.compare(row, w.rounds(), sides)
	if err != nil {
		return line, false, fmt.Errorf("%d waiters: %w", n, err)
	}
	for side, xs := range w.pkts {
		w.note(row.key, side, "pkts", median(xs))
	}
	if len(w.pkts) > 0 {
		fmt.Printf("server packets received per hand-off (pings included; medians of rounds): ours %.2f", w.notes[row.key]["ours/pkts"])
		if v, ok := w.notes[row.key]["curator/pkts"]; ok {
			fmt.Printf(", Curator %.2f", v)
		}
		fmt.Println()
	}
	return line, ok, nil
}

// drainOurs queues n waiters (a mutex each, over -sessions sessions)
// behind a holder at path, then times the drain from the holder's release
// to the last waiter's; the clock starts once the server counts their
// watches.
func (w *peerWork) drainOurs(path string, n int) (peerFig, error) {
	sessions := w.b.f.sessions
	holder, err := mutex.New(w.clients[0], path, mutex.WithData(lockData))
	if err != nil {
		return peerFig{}, err
	}
	if _, err := holder.Acquire(w.ctx); err != nil {
		return peerFig{}, err
	}
	w0, werr := w.b.watchCount()
	var (
		wg      sync.WaitGroup
		holders atomic.Int64
	)
	errs := make(chan error, n)
	for i := range n {
		m, err := mutex.New(w.clients[i%sessions], path, mutex.WithData(lockData))
		if err != nil {
			return peerFig{}, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.Acquire(w.ctx); err != nil {
				errs <- err
				return
			}
			if holders.Add(1) != 1 {
				errs <- errors.New("mutual exclusion violated")
			}
			holders.Add(-1)
			if err := m.Release(w.ctx); err != nil {
				errs <- err
			}
		}()
	}
	count := func() (int, error) { ps, err := holder.Participants(w.ctx); return len(ps), err }
	if err := waitQueued(count, n+1); err != nil {
		return peerFig{}, err
	}
	if err := w.waitWatches(w0, werr, n); err != nil {
		return peerFig{}, err
	}
	pk := w.b.packets()
	start, cpu := time.Now(), cpuTime()
	if err := holder.Release(w.ctx); err != nil {
		return peerFig{}, err
	}
	wg.Wait()
	took, used := time.Since(start), cpuTime()-cpu
	w.addPkts("ours", pk, n)
	close(errs)
	if err := <-errs; err != nil {
		return peerFig{}, err
	}
	return peerFig{rate: float64(n) / took.Seconds(), cpuUS: cpuPerOp(used, n)}, nil
}

// drainPeer has a peer drain n waiters at path; the clock starts once the
// server counts their watches.
func (w *peerWork) drainPeer(p *peerProc, path string, n int) (peerFig, error) {
	w0, werr := w.b.watchCount()
	var pk int64
	limit := 5*time.Minute + time.Duration(n)*30*time.Millisecond
	a, err := p.doQueued(limit, fmt.Sprintf("queue %s %d %d", path, n, w.b.f.sessions), func() error {
		err := w.waitWatches(w0, werr, n)
		pk = w.b.packets()
		return err
	})
	if err != nil {
		return peerFig{}, err
	}
	w.addPkts(p.key, pk, n)
	return peerFig{rate: float64(a.ops) / a.seconds, cpuUS: a.cpu * 1e6 / float64(a.ops)}, nil
}

// addPkts records the server's packets received since pk per hand-off of
// n, for side (queueRow reports them); nothing when the server does not
// answer srvr.
func (w *peerWork) addPkts(side string, pk int64, n int) {
	if pk < 0 || w.pkts == nil {
		return
	}
	if now := w.b.packets(); now >= pk {
		w.pkts[side] = append(w.pkts[side], float64(now-pk)/float64(n))
	}
}

// waitWatches waits until the servers count n more watches than w0 (werr:
// the error of reading w0): every waiter of a queue has then listed the
// children and watches the node ahead of its own, so the drain's clock is
// not charged with the last waiters' joining. Every side is waited for
// alike; without "wchs", or after a minute and 10 ms per waiter (each
// lists every node ahead: the joining grows as n squared), it returns
// without waiting.
func (w *peerWork) waitWatches(w0 int, werr error, n int) error {
	if werr != nil {
		return nil
	}
	deadline := time.Now().Add(time.Minute + time.Duration(n)*10*time.Millisecond)
	for time.Now().Before(deadline) {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		k, err := w.b.watchCount()
		if err != nil || k-w0 >= n {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Printf("(the server counted fewer than %d new watches in time; the drain starts anyway)\n", n)
	return nil
}

// ------------------------------------------------------------------ rwlock

func (w *peerWork) rwlock() ([]string, bool, error) {
	f := w.b.f
	fmt.Printf("\n-- peers rwlock: %d sessions loop ReadLock Lock;Unlock on one path, no writer, %v per side per round (read acquisitions/s)\n", f.readers, f.duration)
	fmt.Println("   Kazoo has no Curator-compatible read/write lock: its side is Kazoo's own ReadLock (nodes <hex>__rlock__<seq>)")
	path := w.path("rwlock", "ours")
	locks := make([]*mutex.Mutex, f.readers)
	for i := range locks {
		rw, err := rwlock.New(w.clients[i], path, mutex.WithData(lockData))
		if err != nil {
			return nil, false, err
		}
		locks[i] = rw.ReadLock()
	}
	round := func(d time.Duration) (peerFig, error) {
		return peerLoop(f.readers, d, int64(f.readers), func(i int) (func() error, error) {
			if _, err := locks[i].Acquire(w.ctx); err != nil {
				return nil, err
			}
			return func() error { return locks[i].Release(w.ctx) }, nil
		})
	}
	cmd := func(key string, d time.Duration) string {
		return fmt.Sprintf("rwlock %s %d %d", w.path("rwlock", key), f.readers, d.Milliseconds())
	}
	row := peerRow{workload: fmt.Sprintf("rwlock: %d readers holding together", f.readers), key: "rwlock"}
	return w.timed(row, round, cmd, "Kazoo's own ReadLock, not Curator-compatible")
}

// timed runs a timed workload for the peers' report row: ours by round,
// each peer by the command cmd gives (for -duration, and for the warm-up),
// all warmed up first, then compared over the rounds. kazooNote, when
// Kazoo runs, says how its side differs.
func (w *peerWork) timed(row peerRow, round func(time.Duration) (peerFig, error), cmd func(key string, d time.Duration) string, kazooNote string) ([]string, bool, error) {
	f := w.b.f
	ours := peerSide{label: "ours", key: "ours", run: func(int) (peerFig, error) { return round(f.duration) }}
	sides := w.peerSides(ours, f.duration+time.Minute, timedFig, func(p *peerProc, _ int) string { return cmd(p.key, f.duration) })
	warm := min(f.duration, time.Second)
	if err := w.warm(sides, func(s peerSide) error {
		if s.key == "ours" {
			_, err := round(warm)
			return err
		}
		_, err := w.proc(s.key).do(time.Minute, "%s", cmd(s.key, warm))
		return err
	}); err != nil {
		return nil, false, err
	}
	row.note = map[string]string{}
	if w.proc("kazoo") != nil {
		row.note["kazoo"] = kazooNote
	}
	line, ok, err := w.compare(row, f.rounds, sides)
	return []string{line}, ok, err
}

// --------------------------------------------------------------- semaphore

func (w *peerWork) semaphore() ([]string, bool, error) {
	f := w.b.f
	fmt.Printf("\n-- peers semaphore: %d sessions loop Acquire;release on one semaphore of %d leases, %v per side per round (acquisitions/s)\n", f.sessions, peerSemLeases, f.duration)
	fmt.Println("   Curator: InterProcessSemaphoreV2; Kazoo: its Semaphore recipe (its own layout)")
	path := w.path("semaphore", "ours")
	sems := make([]*semaphore.Semaphore, f.sessions)
	for i := range sems {
		var err error
		if sems[i], err = semaphore.New(w.clients[i], path, peerSemLeases, semaphore.WithData(lockData)); err != nil {
			return nil, false, err
		}
	}
	round := func(d time.Duration) (peerFig, error) {
		return peerLoop(f.sessions, d, peerSemLeases, func(i int) (func() error, error) {
			lease, err := sems[i].Acquire(w.ctx)
			if err != nil {
				return nil, err
			}
			return func() error { return lease.Release(w.ctx) }, nil
		})
	}
	cmd := func(key string, d time.Duration) string {
		return fmt.Sprintf("semaphore %s %d %d %d", w.path("semaphore", key), f.sessions, peerSemLeases, d.Milliseconds())
	}
	row := peerRow{workload: fmt.Sprintf("semaphore: %d sessions, %d leases", f.sessions, peerSemLeases), key: "semaphore"}
	return w.timed(row, round, cmd, "Kazoo's Semaphore, its own layout")
}

// deleteTree removes path and everything under it (Kazoo's parents are
// persistent nodes). Errors are ignored: it is cleanup.
func (b *bench) deleteTree(path string) {
	r, err := dialRaw(b.servers, b.f.sessionTimeout)
	if err != nil {
		return
	}
	defer r.Close()
	var del func(p string)
	del = func(p string) {
		kids, _, err := r.conn.Children(p)
		if err != nil {
			return
		}
		for _, k := range kids {
			del(p + "/" + k)
		}
		if err := r.conn.Delete(p, -1); err != nil && !errors.Is(err, recipes.ErrNoNode) {
			return
		}
	}
	del(path)
}

// peerSetup describes the peers that ran, for the report.
var peerSetup []string

// peersTable is the report's peers section: one row per workload; empty
// when the peers did not run.
func peersTable() string {
	if len(peerRows) == 0 {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n## Peers: Curator 5.4 and Kazoo 2.8\n\n")
	fmt.Fprintf(&sb, "The same workloads run by ours, by Apache Curator and by Kazoo against the same server, in the same rounds (the side that goes first rotates); each peer is one process started once, its sessions connected and warmed up before the clock starts. %s. CPU is each client process's own CPU time (user+system, all threads) per operation: ours from getrusage while ours runs, a peer's from its process CPU clock (clock_gettime, nanoseconds) read by the benchmark around each command (for queue, from the holder's release), or, where that clock cannot be read, the peer's own figure (the JVM's getProcessCpuTime, in 10 ms ticks; Python's time.process_time()). ours/peer is the ratio of the rates (for queue, the peer's time per hand-off over ours): above 1, ours is faster.\n\n",
		strings.Join(peerSetup, "; "))
	fmt.Fprintf(&sb, "| workload | ours | Curator 5.4 | ours/Curator | Kazoo 2.8 | ours/Kazoo |\n|---|---|---|---|---|---|\n")
	for _, r := range peerRows {
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s |\n", r.workload, r.cell("ours"), r.cell("curator"), r.ratioCell("curator"), r.cell("kazoo"), r.ratioCell("kazoo"))
	}
	return sb.String()
}

// peersMarkdown writes the -md report when the peers are the only
// scenario with figures for it (perfScenarios writes it otherwise).
func (b *bench) peersMarkdown() error {
	if mdFile == "" || len(report) > 0 || len(peerRows) == 0 && cacheMD == "" {
		return nil
	}
	if err := b.writeMarkdown(mdFile); err != nil {
		return fmt.Errorf("-md: %w", err)
	}
	fmt.Printf("\nwrote %s\n", mdFile)
	return nil
}

// -------------------------------------------------------------- workqueue

// peerQueueItems and peerQueueConsumers shape the workqueue workload.
const (
	peerQueueItems     = 1000
	peerQueueConsumers = 4
)

// workqueue: one producer session puts items into a work queue while 4
// consumer sessions take them, ours (package queue) against Curator's
// DistributedQueue and SimpleDistributedQueue (Kazoo's queues have their
// own layout: no row); items consumed per second, from the first put to
// the last item consumed.
func (w *peerWork) workqueue() ([]string, bool, error) {
	if len(w.clients) < peerQueueConsumers+1 {
		return nil, false, fmt.Errorf("workqueue needs %d sessions (-sessions)", peerQueueConsumers+1)
	}
	var lines []string
	pass := true
	for _, kind := range []string{"dq", "simple"} {
		label := map[string]string{"dq": "DistributedQueue", "simple": "SimpleDistributedQueue"}[kind]
		fmt.Printf("\n-- peers workqueue %s: 1 producer puts %d items while %d consumers take them, each a session (items/s)\n", label, peerQueueItems, peerQueueConsumers)
		ours := peerSide{label: "ours", key: "ours", run: func(r int) (peerFig, error) {
			return w.oursWorkqueue(kind, fmt.Sprintf("%s/r%d", w.path("workqueue-"+kind, "ours"), r))
		}}
		sides := []peerSide{ours}
		if p := w.proc("curator"); p != nil {
			sides = append(sides, peerSide{label: p.label, key: p.key, run: func(r int) (peerFig, error) {
				a, err := p.do(3*time.Minute, "workqueue %s/r%d %d %s %d", w.path("workqueue-"+kind, p.key), r, peerQueueItems, kind, peerQueueConsumers)
				if err != nil {
					return peerFig{}, err
				}
				return peerFig{rate: float64(a.ops) / a.seconds, cpuUS: a.cpu * 1e6 / float64(max(a.total, 1))}, nil
			}})
		}
		row := peerRow{workload: fmt.Sprintf("workqueue %s: 1 producer, %d consumers, %d items (items/s)", label, peerQueueConsumers, peerQueueItems), key: "workqueue-" + kind}
		row.note = map[string]string{}
		if w.proc("kazoo") != nil {
			row.note["kazoo"] = "Kazoo's queues have their own layout: no row"
		}
		line, ok, err := w.compare(row, w.b.f.rounds, sides)
		if err != nil {
			return lines, false, err
		}
		lines, pass = append(lines, line), pass && ok
	}
	return lines, pass, nil
}

// oursWorkqueue runs one round of the workqueue workload with package
// queue: a Queue (normal mode) or a SimpleQueue.
func (w *peerWork) oursWorkqueue(kind, path string) (peerFig, error) {
	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
	defer cancel()
	var (
		got  atomic.Int64
		all  = make(chan struct{})
		once sync.Once
		wg   sync.WaitGroup
	)
	count := func() {
		if got.Add(1) == peerQueueItems {
			once.Do(func() { close(all) })
		}
	}
	var put func([]byte) error
	var closers []func(context.Context) error
	if kind == "dq" {
		for i := 1; i <= peerQueueConsumers; i++ {
			q, err := queue.New(w.clients[i], path, queue.WithConsumer(queue.ConsumerFunc(func(context.Context, *queue.Message) error {
				count()
				return nil
			})))
			if err != nil {
				return peerFig{}, err
			}
			if err := q.Start(ctx); err != nil {
				return peerFig{}, err
			}
			closers = append(closers, q.Close)
		}
		p, err := queue.New(w.clients[0], path)
		if err != nil {
			return peerFig{}, err
		}
		put = func(b []byte) error { return p.Put(ctx, b) }
	} else {
		cctx, ccancel := context.WithCancel(ctx)
		defer ccancel()
		for i := 1; i <= peerQueueConsumers; i++ {
			q, err := queue.NewSimple(w.clients[i], path)
			if err != nil {
				return peerFig{}, err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if _, err := q.Take(cctx); err != nil {
						return
					}
					count()
				}
			}()
		}
		defer wg.Wait()
		defer ccancel()
		p, err := queue.NewSimple(w.clients[0], path)
		if err != nil {
			return peerFig{}, err
		}
		put = func(b []byte) error { return p.Offer(ctx, b) }
	}
	defer func() {
		for _, c := range closers {
			c(context.Background())
		}
	}()
	start, cpu := time.Now(), cpuTime()
	for range peerQueueItems {
		if err := put([]byte("job")); err != nil {
			return peerFig{}, err
		}
	}
	select {
	case <-all:
	case <-ctx.Done():
		return peerFig{}, fmt.Errorf("workqueue: %d of %d items consumed: %w", got.Load(), peerQueueItems, ctx.Err())
	}
	took, used := time.Since(start), cpuTime()-cpu
	return peerFig{rate: peerQueueItems / took.Seconds(), cpuUS: cpuPerOp(used, peerQueueItems)}, nil
}
