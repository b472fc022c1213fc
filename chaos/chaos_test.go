//go:build chaos

package chaos

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

var (
	flagDuration = flag.Duration("duration", 5*time.Minute, "how long TestChaos injects faults")
	flagSeed     = flag.Uint64("seed", 1, "seed of the fault schedule (math/rand/v2 PCG)")
	flagKeep     = flag.Bool("keep", false, "keep the worker logs even when the run passes")
	flagFaults   = flag.String("faults", "", "fault kinds to inject: comma-separated names, or \"all\" (default: every kind on ZooKeeper 3.9.4 or later; on an older server, which loses committed transactions when members are paused or killed, the worker faults kill-holder, pause-holder and blackhole-holder only; see faultKinds)")
	flagPace     = flag.String("pace", "normal", "fault pacing: normal, or dense (80+ faults in 5 minutes of -faults all; see pacings)")
	flagSabotage = flag.Bool("sabotage", false, "make some workers break the rules on purpose (mutex writes without the lock, latch heartbeats after the term, counter increments written without a version condition, a queue consumer deleting its own lock node and reporting its ack as ok): the run must then fail")
)

// workers is how many worker processes run each role.
var workers = []struct {
	role string
	n    int
}{
	{roleMutex, 3}, {roleRWWrite, 2}, {roleRWRead, 2}, {roleSem, 3}, {roleSelector, 2}, {roleLatch, 2}, {roleCounter, 2},
}

// unavailBound is the longest a recipe may stay unavailable after a fault
// heals: the workers' session timeout + 2 s.
const unavailBound = workerSession + 2*time.Second

