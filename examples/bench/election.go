package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// ------------------------------------------------------------------- failover

// failover: electionN participants, each an OS process of its own (this
// binary re-run as a worker, one session each, connected through a
// zktest.Proxy of its own), take part in one election, an election.Latch
// or an election.Selector. The leader's term is ended in one of three
// ways, and the time from that end to the next leader's term start (its
// Term.Started, by the same clock: all processes run on this machine) is
// the failover time:
//
//   - graceful: the leader's worker is told to resign (Latch.Close, or the
//     Selector's LeadFunc returns); the end is when it starts to;
//   - kill: the leader's process gets SIGKILL; its session lives on until
//     the server expires it;
//   - blackhole: the leader's proxy silently drops everything; the server
//     expires the session, and the old leader's own client gives up its
//     term (SUSPENDED) on its own, which is reported too.
//
// Figures are reported against the negotiated session timeout: graceful
// should take milliseconds, kill and blackhole about one session timeout:
// the server expires a session one timeout after it last heard from it,
// which may be up to a ping interval (a third of the timeout) before the
// fault, and checks expiry in tickTime buckets, so from a little under one
// timeout to a tick over it.
// After each failover the old leader's process is killed and a fresh one
// joins, so the next repetition again has electionN participants.

const electionN = 3

var failovers int

func init() {
	flag.IntVar(&failovers, "failovers", 3, "failover: repetitions of each way of ending a term, per recipe (latch, selector)")
}

var failoverModes = []string{"graceful", "kill", "blackhole"}

// electEvent is a line of a participant worker.
type electEvent struct {
	slot, gen int
	kind      string // READY, LEADER, END, RESIGNING, ERROR, EOF
	t         time.Time
	arg       string
}

// electSlot is one participant: its proxy and its current worker process.
type electSlot struct {
	proxy *zktest.Proxy
	cmd   *exec.Cmd
	in    io.WriteCloser
	gen   int
	done  chan struct{} // closed when the worker's output ends
}

type electionRun struct {
	b       *bench
	recipe  string // "latch" or "selector"
	path    string
	slots   []*electSlot
	events  chan electEvent
	timeout time.Duration // negotiated session timeout, from the workers
}

func (b *bench) failover(ctx context.Context) (string, error) {
	f := b.f
	if failovers < 1 {
		return "", fmt.Errorf("-failovers must be at least 1")
	}
	fmt.Printf("\n== failover: %d participants (OS processes, a session each, each through a proxy of its own) in one election; the leader's term ends %d times each way: %s\n",
		electionN, failovers, strings.Join(failoverModes, ", "))
	fmt.Println("   figure: time from the end of the leader's term to the next leader's term start, against the session timeout")
	pc, err := recipes.Connect(context.Background(), b.servers, recipes.WithSessionTimeout(f.sessionTimeout))
	if err != nil {
		return "", err
	}
	defer pc.Close(context.Background())
	var lines []string
	tw := table("recipe", "way", "n", "failover median", "max", "median/session timeout", "max/session timeout", "old leader stepped down after (median)", "overlaps")
	for _, recipe := range []string{"latch", "selector"} {
		er := &electionRun{b: b, recipe: recipe, path: b.root + "/failover/" + recipe, events: make(chan electEvent, 4096)}
		res, err := er.run(ctx, pc)
		er.close()
		if err != nil {
			return "", fmt.Errorf("%s: %w", recipe, err)
		}
		for _, mode := range failoverModes {
			r := res[mode]
			med, mx := medianDur(r.failover), slices.Max(r.failover)
			st := er.timeout
			down := "—"
			if len(r.stepDown) > 0 {
				down = ms(medianDur(r.stepDown))
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%.3f\t%.3f\t%s\t%d\t\n", recipe, mode, len(r.failover), ms(med), ms(mx),
				med.Seconds()/st.Seconds(), mx.Seconds()/st.Seconds(), down, r.overlaps)
			addReport(reportRow{
				workload: fmt.Sprintf("failover: election.%s, %s, %d participants", map[string]string{"latch": "Latch", "selector": "Selector"}[recipe], mode, electionN),
				ours:     fmt.Sprintf("median %s, max %s (n=%d)", ms(med), ms(mx), len(r.failover)),
				base:     fmt.Sprintf("session timeout %v", st),
				ratio:    med.Seconds() / st.Seconds(),
				note:     failoverNote(mode, mx, st, down, r.overlaps),
			})
			lines = append(lines, fmt.Sprintf("RESULT scenario=failover recipe=%s way=%s participants=%d n=%d failover_median_ms=%.3f failover_max_ms=%.3f session_timeout_ms=%d median_per_timeout=%.4f max_per_timeout=%.4f step_down_median_ms=%s overlaps=%d",
				recipe, mode, electionN, len(r.failover), msf(med), msf(mx), st.Milliseconds(), med.Seconds()/st.Seconds(), mx.Seconds()/st.Seconds(),
				strings.TrimSuffix(strings.ReplaceAll(down, "—", "na"), "ms"), r.overlaps))
		}
	}
	tw.Flush()
	fmt.Println("(old leader stepped down: from the fault to the old leader's own term end; overlaps: failovers where the new term began before the old leader's ended)")
	return strings.Join(lines, "\n"), nil
}

