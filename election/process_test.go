package election_test

// Leader latches in separate OS processes. The participants run in helper
// processes, the test binary re-run (os.Args[0]
// -test.run=^TestElectionHelperProcess$) with its role in the environment,
// the idiom Go's own os/exec tests use; the test drives them over stdin
// and follows them on stdout.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// Environment of a helper process.
const (
	peEnvRole    = "ZKE_HELPER"  // "latches"
	peEnvServers = "ZKE_SERVERS" // comma-separated host:port
	peEnvPath    = "ZKE_PATH"    // latch path
	peEnvOut     = "ZKE_OUT"     // terms file
)

// peSession is the session timeout the helpers ask for.
const peSession = 2 * time.Second

// TestElectionHelperProcess is not a test: it is the body of the helper
// processes TestLatchAcrossProcesses starts. It returns at once unless
// ZKE_HELPER is set.
func TestElectionHelperProcess(t *testing.T) {
	peHelpers.Run(map[string]func() error{"latches": peHelperLatches})
}

// peHelpers starts the helper processes.
var peHelpers = testutil.Helpers{Test: "TestElectionHelperProcess", RoleEnv: peEnvRole, Timeout: 3 * time.Minute}

// peHelperLatches runs leader latches, one Client (2 s session) each, as
// told on stdin:
//
//	join <id>   start a latch for participant id; prints
//	            "JOINED <id> <node> <negotiated session timeout in ms>"
//	close <id>  prints "CLOSING <id> <now>", closes the latch and its
//	            client, prints "CLOSED <id>"
//	exit (or EOF) closes every latch, writes "done" and prints DONE
//
// Every term of every latch is recorded as it happens: "S <id> <start>"
// in ZKE_OUT and "LEADER <id> <start>" on stdout when it starts, where
// start is Term.Started(); "T <id> <start> <end>" and
// "ENDED <id> <start> <end>" when its Done closes, end taken then. All
// times are wall-clock Unix nanoseconds. A term that ended before its
// listener could look at it is reported as "MISSED <id>".
func peHelperLatches() error {
	servers := strings.Split(os.Getenv(peEnvServers), ",")
	path := os.Getenv(peEnvPath)
	f, err := os.OpenFile(os.Getenv(peEnvOut), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var (
		mu     sync.Mutex // orders the file and stdout
		werr   error
		termWG sync.WaitGroup
	)
	emit := func(fileLine, outLine string) {
		mu.Lock()
		defer mu.Unlock()
		if fileLine != "" {
			if _, err := f.WriteString(fileLine + "\n"); err != nil && werr == nil {
				werr = err
			}
		}
		if outLine != "" {
			fmt.Println(outLine)
		}
	}
	type member struct {
		c *recipes.Client
		l *election.Latch
	}
	members := map[string]*member{}
	closeMember := func(id string) error {
		m := members[id]
		delete(members, id)
		err := m.l.Close(ctx)
		m.c.Close(context.Background())
		return err
	}

	fmt.Println("READY")
	sc := bufio.NewScanner(os.Stdin)
loop:
	for sc.Scan() {
		cmd := strings.Fields(sc.Text())
		if len(cmd) == 0 {
			continue
		}
		if cmd[0] == "exit" {
			break loop
		}
		if len(cmd) != 2 {
			return fmt.Errorf("bad command %q", sc.Text())
		}
		id := cmd[1]
		switch cmd[0] {
		case "join":
			if members[id] != nil {
				return fmt.Errorf("%s joined twice", id)
			}
			c, err := testutil.Dial(context.Background(), servers, recipes.WithSessionTimeout(peSession))
			if err != nil {
				return err
			}
			l, err := election.NewLatch(c, path, id)
			if err != nil {
				c.Close(context.Background())
				return err
			}
			var last *election.Term // only the listener's goroutine uses it
			l.Listen(func(isLeader bool) {
				if !isLeader {
					return
				}
				term := l.Term()
				if term == nil || term == last {
					emit("", "MISSED "+id)
					return
				}
				last = term
				start := term.Started().UnixNano()
				emit(fmt.Sprintf("S %s %d", id, start), fmt.Sprintf("LEADER %s %d", id, start))
				termWG.Add(1)
				go func() {
					defer termWG.Done()
					<-term.Done()
					end := time.Now().UnixNano()
					emit(fmt.Sprintf("T %s %d %d", id, start, end), fmt.Sprintf("ENDED %s %d %d", id, start, end))
				}()
			})
			members[id] = &member{c: c, l: l}
			if err := l.Start(ctx); err != nil {
				return err
			}
			emit("", fmt.Sprintf("JOINED %s %s %d", id, l.Node(), c.SessionTimeout().Milliseconds()))
		case "close":
			if members[id] == nil {
				return fmt.Errorf("close %s: no such latch", id)
			}
			emit("", fmt.Sprintf("CLOSING %s %d", id, time.Now().UnixNano()))
			if err := closeMember(id); err != nil {
				return err
			}
			emit("", "CLOSED "+id)
		default:
			return fmt.Errorf("bad command %q", sc.Text())
		}
	}
	ids := make([]string, 0, len(members))
	for id := range members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var errs []error
	for _, id := range ids {
		errs = append(errs, closeMember(id))
	}
	termWG.Wait()
	emit("done", "")
	mu.Lock()
	errs = append(errs, werr, f.Close())
	mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Println("DONE")
	return nil
}

// peEvent is a stdout line of a helper, or its exit (exited set).
type peEvent struct {
	proc   string
	fields []string
	exited bool
	err    error
}

// peProc is a running helper process.
type peProc struct {
	*testutil.HelperProc
	out    string    // its terms file
	killed time.Time // when it was found reaped after Kill; zero if not killed
}

// peCluster follows the helpers: it applies their stdout lines, in the
// order they arrive, to a picture of who leads.
type peCluster struct {
	t      *testing.T
	procs  map[string]*peProc
	events chan peEvent
	stop   chan struct{}
	wg     sync.WaitGroup

	ready   map[string]bool
	exited  map[string]error
	joined  map[string]string        // id -> node
	timeout map[string]time.Duration // id -> negotiated session timeout
	leading map[string]int64         // id -> start of its open term
	started map[string][]int64       // id -> starts of its terms
	closing map[string]int64         // id -> when its close began
	missed  []string
}

func newPeCluster(t *testing.T) *peCluster {
	pc := &peCluster{
		t: t, procs: map[string]*peProc{}, events: make(chan peEvent, 256), stop: make(chan struct{}),
		ready: map[string]bool{}, exited: map[string]error{}, joined: map[string]string{},
		timeout: map[string]time.Duration{}, leading: map[string]int64{}, started: map[string][]int64{},
		closing: map[string]int64{},
	}
	// Cleanups run last first: the helpers' own (kill, reap, log stderr
	// of a failed test) run before this one.
	t.Cleanup(func() {
		close(pc.stop)
		pc.wg.Wait()
	})
	return pc
}

// start starts a helper named name that records its terms in out.
func (pc *peCluster) start(name string, env ...string) *peProc {
	t := pc.t
	t.Helper()
	p := &peProc{HelperProc: peHelpers.Start(t, name, "latches", env...)}
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, peEnvOut+"="); ok {
			p.out = v
		}
	}
	pc.procs[name] = p
	send := func(ev peEvent) {
		select {
		case pc.events <- ev:
		case <-pc.stop:
		}
	}
	pc.wg.Add(1)
	go func() {
		defer pc.wg.Done()
		for l := range p.Lines() {
			send(peEvent{proc: name, fields: strings.Fields(l)})
		}
		<-p.Done()
		send(peEvent{proc: name, exited: true, err: p.Err()})
	}()
	return p
}

