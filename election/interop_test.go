package election_test

// Interop tests: Go Latches and Selectors share election paths with real
// Apache Curator 5.4 LeaderLatch and LeaderSelector processes (Java,
// driven through internal/interop's CuratorRecipes.java in modes latch,
// selholder and selector), against the same ZooKeeper server.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
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

// eiConnect connects a Client (4 s session, as Curator's) that is closed
// at the end of the test.
func eiConnect(t *testing.T, zkc *zktest.Cluster) *recipes.Client {
	t.Helper()
	return connect(t, zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
}

// eiWaitPrefix polls p's stdout for the first line after the first skip
// lines that starts with prefix, and returns the rest of it and its index.
func eiWaitPrefix(ctx context.Context, t *testing.T, p *interop.Proc, skip int, prefix string) (string, int) {
	t.Helper()
	for {
		lines := p.Lines()
		for i := skip; i < len(lines); i++ {
			if rest, ok := strings.CutPrefix(lines[i], prefix); ok {
				return strings.TrimSpace(rest), i
			}
		}
		select {
		case <-p.Done():
			t.Fatalf("%s exited before printing %q; stdout:\n%s\nstderr:\n%s", p.Name, prefix, p.Output(), p.Stderr())
		case <-ctx.Done():
			t.Fatalf("%s: waiting for %q: %v; stdout:\n%s", p.Name, prefix, ctx.Err(), p.Output())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// eiNanos parses a wall-clock Unix nanoseconds field.
func eiNanos(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.Fields(s)[0], 10, 64)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return n
}

// eiAnswer is what a Curator participant says about its election.
type eiAnswer struct {
	leader string   // getLeader().getId(), "" when none
	has    bool     // hasLeadership()
	ids    []string // getParticipants() ids, in Curator's order
}

// eiJava is a Curator participant process.
type eiJava struct {
	id      string
	p       *interop.Proc
	queries int
}

// ask sends "LEADER? <n>" and parses the ANSWER.
func (j *eiJava) ask(ctx context.Context, t *testing.T) eiAnswer {
	t.Helper()
	j.queries++
	n := strconv.Itoa(j.queries)
	if err := j.p.Send("LEADER? " + n); err != nil {
		t.Fatal(err)
	}
	rest, _ := eiWaitPrefix(ctx, t, j.p, 0, "ANSWER "+n+" ")
	f := strings.Fields(rest)
	if len(f) != 3 {
		t.Fatalf("%s: malformed answer %q", j.id, rest)
	}
	a := eiAnswer{leader: f[0], has: f[1] == "true"}
	if a.leader == "-" {
		a.leader = ""
	}
	if f[2] != "-" {
		a.ids = strings.Split(f[2], ",")
	}
	return a
}

// eiIDs returns the participants' ids.
func eiIDs(ps []recipes.Participant) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

// eiTerms records the terms of Go participants as wall-clock intervals.
type eiTerms struct {
	mu    sync.Mutex
	terms []interop.Interval
	wg    sync.WaitGroup
}

// latch records l's terms: start at Term.Started, end when Done closes.
func (r *eiTerms) latch(t *testing.T, l *election.Latch) {
	var last *election.Term // the listener's goroutine only
	remove := l.Listen(func(isLeader bool) {
		term := l.Term()
		if !isLeader || term == nil || term == last {
			return
		}
		last = term
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			<-term.Done()
			r.add(term.ID(), term.Started(), time.Now())
		}()
	})
	t.Cleanup(remove)
}

func (r *eiTerms) add(who string, start, end time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.terms = append(r.terms, interop.Interval{Start: start.UnixNano(), End: end.UnixNano(), Who: who})
}

func (r *eiTerms) all() []interop.Interval {
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]interop.Interval(nil), r.terms...)
}