// TestChaos runs the chaos suite: see the package documentation.
func TestChaos(t *testing.T) {
	if os.Getenv(envRole) != "" {
		t.Skip("worker process")
	}
	began := time.Now()
	p, ok := pacings[*flagPace]
	if !ok {
		t.Fatalf("-pace %q: want normal or dense", *flagPace)
	}
	faultPace = p
	if _, err := parseFaults(*flagFaults, ""); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "zkchaos-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || *flagKeep {
			t.Logf("worker logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})

	reconfig, err := wantReconfig(*flagFaults, *flagTLS) // reconfig_test.go
	if err != nil {
		t.Fatal(err)
	}
	zopts := ensembleOpts(zktest.WithTickTime(200 * time.Millisecond))
	if reconfig {
		zopts = append(zopts, zktest.WithReconfig())
	}
	zkc := zktest.StartEnsemble(t, 3, zopts...)
	if !zkc.Controllable() {
		t.Skip("the chaos suite injects faults into the servers: it needs a local ZooKeeper installation, not ZK_TEST_SERVERS")
	}
	enabled, err := parseFaults(*flagFaults, zkc.Version())
	if err != nil {
		t.Fatal(err)
	}
	enabled[fReconfigReplace] = enabled[fReconfigReplace] && reconfig
	admin, err := dial(context.Background(), zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	for _, p := range []string{root, root + "/locks", root + "/rec", root + "/hist", root + "/lead", histMutex, histRW, gaugePath, leadSel, leadLatch} {
		if _, err := admin.Create(context.Background(), p, nil, 0); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	for _, p := range []string{recMutex, recRW} {
		if _, err := admin.Create(context.Background(), p, []byte("0 init"), 0); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	if _, err := admin.Create(context.Background(), counterPath, make([]byte, 8), 0); err != nil {
		t.Fatalf("create %s: %v", counterPath, err)
	}
	for _, p := range setupPaths { // hooks_test.go
		if _, err := admin.Create(context.Background(), p, nil, 0); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}

	seed := *flagSeed
	h := &harness{
		t:       t,
		zkc:     zkc,
		dir:     dir,
		seed:    seed,
		enabled: enabled,
		kinds:   rand.New(rand.NewPCG(seed, 0x6b696e6473)),
		params:  rand.New(rand.NewPCG(seed, 0x706172616d73)),
		lastOp:  map[string]time.Time{},
		stallCh: make(chan stallEvent, 64),
		slots:   []int{0, 1, 2},
		reconf:  reconfig,
	}
	t.Cleanup(h.killAll)
	for _, wk := range workers {
		for i := range wk.n {
			p := &proc{h: h, role: wk.role, name: fmt.Sprintf("%s-%d", wk.role, i+1)}
			var addrs []string
			for slot, s := range zkc.Servers() {
				px := h.newProxy(slot, s)
				p.proxies = append(p.proxies, px)
				addrs = append(addrs, px.Addr())
			}
			p.addrs = strings.Join(addrs, ",")
			h.procs = append(h.procs, p)
		}
	}
	for _, p := range h.procs {
		if err := p.start(); err != nil {
			t.Fatal(err)
		}
	}
	if !waitFor(2*time.Minute, func() bool { return h.readyCount.Load() >= int64(len(h.procs)) }) {
		t.Fatalf("only %d of %d workers connected", h.readyCount.Load(), len(h.procs))
	}
	warm := time.Now()
	if h.waitRecovered(warm.Add(-time.Hour), time.Minute).IsZero() {
		t.Fatalf("not every recipe completed an operation within a minute of the start: %v", h.opsSnapshot())
	}
	t.Logf("%d workers running; injecting faults for %v (seed %d), logs in %s", len(h.procs), *flagDuration, seed, dir)

	cw := startCacheWorker(t, h) // cache_test.go
	var stopWatchers []func()
	for _, start := range roleWatchers { // hooks_test.go
		stopWatchers = append(stopWatchers, start(h))
	}
	runStart := time.Now()
	h.runFaults(runStart.Add(*flagDuration))
	runEnd := time.Now()
	var watchers sync.WaitGroup // stopped beside the cache worker
	for _, stop := range stopWatchers {
		watchers.Add(1)
		go func() {
			defer watchers.Done()
			stop()
		}()
	}
	cw.stop()
	watchers.Wait()

	h.stopWorkers(time.Minute)
	left := h.checkLeftovers(admin, 30*time.Second)

	rep := h.check(admin, left)
	for _, v := range rep.violations {
		t.Errorf("VIOLATION: %s", v)
	}
	for _, p := range h.problemList() {
		t.Errorf("PROBLEM: %s", p)
	}
	for _, n := range rep.notes {
		t.Log(n)
	}
	summary := rep.summary(h, runEnd.Sub(runStart), time.Since(began))
	fmt.Println(summary)
	cw.report()
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(summary+"\n"+strings.Join(rep.notes, "\n")+"\n"), 0o644); err != nil {
		t.Log(err)
	}
}

// harness runs the workers and the faults.
type harness struct {
	t    *testing.T
	zkc  *zktest.Cluster
	dir  string
	seed uint64

	enabled map[string]bool
	kinds   *rand.Rand // which fault comes next (the schedule)
	params  *rand.Rand // targets and durations

	procs      []*proc
	readyCount atomic.Int64
	stopping   atomic.Bool

	stallSeq int
	stallCh  chan stallEvent

	// The ensemble's three places (slots): slots[s] is the member at
	// place s (zk-reconfig-replace puts a new one there), and every proxy
	// of place s goes to it (reconfig_test.go).
	slots       []int
	slotProxies [3][]*zktest.Proxy
	reconf      bool // the ensemble was started WithReconfig

	mu       sync.Mutex
	lastOp   map[string]time.Time // by role, as received
	opCount  map[string]int
	problems []string
	faults   []*fault
}

type stallEvent struct {
	p   *proc
	seg int
	id  string
}

func (h *harness) problem(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.problems = append(h.problems, fmt.Sprintf(format, args...))
}

func (h *harness) problemList() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.problems...)
}

func (h *harness) noteOp(role string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastOp[role] = time.Now()
	if h.opCount == nil {
		h.opCount = map[string]int{}
	}
	h.opCount[role]++
}

func (h *harness) opsSnapshot() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for k, v := range h.opCount {
		out[k] = v
	}
	return out
}