// send writes a command line to a helper.
func (pc *peCluster) send(name, line string) {
	pc.t.Helper()
	if err := pc.procs[name].Send(line); err != nil {
		pc.t.Fatal(err)
	}
}

// kill SIGKILLs a helper and waits until it is reaped; its open terms end
// then (later than the process stopped acting: the conservative end for
// the overlap check).
func (pc *peCluster) kill(name string) {
	pc.t.Helper()
	p := pc.procs[name]
	if err := p.Cmd.Process.Kill(); err != nil {
		pc.t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		pc.t.Fatalf("helper %s not reaped 10s after SIGKILL", name)
	}
	p.killed = time.Now()
}

func peAtoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return n
}

// apply updates the picture with one event.
func (pc *peCluster) apply(ev peEvent) {
	t := pc.t
	t.Helper()
	if ev.exited {
		pc.exited[ev.proc] = ev.err
		return
	}
	f := ev.fields
	if len(f) == 0 {
		return
	}
	switch f[0] {
	case "READY":
		pc.ready[ev.proc] = true
	case "JOINED":
		pc.joined[f[1]] = f[2]
		pc.timeout[f[1]] = time.Duration(peAtoi(t, f[3])) * time.Millisecond
	case "LEADER":
		start := peAtoi(t, f[2])
		pc.leading[f[1]] = start
		pc.started[f[1]] = append(pc.started[f[1]], start)
	case "ENDED":
		if pc.leading[f[1]] == peAtoi(t, f[2]) {
			delete(pc.leading, f[1])
		}
	case "CLOSING":
		pc.closing[f[1]] = peAtoi(t, f[2])
	case "MISSED":
		pc.missed = append(pc.missed, f[1])
	}
}