func failoverNote(mode string, mx, st time.Duration, down string, overlaps int) string {
	switch mode {
	case "graceful":
		return fmt.Sprintf("ratio = median failover / session timeout (expected ≪ 1: one watch event); max/timeout %.3f", mx.Seconds()/st.Seconds())
	case "kill":
		return fmt.Sprintf("ratio = median failover / session timeout (expected ≈ 1: the server expires the dead session one timeout after its last ping); max/timeout %.3f", mx.Seconds()/st.Seconds())
	default:
		return fmt.Sprintf("ratio = median failover / session timeout (expected ≈ 1); max/timeout %.3f; the cut-off leader gave up its term after %s (median), %d overlap(s) of old and new terms", mx.Seconds()/st.Seconds(), down, overlaps)
	}
}

type failoverResult struct {
	failover []time.Duration
	stepDown []time.Duration // blackhole: fault to the old leader's own END
	overlaps int
}

func medianDur(ds []time.Duration) time.Duration {
	fs := make([]float64, len(ds))
	for i, d := range ds {
		fs[i] = float64(d)
	}
	return time.Duration(median(fs))
}

func (er *electionRun) run(ctx context.Context, pc *recipes.Client) (map[string]*failoverResult, error) {
	b := er.b
	for i := range electionN {
		p, err := zktest.ListenProxy(b.servers[i%len(b.servers)])
		if err != nil {
			return nil, err
		}
		er.slots = append(er.slots, &electSlot{proxy: p})
		if err := er.start(i); err != nil {
			return nil, err
		}
	}
	// The first leader.
	leader, _, err := er.waitLeader(-1, 30*time.Second)
	if err != nil {
		return nil, err
	}
	res := map[string]*failoverResult{}
	for _, m := range failoverModes {
		res[m] = &failoverResult{}
	}
	limit := 3*er.timeout + 20*time.Second
	for rep := range failovers {
		for k := range failoverModes {
			mode := failoverModes[(rep+k)%len(failoverModes)] // the order rotates
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := er.waitParticipants(ctx, pc); err != nil {
				return nil, err
			}
			s := er.slots[leader]
			var t0 time.Time
			switch mode {
			case "graceful":
				if _, err := fmt.Fprintln(s.in, "RESIGN"); err != nil {
					return nil, err
				}
			case "kill":
				t0 = time.Now()
				if err := s.cmd.Process.Kill(); err != nil {
					return nil, err
				}
			case "blackhole":
				t0 = time.Now()
				s.proxy.Blackhole()
			}
			var (
				next           = -1
				t1, end        time.Time
				ended, resigns bool
			)
			deadline := time.Now().Add(limit)
			for next < 0 || (mode == "blackhole" && !ended) {
				var ev electEvent
				select {
				case ev = <-er.events:
				case <-time.After(time.Until(deadline)):
					return nil, fmt.Errorf("%s: no new leader (or no end of the old term) within %v", mode, limit)
				}
				if ev.gen != er.slots[ev.slot].gen {
					continue // a retired worker
				}
				switch {
				case ev.kind == "ERROR":
					return nil, fmt.Errorf("participant %d: %s", ev.slot, ev.arg)
				case ev.slot == leader && ev.kind == "RESIGNING":
					t0, resigns = ev.t, true
				case ev.slot == leader && ev.kind == "END":
					end, ended = ev.t, true
				case ev.slot == leader && ev.kind == "EOF" && mode != "kill":
					return nil, fmt.Errorf("%s: the leader's worker ended", mode)
				case ev.slot != leader && ev.kind == "LEADER":
					if next >= 0 {
						return nil, fmt.Errorf("%s: participants %d and %d both took a term", mode, next, ev.slot)
					}
					next, t1 = ev.slot, ev.t
				case ev.slot != leader && (ev.kind == "END" || ev.kind == "EOF"):
					return nil, fmt.Errorf("%s: participant %d: unexpected %s", mode, ev.slot, ev.kind)
				}
			}
			if mode == "graceful" && !resigns {
				return nil, fmt.Errorf("graceful: the leader did not report its resignation")
			}
			r := res[mode]
			r.failover = append(r.failover, t1.Sub(t0))
			if mode == "blackhole" {
				r.stepDown = append(r.stepDown, end.Sub(t0))
			}
			if mode == "blackhole" && t1.Before(end) {
				r.overlaps++
			}
			fmt.Printf("   %s %-9s failover %s", er.recipe, mode, ms(t1.Sub(t0)))
			if mode == "blackhole" {
				fmt.Printf(" (old term ended %s after the fault)", ms(end.Sub(t0)))
			}
			fmt.Println()
			// Retire the old leader's worker and start a fresh one.
			if err := er.retire(leader); err != nil {
				return nil, err
			}
			s.proxy.Restore()
			if err := er.start(leader); err != nil {
				return nil, err
			}
			leader = next
		}
	}
	return res, nil
}