// eiJavaTerms reads a Curator participant's terms from its stdout: from
// each start line (LEADER or LEADING) to the first end line after it
// (NOTLEADER, RELEASING, or CLOSING: Curator's LeaderLatch.close deletes
// the node before it calls notLeader, so the close's start is when the
// term ends).
func eiJavaTerms(t *testing.T, j *eiJava, starts, ends []string) []interop.Interval {
	t.Helper()
	var (
		out  []interop.Interval
		open int64 = -1
	)
	for _, l := range j.p.Lines() {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		switch {
		case slices.Contains(starts, f[0]):
			if open >= 0 {
				t.Fatalf("%s: a term starts while one is open:\n%s", j.id, j.p.Output())
			}
			open = eiNanos(t, f[1])
		case slices.Contains(ends, f[0]) && open >= 0:
			out = append(out, interop.Interval{Start: open, End: eiNanos(t, f[1]), Who: j.id})
			open = -1
		}
	}
	if open >= 0 {
		t.Fatalf("%s: a term never ended:\n%s", j.id, j.p.Output())
	}
	return out
}

// TestCuratorLatchInterop queues Go Latches and Curator LeaderLatches on
// one path, alternating: g0 j0 g1 j1 (gN Go, jN Curator). It then closes
// the leader, four times, so leadership passes Go -> Curator -> Go ->
// Curator. At every step exactly one participant leads, and every side
// agrees who: Curator's getLeader().getId() in every Curator process, our
// Latch.Leader in every Go latch, election.CurrentLeader, and
// election.Observe; Curator's getParticipants() and ours list the same ids
// in the same order. The terms of both libraries, recorded on one wall
// clock, never overlap.
func TestCuratorLatchInterop(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	dir := t.TempDir() // the driver program is written here once
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := "/interop/latch-" + uuid.NewString()[:8]
	obs := eiConnect(t, zkc)

	// Observe from before the first participant to after the last.
	octx, ocancel := context.WithCancel(ctx)
	changes, err := election.Observe(octx, obs, path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		obsMu    sync.Mutex
		observed []string
	)
	observations := func() []string {
		obsMu.Lock()
		defer obsMu.Unlock()
		return slices.Clone(observed)
	}
	observerDone := make(chan struct{})
	first := make(chan struct{})
	go func() {
		defer close(observerDone)
		for l := range changes {
			obsMu.Lock()
			observed = append(observed, l.ID)
			if len(observed) == 1 {
				close(first)
			}
			obsMu.Unlock()
		}
	}()
	stopObserver := func() {
		ocancel()
		<-observerDone
	}
	defer stopObserver()
	select {
	case <-first:
	case <-ctx.Done():
		t.Fatal("the observer reported nothing")
	}

	type side struct {
		id string
		l  *election.Latch // Go
		j  *eiJava         // Curator
	}
	rec := &eiTerms{}
	sides := []*side{{id: "g0"}, {id: "j0"}, {id: "g1"}, {id: "j1"}}
	for i, s := range sides {
		if s.id[0] == 'g' {
			l, err := election.NewLatch(eiConnect(t, zkc), path, s.id)
			if err != nil {
				t.Fatal(err)
			}
			rec.latch(t, l)
			if err := l.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close(context.Background()) })
			s.l = l
		} else {
			s.j = &eiJava{id: s.id, p: testutil.Curator(t, ctx, dir, "latch", zkc.ConnectString(), path, s.id)}
			eiWaitPrefix(ctx, t, s.j.p, 0, "NODE ")
		}
		ps, err := election.Participants(ctx, obs, path)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{}
		for _, s := range sides[:i+1] {
			want = append(want, s.id)
		}
		if got := eiIDs(ps); !slices.Equal(got, want) {
			t.Fatalf("queue %v, want %v", got, want)
		}
	}

	// agree checks that sides[k] leads and every open side agrees.
	agree := func(k int) {
		t.Helper()
		leader := sides[k]
		open := sides[k:]
		wantIDs := []string{}
		for _, s := range open {
			wantIDs = append(wantIDs, s.id)
		}
		eventually(t, 30*time.Second, leader.id+" leads", func() bool {
			if leader.l != nil {
				return leader.l.HasLeadership()
			}
			return leader.j.ask(ctx, t).has
		})
		for _, s := range open {
			if s.l != nil {
				if got := s.l.HasLeadership(); got != (s == leader) {
					t.Errorf("Go %s: HasLeadership = %v while %s leads", s.id, got, leader.id)
				}
				p, err := s.l.Leader(ctx)
				if err != nil || p.ID != leader.id {
					t.Errorf("Go %s: Leader = %+v, %v; want %s", s.id, p, err, leader.id)
				}
				ps, err := s.l.Participants(ctx)
				if err != nil || !slices.Equal(eiIDs(ps), wantIDs) {
					t.Errorf("Go %s: participants %v, %v; want %v", s.id, eiIDs(ps), err, wantIDs)
				}
			} else {
				a := s.j.ask(ctx, t)
				if a.has != (s == leader) {
					t.Errorf("Curator %s: hasLeadership = %v while %s leads", s.id, a.has, leader.id)
				}
				if a.leader != leader.id {
					t.Errorf("Curator %s: getLeader().getId() = %q, want %s", s.id, a.leader, leader.id)
				}
				if !slices.Equal(a.ids, wantIDs) {
					t.Errorf("Curator %s: getParticipants() ids %v, want %v", s.id, a.ids, wantIDs)
				}
			}
		}
		cur, err := election.CurrentLeader(ctx, obs, path)
		if err != nil || cur.ID != leader.id {
			t.Errorf("CurrentLeader = %+v, %v; want %s", cur, err, leader.id)
		}
	}

	for k, s := range sides {
		agree(k)
		var closedAt time.Time
		if s.l != nil {
			closedAt = time.Now()
			if err := s.l.Close(ctx); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := s.j.p.Send("close"); err != nil {
				t.Fatal(err)
			}
			if err := s.j.p.WaitLine(ctx, "CLOSED"); err != nil {
				t.Fatal(err)
			}
			if err := s.j.p.Wait(); err != nil {
				t.Fatal(err)
			}
			rest, _ := eiWaitPrefix(ctx, t, s.j.p, 0, "CLOSING ")
			closedAt = time.Unix(0, eiNanos(t, rest))
		}
		if k+1 < len(sides) {
			next := sides[k+1]
			var began time.Time
			if next.l != nil {
				term, err := next.l.Await(ctx)
				if err != nil {
					t.Fatal(err)
				}
				began = term.Started()
			} else {
				rest, _ := eiWaitPrefix(ctx, t, next.j.p, 0, "LEADER ")
				began = time.Unix(0, eiNanos(t, rest))
			}
			t.Logf("hand-off %s -> %s: %v (from the start of the close to the new leader's start)", s.id, next.id, began.Sub(closedAt))
		}
	}
	if ps, err := election.Participants(ctx, obs, path); err != nil || len(ps) != 0 {
		t.Errorf("participants at the end: %v, %v; want none", ps, err)
	}
	eventually(t, 10*time.Second, "the observer sees nobody lead", func() bool {
		_, err := election.CurrentLeader(ctx, obs, path)
		return errors.Is(err, recipes.ErrNoLeader)
	})

	all := rec.all()
	for _, s := range sides {
		if s.j != nil {
			all = append(all, eiJavaTerms(t, s.j, []string{"LEADER"}, []string{"NOTLEADER", "CLOSING"})...)
		}
	}
	if err := interop.CheckNoOverlap(all); err != nil { // sorts by start
		t.Error(err)
	}
	var seq []string
	for _, iv := range all {
		seq = append(seq, iv.Who)
	}
	if want := []string{"g0", "j0", "g1", "j1"}; !slices.Equal(seq, want) {
		t.Errorf("terms in order %v, want %v", seq, want)
	}

	want := []string{"", "g0", "j0", "g1", "j1", ""}
	eventually(t, 10*time.Second, "the observer reports every leader and then nobody", func() bool {
		return len(observations()) >= len(want)
	})
	stopObserver()
	if got := observations(); !slices.Equal(got, want) {
		t.Errorf("Observe reported %q, want %q", got, want)
	}
}