// waitRecovered waits until every role has completed an operation after
// since, and returns when that was (zero if not within d).
func (h *harness) waitRecovered(since time.Time, d time.Duration) time.Time {
	var at time.Time
	waitFor(d, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		latest := since
		for _, r := range roles {
			op := h.lastOp[r]
			if !op.After(since) {
				return false
			}
			if op.After(latest) {
				latest = op
			}
		}
		at = latest
		return true
	})
	return at
}

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// proc is one worker: a process (restarted with a new log segment after
// a SIGKILL) and its three proxies, one per server.
type proc struct {
	h       *harness
	role    string
	name    string
	proxies []*zktest.Proxy
	addrs   string

	mu       sync.Mutex
	seg      int
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	done     chan struct{} // closed once the current process is reaped
	expected bool          // its exit is expected (killed or stopped)
	exitErr  error
}

func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seg++
	seg := p.seg
	base := filepath.Join(p.h.dir, fmt.Sprintf("%s.%d", p.name, seg))
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$", "-test.count=1", "-test.timeout=3h")
	cmd.Env = append(os.Environ(),
		envRole+"="+p.role, envName+"="+p.name, envSeg+"="+strconv.Itoa(seg),
		envServers+"="+p.addrs, envLog+"="+base+".log", envSeed+"="+strconv.FormatUint(p.h.seed, 10))
	if *flagSabotage {
		cmd.Env = append(cmd.Env, envSabot+"=1")
	}
	if e := workerTLSEnv(p.h.zkc); e != "" {
		cmd.Env = append(cmd.Env, e)
	}
	if p.h.reconf {
		cmd.Env = append(cmd.Env, envReconfig+"=1")
	}
	errf, err := os.Create(base + ".stderr")
	if err != nil {
		return err
	}
	cmd.Stderr = errf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		errf.Close()
		return err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		errf.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		errf.Close()
		return fmt.Errorf("start worker %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.stdin, p.done, p.expected, p.exitErr = cmd, stdin, done, false, nil
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.h.onLine(p, seg, sc.Text())
		}
		err := cmd.Wait()
		errf.Close()
		p.mu.Lock()
		expected := p.expected
		p.exitErr = err
		p.mu.Unlock()
		close(done)
		if !expected {
			p.h.problem("worker %s.%d exited unexpectedly (%v); stderr: %s", p.name, seg, err, tailFile(filepath.Join(p.h.dir, fmt.Sprintf("%s.%d.stderr", p.name, seg))))
			if !p.h.stopping.Load() {
				time.Sleep(200 * time.Millisecond)
				if err := p.start(); err != nil {
					p.h.problem("restart %s: %v", p.name, err)
				}
			}
		}
	}()
	return nil
}

func (h *harness) onLine(p *proc, seg int, line string) {
	switch {
	case line == "OP":
		h.noteOp(p.role)
	case line == "READY":
		h.readyCount.Add(1)
	case strings.HasPrefix(line, "STALLED "):
		select {
		case h.stallCh <- stallEvent{p, seg, strings.TrimPrefix(line, "STALLED ")}:
		default:
		}
	}
}

func (p *proc) current() (int, *exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seg, p.cmd, p.done
}

func (p *proc) send(line string) {
	p.mu.Lock()
	w := p.stdin
	p.mu.Unlock()
	_, _ = io.WriteString(w, line+"\n")
}

func (p *proc) signal(sig syscall.Signal) error {
	_, cmd, _ := p.current()
	return cmd.Process.Signal(sig)
}

// kill SIGKILLs the current process and waits until it is reaped.
func (p *proc) kill() {
	p.mu.Lock()
	p.expected = true
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	_ = cmd.Process.Kill()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.h.problem("worker %s not reaped 30s after SIGKILL", p.name)
	}
}

func (h *harness) killAll() {
	h.stopping.Store(true)
	for _, p := range h.procs {
		if _, cmd, _ := p.current(); cmd != nil {
			p.kill()
		}
	}
}