// await applies events until cond holds; it fails the test when ctx ends
// or a helper exits unexpectedly first.
func (pc *peCluster) await(ctx context.Context, what string, cond func() bool) {
	t := pc.t
	t.Helper()
	for !cond() {
		select {
		case ev := <-pc.events:
			pc.apply(ev)
			if ev.exited && pc.procs[ev.proc].killed.IsZero() && ev.err != nil {
				t.Fatalf("helper %s exited while waiting for %s: %v; stderr:\n%s", ev.proc, what, ev.err, pc.procs[ev.proc].Stderr())
			}
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; leading now: %v", what, ctx.Err(), pc.leading)
		}
	}
}

// leaders returns the ids that lead in the picture, sorted.
func (pc *peCluster) leaders() []string {
	var ids []string
	for id := range pc.leading {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// expectLeader waits until id is the one leader the helpers report, and
// checks that an observer reading ZooKeeper agrees.
func (pc *peCluster) expectLeader(ctx context.Context, c *recipes.Client, path, id string) {
	t := pc.t
	t.Helper()
	pc.await(ctx, id+" the only leader", func() bool { return slices.Equal(pc.leaders(), []string{id}) })
	l, err := election.CurrentLeader(ctx, c, path)
	if err != nil {
		t.Fatal(err)
	}
	if l.ID != id || l.Node != pc.joined[id] {
		t.Fatalf("CurrentLeader = %s (%s), the helpers say %s (%s)", l.ID, l.Node, id, pc.joined[id])
	}
}

// lastStart returns the start of id's latest term.
func (pc *peCluster) lastStart(id string) time.Time {
	s := pc.started[id]
	return time.Unix(0, s[len(s)-1])
}

// readTerms reads a helper's terms file: every term it started, ended
// when its Done closed or, for a killed helper's open term, when the
// process was reaped.
func (pc *peCluster) readTerms(p *peProc) []interop.Interval {
	t := pc.t
	t.Helper()
	f, err := os.Open(p.out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type key struct {
		id    string
		start int64
	}
	var (
		order []key
		ends  = map[key]int64{}
		done  bool
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		switch {
		case len(fl) == 1 && fl[0] == "done":
			done = true
		case len(fl) == 3 && fl[0] == "S":
			k := key{fl[1], peAtoi(t, fl[2])}
			order = append(order, k)
			ends[k] = -1
		case len(fl) == 4 && fl[0] == "T":
			k := key{fl[1], peAtoi(t, fl[2])}
			if _, ok := ends[k]; !ok {
				t.Fatalf("%s: end of a term that never started: %q", p.out, sc.Text())
			}
			ends[k] = peAtoi(t, fl[3])
		default:
			t.Fatalf("%s: malformed line %q", p.out, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !done && p.killed.IsZero() {
		t.Errorf("%s: helper %s was not killed but did not finish its file", p.out, p.Name)
	}
	out := make([]interop.Interval, 0, len(order))
	for _, k := range order {
		end := ends[k]
		if end < 0 {
			if p.killed.IsZero() {
				t.Errorf("%s: %s's term from %d never ended", p.out, k.id, k.start)
				continue
			}
			end = p.killed.UnixNano()
		}
		out = append(out, interop.Interval{Start: k.start, End: end, Who: k.id})
	}
	return out
}

// TestLatchAcrossProcesses runs 5 leader latches in 3 OS processes (A: a0
// a1, B: b0 b1, C: c0; each latch with its own 2 s session), queued
// a0 b0 c0 a1 b1. It checks, at each step, that exactly one participant
// leads and that an observer agrees; it closes the leader twice (graceful
// failover, bounded by gracefulBound) and then SIGKILLs the leader's
// process (failover once the server expires the dead session: within the
// negotiated session timeout plus killMargin). Every process records its
// terms (start: Term.Started; end: when Term.Done closed) in wall-clock
// Unix nanoseconds; merged, no two overlap.
func TestLatchAcrossProcesses(t *testing.T) {
	const (
		// gracefulBound: the next leader in line is told by a watch on the
		// closed leader's node and leads after one more read; this is
		// far below a session timeout, and generous for a loaded machine
		// under -race.
		gracefulBound = time.Second
		// killMargin: time past the session timeout for the server's
		// expiry check (it runs every tickTime), the delete's watch event
		// and the next leader's check.
		killMargin = 2 * time.Second
	)
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	path := "/process/latch-" + uuid.NewString()[:8]
	dir := t.TempDir()
	obs := connect(t, zkc.Servers())

	pc := newPeCluster(t)
	for _, name := range []string{"A", "B", "C"} {
		pc.start(name,
			peEnvServers+"="+strings.Join(zkc.Servers(), ","),
			peEnvPath+"="+path,
			peEnvOut+"="+filepath.Join(dir, name+".terms"),
		)
	}
	pc.await(ctx, "3 helpers ready", func() bool { return len(pc.ready) == 3 })

	queue := []struct{ proc, id string }{{"A", "a0"}, {"B", "b0"}, {"C", "c0"}, {"A", "a1"}, {"B", "b1"}}
	for _, q := range queue {
		pc.send(q.proc, "join "+q.id)
		pc.await(ctx, q.id+" joined", func() bool { return pc.joined[q.id] != "" })
	}
	ids := func(ps []recipes.Participant) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.ID)
		}
		return out
	}
	ps, err := election.Participants(ctx, obs, path)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(ps); !slices.Equal(got, []string{"a0", "b0", "c0", "a1", "b1"}) {
		t.Fatalf("queue %v, want a0 b0 c0 a1 b1", got)
	}
	pc.expectLeader(ctx, obs, path, "a0")

	// Graceful failover: the leader closes its latch.
	for _, step := range []struct{ proc, from, to string }{{"A", "a0", "b0"}, {"B", "b0", "c0"}} {
		pc.send(step.proc, "close "+step.from)
		pc.await(ctx, step.to+" leads", func() bool { return len(pc.started[step.to]) > 0 })
		took := pc.lastStart(step.to).Sub(time.Unix(0, pc.closing[step.from]))
		t.Logf("graceful failover %s -> %s: %v (from the start of Close to the new term's start)", step.from, step.to, took)
		if took > gracefulBound {
			t.Errorf("graceful failover %s -> %s took %v, want at most %v", step.from, step.to, took, gracefulBound)
		}
		pc.expectLeader(ctx, obs, path, step.to)
	}

	// Failover by SIGKILL: c0's process dies while c0 leads.
	session := pc.timeout["c0"]
	if session <= 0 || session > peSession {
		t.Fatalf("c0 negotiated a %v session, asked for %v", session, peSession)
	}
	killAt := time.Now()
	pc.kill("C")
	delete(pc.leading, "c0") // dead: it does nothing more
	pc.await(ctx, "a1 leads after the kill", func() bool { return len(pc.started["a1"]) > 0 })
	took := pc.lastStart("a1").Sub(killAt)
	t.Logf("failover by SIGKILL c0 -> a1: %v after the kill (negotiated session timeout %v)", took, session)
	if took > session+killMargin {
		t.Errorf("failover by SIGKILL took %v, want at most the session timeout %v + %v", took, session, killMargin)
	}
	pc.expectLeader(ctx, obs, path, "a1")
	ps, err = election.Participants(ctx, obs, path)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(ps); !slices.Equal(got, []string{"a1", "b1"}) {
		t.Fatalf("queue after the kill %v, want a1 b1", got)
	}

	// A and B leave; their files are complete.
	for _, name := range []string{"A", "B"} {
		pc.send(name, "exit")
	}
	pc.await(ctx, "A and B exited", func() bool {
		_, a := pc.exited["A"]
		_, b := pc.exited["B"]
		return a && b
	})
	for _, name := range []string{"A", "B"} {
		if err := pc.exited[name]; err != nil {
			t.Fatalf("helper %s: %v; stderr:\n%s", name, err, pc.procs[name].Stderr())
		}
	}
	if len(pc.missed) > 0 {
		t.Logf("terms that ended before their listener saw them (not on record): %v", pc.missed)
	}

	var all []interop.Interval
	for _, name := range []string{"A", "B", "C"} {
		all = append(all, pc.readTerms(pc.procs[name])...)
	}
	if err := interop.CheckNoOverlap(all); err != nil { // sorts by start
		t.Error(err)
	}
	var seq []string
	for _, iv := range all {
		if len(seq) == 0 || seq[len(seq)-1] != iv.Who {
			seq = append(seq, iv.Who)
		}
	}
	if len(seq) < 4 || !slices.Equal(seq[:4], []string{"a0", "b0", "c0", "a1"}) {
		t.Errorf("leaders in order %v, want a0 b0 c0 a1 first", seq)
	}
	t.Logf("%d terms across 3 processes, none overlapping; leaders in order: %v", len(all), seq)
	if ps, err := election.Participants(ctx, obs, path); err != nil || len(ps) != 0 {
		t.Errorf("participants at the end: %v, %v; want none", ps, err)
	}
}