// TestCuratorSelectorInterop runs Go Selectors and Curator
// LeaderSelectors on one path.
func TestCuratorSelectorInterop(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	dir := t.TempDir() // the driver program is written here once
	t.Run("HandOff", func(t *testing.T) { interopSelectorHandOff(t, zkc, dir) })
	t.Run("MutualExclusion", func(t *testing.T) { interopSelectorMutualExclusion(t, zkc, dir) })
}

// interopSelectorHandOff queues g0 j0 g1 j1 (Go Selectors and Curator
// LeaderSelectors, each leading until told) and releases the leader four
// times. At each step exactly one leads and every participant, including
// those that have led already (still running, out of the queue), agrees
// who: Curator's getLeader().getId() and getParticipants(), our
// Selector.Leader and Participants, and election.CurrentLeader. The terms
// never overlap.
func interopSelectorHandOff(t *testing.T, zkc *zktest.Cluster, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := "/interop/selector-" + uuid.NewString()[:8]
	obs := eiConnect(t, zkc)
	rec := &eiTerms{}

	type side struct {
		id      string
		s       *election.Selector // Go
		leading chan struct{}      // Go: closed when LeadFunc starts
		release chan struct{}      // Go: closed to end the term
		j       *eiJava            // Curator
	}
	sides := []*side{{id: "g0"}, {id: "j0"}, {id: "g1"}, {id: "j1"}}
	for i, sd := range sides {
		if sd.id[0] == 'g' {
			sd.leading, sd.release = make(chan struct{}), make(chan struct{})
			s, err := election.NewSelector(eiConnect(t, zkc), path, sd.id, func(ctx context.Context, term *election.Term) error {
				start := time.Now()
				close(sd.leading)
				select {
				case <-sd.release:
				case <-ctx.Done():
				}
				rec.add(sd.id, start, time.Now())
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close(context.Background()) })
			sd.s = s
		} else {
			sd.j = &eiJava{id: sd.id, p: testutil.Curator(t, ctx, dir, "selholder", zkc.ConnectString(), path, sd.id)}
			if err := sd.j.p.WaitLine(ctx, "STARTED"); err != nil {
				t.Fatal(err)
			}
		}
		want := []string{}
		for _, s := range sides[:i+1] {
			want = append(want, s.id)
		}
		eventually(t, 30*time.Second, sd.id+" queued", func() bool {
			ps, err := election.Participants(ctx, obs, path)
			return err == nil && slices.Equal(eiIDs(ps), want)
		})
	}

	for k, leader := range sides {
		wantIDs := []string{}
		for _, s := range sides[k:] {
			wantIDs = append(wantIDs, s.id)
		}
		if leader.s != nil {
			select {
			case <-leader.leading:
			case <-ctx.Done():
				t.Fatalf("%s never led", leader.id)
			}
		} else {
			eiWaitPrefix(ctx, t, leader.j.p, 0, "LEADING ")
		}
		for _, s := range sides {
			if s.s != nil {
				if got := s.s.HasLeadership(); got != (s == leader) {
					t.Errorf("Go %s: HasLeadership = %v while %s leads", s.id, got, leader.id)
				}
				p, err := s.s.Leader(ctx)
				if err != nil || p.ID != leader.id {
					t.Errorf("Go %s: Leader = %+v, %v; want %s", s.id, p, err, leader.id)
				}
				ps, err := s.s.Participants(ctx)
				if err != nil || !slices.Equal(eiIDs(ps), wantIDs) {
					t.Errorf("Go %s: participants %v, %v; want %v", s.id, eiIDs(ps), err, wantIDs)
				}
			} else {
				a := s.j.ask(ctx, t)
				if a.has != (s == leader) {
					t.Errorf("Curator %s: hasLeadership = %v while %s leads", s.id, a.has, leader.id)
				}
				if a.leader != leader.id {
					t.Errorf("Curator %s: getLeader().getId() = %q, want %s", s.id, a.leader, leader.id)
				}
				if !slices.Equal(a.ids, wantIDs) {
					t.Errorf("Curator %s: getParticipants() ids %v, want %v", s.id, a.ids, wantIDs)
				}
			}
		}
		if cur, err := election.CurrentLeader(ctx, obs, path); err != nil || cur.ID != leader.id {
			t.Errorf("CurrentLeader = %+v, %v; want %s", cur, err, leader.id)
		}
		if leader.s != nil {
			close(leader.release)
		} else if err := leader.j.p.Send("release"); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "nobody queued", func() bool {
		ps, err := election.Participants(ctx, obs, path)
		return err == nil && len(ps) == 0
	})
	for _, s := range sides {
		if s.s != nil {
			if err := s.s.Close(ctx); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := s.j.p.Send("close"); err != nil {
				t.Fatal(err)
			}
			if err := s.j.p.WaitLine(ctx, "CLOSED"); err != nil {
				t.Fatal(err)
			}
			if err := s.j.p.Wait(); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := rec.all()
	for _, s := range sides {
		if s.j != nil {
			all = append(all, eiJavaTerms(t, s.j, []string{"LEADING"}, []string{"RELEASING"})...)
		}
	}
	if err := interop.CheckNoOverlap(all); err != nil {
		t.Error(err)
	}
	var seq []string
	for _, iv := range all {
		seq = append(seq, iv.Who)
	}
	if want := []string{"g0", "j0", "g1", "j1"}; !slices.Equal(seq, want) {
		t.Errorf("terms in order %v, want %v", seq, want)
	}
}

// interopSelectorMutualExclusion runs 2 Curator LeaderSelector processes
// and 2 Go Selectors (each on its own session), all with auto-requeue, on
// one path until each has led `terms` times, holding each term for hold.
// The terms of both libraries, on one wall clock, never overlap, and
// leadership passes between the libraries.
func interopSelectorMutualExclusion(t *testing.T, zkc *zktest.Cluster, dir string) {
	const (
		javaProcs = 2
		goSels    = 2
		terms     = 10
		hold      = 5 * time.Millisecond
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := "/interop/selector-mx-" + uuid.NewString()[:8]
	outDir := t.TempDir()
	obs := eiConnect(t, zkc)

	procs := make([]*interop.Proc, javaProcs)
	files := make([]string, javaProcs)
	for i := range procs {
		files[i] = filepath.Join(outDir, fmt.Sprintf("curator%d.txt", i))
		procs[i] = testutil.Curator(t, ctx, dir, "selector", zkc.ConnectString(), path, fmt.Sprintf("j%d", i),
			strconv.Itoa(terms), files[i], strconv.Itoa(int(hold.Milliseconds())))
	}
	for _, p := range procs {
		if err := p.WaitLine(ctx, "READY"); err != nil {
			t.Fatal(err)
		}
	}
	rec := &eiTerms{}
	var (
		mu      sync.Mutex
		counted = map[string]int{}
		closers sync.WaitGroup
	)
	defer closers.Wait()
	start := time.Now()
	for _, p := range procs {
		if err := p.Send("GO"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range goSels {
		id := fmt.Sprintf("g%d", i)
		finished := make(chan struct{})
		s, err := election.NewSelector(eiConnect(t, zkc), path, id, func(ctx context.Context, term *election.Term) error {
			begin := time.Now()
			mu.Lock()
			counts := counted[id] < terms
			mu.Unlock()
			if counts {
				select {
				case <-time.After(hold):
				case <-ctx.Done():
				}
			} else {
				<-ctx.Done() // done: hold until closed (at once)
			}
			rec.add(id, begin, time.Now())
			if counts {
				mu.Lock()
				counted[id]++
				if counted[id] == terms {
					close(finished)
				}
				mu.Unlock()
			}
			return nil
		}, election.WithAutoRequeue())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		closers.Add(1)
		go func() {
			defer closers.Done()
			select {
			case <-finished:
			case <-ctx.Done():
			}
			if err := s.Close(context.Background()); err != nil {
				t.Errorf("close %s: %v", id, err)
			}
		}()
	}
	closers.Wait()
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)

	all := rec.all()
	mu.Lock()
	for i := range goSels {
		if id := fmt.Sprintf("g%d", i); counted[id] != terms {
			t.Errorf("Go %s led %d times, want %d", id, counted[id], terms)
		}
	}
	mu.Unlock()
	for i, f := range files {
		iv, err := interop.ReadIntervals(f, fmt.Sprintf("j%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if len(iv) < terms {
			t.Errorf("Curator j%d led %d times, want at least %d", i, len(iv), terms)
		}
		all = append(all, iv...)
	}
	if err := interop.CheckNoOverlap(all); err != nil { // sorts by start
		t.Error(err)
	}
	crossings := 0
	for i := 1; i < len(all); i++ {
		if all[i].Who[0] != all[i-1].Who[0] {
			crossings++
		}
	}
	t.Logf("%d terms (Go %d×%d, Curator %d×%d, plus the idle last ones) in %v, none overlapping; %d hand-offs between Go and Curator",
		len(all), goSels, terms, javaProcs, terms, elapsed.Round(time.Millisecond), crossings)
	if crossings == 0 {
		t.Error("leadership never passed between Go and Curator")
	}
	eventually(t, 10*time.Second, "nobody queued", func() bool {
		ps, err := election.Participants(ctx, obs, path)
		return err == nil && len(ps) == 0
	})
}