// stopWorkers asks every worker to stop and waits for them to exit cleanly.
func (h *harness) stopWorkers(d time.Duration) {
	h.stopping.Store(true)
	for _, p := range h.procs {
		p.mu.Lock()
		p.expected = true
		p.mu.Unlock()
		p.send("stop")
	}
	deadline := time.After(d)
	for _, p := range h.procs {
		seg, _, done := p.current()
		select {
		case <-done:
			p.mu.Lock()
			err := p.exitErr
			p.mu.Unlock()
			if err != nil {
				h.problem("worker %s.%d did not exit cleanly: %v; stderr: %s", p.name, seg, err, tailFile(filepath.Join(h.dir, fmt.Sprintf("%s.%d.stderr", p.name, seg))))
			}
		case <-deadline:
			h.problem("worker %s.%d did not stop within %v", p.name, seg, d)
			p.kill()
		}
	}
}

// checkLeftovers waits until the recipe paths hold no ephemeral node and the
// gauge is empty: the workers closed their sessions, and the server has had
// time to expire those of the killed ones.
func (h *harness) checkLeftovers(admin *recipes.Client, d time.Duration) []string {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := admin.WaitConnected(ctx); err != nil {
		return []string{fmt.Sprintf("(admin client not connected at the end: %v)", err)}
	}
	var left []string
	ok := waitFor(d, func() bool {
		left = left[:0]
		if err := walkEphemerals(admin, root+"/locks", &left); err != nil {
			left = append(left, "error: "+err.Error())
			return false
		}
		kids, _, err := admin.Children(ctx, gaugePath)
		if err != nil {
			left = append(left, "error: "+err.Error())
			return false
		}
		for _, k := range kids {
			left = append(left, gaugePath+"/"+k)
		}
		return len(left) == 0
	})
	if ok {
		return nil
	}
	return left
}

func walkEphemerals(c *recipes.Client, p string, out *[]string) error {
	kids, _, err := c.Children(context.Background(), p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		child := p + "/" + k
		ok, st, err := c.Exists(context.Background(), child)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if st.EphemeralOwner != 0 {
			*out = append(*out, fmt.Sprintf("%s (session %#x)", child, st.EphemeralOwner))
			continue
		}
		if err := walkEphemerals(c, child, out); err != nil {
			return err
		}
	}
	return nil
}

func tailFile(name string) string {
	data, _ := os.ReadFile(name)
	s := strings.TrimSpace(string(data))
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return s
}

// TestDefaultFaults checks which kinds -faults "" picks for each server: the
// worker faults alone on a server that loses committed transactions when
// members rejoin, every kind from 3.9.4.
func TestDefaultFaults(t *testing.T) {
	workerOnly := []string{fKillHolder, fPauseHolder, fBlackhole}
	for _, tc := range []struct {
		version string
		every   bool
	}{
		{"3.8.0", false}, {"3.8.4", false}, {"3.9.3", false}, {"3.9.4", true}, {"3.9.6", true},
		{"3.10.0", true}, {"4.0.0", true}, {"", false}, {"unknown", false},
	} {
		on, err := parseFaults("", tc.version)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range faultKinds {
			want := (tc.every || slices.Contains(workerOnly, k.name)) && k.name != fReconfigReplace
			if on[k.name] != want {
				t.Errorf("server %q: %s injected %v, want %v", tc.version, k.name, on[k.name], want)
			}
		}
		all, _ := parseFaults("all", tc.version)
		for _, k := range faultKinds {
			if want := k.name != fReconfigReplace || tc.every; all[k.name] != want {
				t.Errorf("server %q: -faults all injects %s: %v, want %v", tc.version, k.name, all[k.name], want)
			}
		}
	}
	if on, err := parseFaults(fFollowerPause, "3.8.0"); err != nil || !on[fFollowerPause] || on[fKillHolder] {
		t.Errorf("-faults %s on 3.8.0: %v, %v", fFollowerPause, on, err)
	}
	if on, err := parseFaults(fReconfigReplace, "3.8.0"); err != nil || !on[fReconfigReplace] {
		t.Errorf("-faults %s on 3.8.0: %v, %v", fReconfigReplace, on, err)
	}
	if _, err := parseFaults("no-such-kind", "3.9.6"); err == nil {
		t.Error("-faults no-such-kind accepted")
	}
}