// waitParticipants waits until the election has electionN nodes, the
// non-leaders queued, and a little more for their watches to be set.
func (er *electionRun) waitParticipants(ctx context.Context, pc *recipes.Client) error {
	deadline := time.Now().Add(3*er.timeout + 20*time.Second)
	for {
		ps, err := election.Participants(ctx, pc, er.path)
		if err == nil && len(ps) == electionN {
			time.Sleep(100 * time.Millisecond)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d participants after %v (want %d; err %v)", len(ps), 3*er.timeout+20*time.Second, electionN, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLeader waits for a LEADER event from a current worker other than
// skip.
func (er *electionRun) waitLeader(skip int, limit time.Duration) (int, time.Time, error) {
	deadline := time.After(limit)
	for {
		select {
		case ev := <-er.events:
			if ev.gen != er.slots[ev.slot].gen {
				continue
			}
			switch {
			case ev.kind == "ERROR":
				return 0, time.Time{}, fmt.Errorf("participant %d: %s", ev.slot, ev.arg)
			case ev.kind == "LEADER" && ev.slot != skip:
				return ev.slot, ev.t, nil
			}
		case <-deadline:
			return 0, time.Time{}, fmt.Errorf("no leader within %v", limit)
		}
	}
}

// start starts slot i's worker and waits for its READY.
func (er *electionRun) start(i int) error {
	s := er.slots[i]
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	s.gen++
	gen := s.gen
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envWorker+"="+er.recipe, envServers+"="+s.proxy.Addr(),
		envPath+"="+er.path, envTimeout+"="+er.b.f.sessionTimeout.String(), envID+"="+fmt.Sprintf("p%d.%d", i, gen))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start participant: %w", err)
	}
	s.cmd, s.in, s.done = cmd, in, make(chan struct{})
	ready := make(chan electEvent, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(out)
		first := true
		for sc.Scan() {
			kind, rest, _ := strings.Cut(sc.Text(), " ")
			ev := electEvent{slot: i, gen: gen, kind: kind, arg: rest}
			if ns, err := strconv.ParseInt(rest, 10, 64); err == nil {
				ev.t = time.Unix(0, ns)
			}
			if first {
				first = false
				ready <- ev
				continue
			}
			er.events <- ev
		}
		if first {
			ready <- electEvent{kind: "EOF"}
		}
		er.events <- electEvent{slot: i, gen: gen, kind: "EOF"}
	}()
	select {
	case ev := <-ready:
		if ev.kind != "READY" {
			return fmt.Errorf("participant %d did not start (%s %s)", i, ev.kind, ev.arg)
		}
		d, err := time.ParseDuration(ev.arg)
		if err != nil {
			return fmt.Errorf("participant %d: bad READY %q", i, ev.arg)
		}
		er.timeout = d
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		return fmt.Errorf("participant %d: no READY within 30s", i)
	}
	return nil
}

// retire kills slot i's worker (if still running) and reaps it.
func (er *electionRun) retire(i int) error {
	s := er.slots[i]
	if s.cmd == nil {
		return nil
	}
	s.gen++ // its remaining events are stale
	_ = s.cmd.Process.Kill()
	_ = s.in.Close()
	select {
	case <-s.done: // its output read to the end (er.events has room to spare)
	case <-time.After(10 * time.Second):
	}
	_ = s.cmd.Wait()
	s.cmd = nil
	return nil
}

func (er *electionRun) close() {
	for i, s := range er.slots {
		_ = er.retire(i)
		_ = s.proxy.Close()
	}
}

// ---------------------------------------------------------- the participant

// envID names a failover participant (its node's data).
const envID = "ZKRECIPES_BENCH_ID"

// electionWorker is the body of a failover participant: kind is "latch"
// or "selector". It prints READY <negotiated session timeout> once in the
// election, LEADER <t> at each term start (Term.Started), END <t> when a
// term ends, and, told RESIGN on stdin, RESIGNING <t> just before it gives
// up its term (times in Unix nanoseconds); EXIT or end of input ends it.
func electionWorker(kind string, servers []string, path string, timeout time.Duration) error {
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	emit := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
		mu.Unlock()
	}
	c, err := recipes.Connect(context.Background(), servers, recipes.WithSessionTimeout(timeout))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	ctx := context.Background()
	id := os.Getenv(envID)
	resign := make(chan struct{})
	var closeFn func() error
	switch kind {
	case "latch":
		l, err := election.NewLatch(c, path, id)
		if err != nil {
			return err
		}
		if err := l.Start(ctx); err != nil {
			return err
		}
		emit("READY %v", c.SessionTimeout())
		go func() {
			for {
				t, err := l.Await(ctx)
				if err != nil {
					return
				}
				emit("LEADER %d", t.Started().UnixNano())
				<-t.Done()
				emit("END %d", time.Now().UnixNano())
			}
		}()
		closeFn = func() error {
			emit("RESIGNING %d", time.Now().UnixNano())
			return l.Close(ctx)
		}
	case "selector":
		s, err := election.NewSelector(c, path, id, func(ctx context.Context, t *election.Term) error {
			emit("LEADER %d", t.Started().UnixNano())
			select {
			case <-ctx.Done():
				emit("END %d", time.Now().UnixNano())
			case <-resign:
				emit("RESIGNING %d", time.Now().UnixNano())
			}
			return nil
		})
		if err != nil {
			return err
		}
		emit("READY %v", c.SessionTimeout())
		if err := s.Start(ctx); err != nil {
			return err
		}
		defer s.Close(ctx)
		closeFn = func() error { close(resign); return nil }
	default:
		return fmt.Errorf("unknown worker kind %q", kind)
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "RESIGN":
			if err := closeFn(); err != nil {
				emit("ERROR %v", err)
				return err
			}
		case "EXIT":
			return nil
		}
	}
	return in.Err()
}
