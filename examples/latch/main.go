// Command latch demonstrates leader election with election.Latch: three
// schedulers, each with a ZooKeeper session of its own, elect one leader,
// and only the leader runs jobs. Then the leader is cut off from ZooKeeper,
// as if its process had crashed or frozen; its session expires and another
// scheduler takes over.
//
// Each job takes the next number from a counter znode with a write fenced
// by the leader's term (Term.Fenced, conditional on the leader's latch
// node and on the counter's version), so no job number is ever run twice.
// A write whose reply the cut loses may still have landed: the leader
// never learns it, and that number is skipped, never run twice (run with
// -cut-mid-write to see it).
// The leader stops as soon as its term's Done channel closes: when its
// connection is lost, before the server can expire its session and let
// another scheduler lead. When the old leader's network comes back it
// finds its session expired and rejoins the election at the back.
//
// Every scheduler reaches ZooKeeper through a local TCP proxy, so that the
// demo can cut one off. It connects to ZK_SERVERS ("host:port,...") or
// starts a local ZooKeeper, and ends with a verdict line. Run it with
// "go run ./examples/latch".
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

const (
	base       = "/zkrecipes-examples/latch"
	latchPath  = base + "/scheduler-leader"
	jobsPath   = base + "/last-job"
	schedulers = 3
)

var (
	duration       = flag.Duration("duration", 6*time.Second, "how long the leaders run jobs (half before the cut, half after the take-over)")
	sessionTimeout = flag.Duration("session-timeout", 2*time.Second, "the schedulers' session timeout (the take-over comes about one timeout after the cut)")
	jobEvery       = flag.Duration("job-every", 250*time.Millisecond, "how often the leader runs a job")
	cutMidWrite    = flag.Bool("cut-mid-write", false, "cut the leader off right after its next job's write reaches ZooKeeper, so that the write lands but its reply is lost")
)

func main() {
	flag.Parse()
	demo.Main(2*(*duration)+10*(*sessionTimeout)+time.Minute, run)
}

// job is one job a leader ran, as its fenced write confirmed.
type job struct {
	n    int
	by   string
	when time.Time
}

// scheduler is one participant.
type scheduler struct {
	name     string
	c        *recipes.Client
	proxy    *zktest.Proxy
	latch    *election.Latch
	unlisten func()
	// cutNext asks (with -cut-mid-write) for the cut to come with the
	// scheduler's next job write: it sends the time of the cut back.
	cutNext chan chan time.Time
}

// term is one stretch of leadership, by this process's clock: from the
// moment Await returned to the moment the scheduler saw Done close.
type term struct {
	by         string
	start, end time.Time
}

// record collects the jobs run, in order of confirmation, and the terms.
type record struct {
	mu       sync.Mutex
	jobs     []job
	unsure   map[int]string // job numbers whose write failed with an unknown outcome, and by whom
	terms    []term
	refused  int
	conflict int
}

func (r *record) add(j job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.jobs = append(r.jobs, j)
}

func run(ctx context.Context, servers []string) error {
	admin, err := demo.Setup(servers, base)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	if _, err := admin.Create(ctx, jobsPath, []byte("0"), 0); err != nil {
		return err
	}
	defer demo.DeleteTree(admin, base)

	rec := &record{unsure: map[int]string{}}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		errs  []error
	)
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
		stop()
	}
	var (
		scheds   []*scheduler
		teardown sync.Once
	)
	// shutdown stops the schedulers and closes their sessions, quietly.
	shutdown := func() {
		teardown.Do(func() {
			stop()
			wg.Wait()
			for _, s := range scheds {
				s.unlisten()
				s.latch.Close(context.Background())
				s.c.Close(context.Background())
				s.proxy.Close()
			}
		})
	}
	defer shutdown()
	for i := 1; i <= schedulers; i++ {
		s := &scheduler{name: fmt.Sprintf("scheduler-%d", i), cutNext: make(chan chan time.Time, 1)}
		if s.proxy, err = zktest.ListenProxy(servers[0]); err != nil {
			return err
		}
		if s.c, err = demo.Connect([]string{s.proxy.Addr()}, *sessionTimeout); err != nil {
			s.proxy.Close()
			return err
		}
		if s.latch, err = election.NewLatch(s.c, latchPath, s.name); err == nil {
			err = s.latch.Start(ctx)
		}
		if err != nil {
			s.c.Close(context.Background())
			s.proxy.Close()
			return err
		}
		scheds = append(scheds, s)
		demo.Say("%s: joined the election (session 0x%x)", s.name, s.c.SessionID())
		s.unlisten = s.c.Listen(func(st recipes.State) { demo.Say("%s: connection %v (session 0x%x)", s.name, st, s.c.SessionID()) })
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.schedule(runCtx, rec); err != nil && runCtx.Err() == nil {
				fail(fmt.Errorf("%s: %w", s.name, err))
			}
		}()
	}

	// Let the first leader work, then cut it off.
	leader, err := waitLeader(runCtx, scheds, nil)
	if err != nil {
		return joinErr(errs, &errMu, err)
	}
	if err := demo.Pause(runCtx, *duration/2); err != nil {
		return joinErr(errs, &errMu, err)
	}
	var cut time.Time
	if *cutMidWrite {
		at := make(chan time.Time, 1)
		leader.cutNext <- at
		select {
		case cut = <-at:
		case <-runCtx.Done():
			return joinErr(errs, &errMu, runCtx.Err())
		}
		demo.Say("== %s is cut off from ZooKeeper just after its write reached it, as if it crashed or froze", leader.name)
	} else {
		demo.Say("== %s is cut off from ZooKeeper, as if it crashed or froze", leader.name)
		cut = time.Now()
		leader.proxy.Blackhole()
	}
	next, err := waitLeader(runCtx, scheds, leader)
	if err != nil {
		return joinErr(errs, &errMu, err)
	}
	takeover := time.Since(cut)
	demo.Say("== %s took over %.1fs after the cut (the session timeout is %v)", next.name, takeover.Seconds(), next.c.SessionTimeout())
	if err := demo.Pause(runCtx, *duration/2); err != nil {
		return joinErr(errs, &errMu, err)
	}
	demo.Say("== %s's network comes back", leader.name)
	leader.proxy.Restore()
	if err := waitParticipants(runCtx, admin, schedulers); err != nil {
		return joinErr(errs, &errMu, err)
	}
	ps, err := election.Participants(runCtx, admin, latchPath)
	if err != nil {
		return joinErr(errs, &errMu, err)
	}
	for i, p := range ps {
		role := "follows"
		if p.Holds {
			role = "LEADS"
		}
		demo.Say("   election, place %d: %s %s", i+1, p.ID, role)
	}
	shutdown()
	if err := joinErr(errs, &errMu, nil); err != nil {
		return err
	}

	// The verdict: every job number run at most once, in order, by one
	// leader at a time.
	// A number the counter passed that no leader confirmed must be one
	// whose write had an unknown outcome: it landed, and its reply was
	// lost.
	data, _, err := admin.Get(ctx, jobsPath)
	if err != nil {
		return err
	}
	final, err := strconv.Atoi(string(data))
	if err != nil {
		return fmt.Errorf("the job counter %q: %w", data, err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	ok, why := true, ""
	confirmed, prev := map[int]bool{}, 0
	for _, j := range rec.jobs {
		if j.n <= prev {
			ok, why = false, fmt.Sprintf("job #%d confirmed after job #%d", j.n, prev)
			break
		}
		confirmed[j.n], prev = true, j.n
	}
	var lost []string
	for n := 1; ok && n <= max(final, prev); n++ {
		switch by, unsure := rec.unsure[n]; {
		case n > final:
			ok, why = false, fmt.Sprintf("job #%d confirmed, but the counter is at %d", n, final)
		case confirmed[n]:
		case unsure:
			lost = append(lost, fmt.Sprintf("job #%d's write by %s landed, but its reply was lost, so nobody ran #%d", n, by, n))
		default:
			ok, why = false, fmt.Sprintf("the counter passed job #%d, but no leader wrote it", n)
		}
	}
	for i, a := range rec.terms {
		for _, b := range rec.terms[i+1:] {
			if a.by != b.by && a.start.Before(b.end) && b.start.Before(a.end) {
				ok, why = false, fmt.Sprintf("%s and %s led at the same time", a.by, b.by)
			}
		}
	}
	leaders := map[string]bool{}
	for _, j := range rec.jobs {
		leaders[j.by] = true
	}
	if ok && (len(leaders) < 2 || rec.conflict > 0) {
		ok, why = false, fmt.Sprintf("%d leaders ran jobs, %d counter conflicts", len(leaders), rec.conflict)
	}
	summary := fmt.Sprintf("%d jobs, each number once and in order, by %d leaders one at a time (%s: %d jobs, %s: %d jobs); take-over %.1fs after the cut; %d jobs refused by fencing",
		len(rec.jobs), len(leaders), leader.name, countBy(rec.jobs, leader.name), next.name, countBy(rec.jobs, next.name), takeover.Seconds(), rec.refused)
	if len(lost) > 0 {
		summary += "; " + strings.Join(lost, "; ")
	}
	if !ok {
		summary = why + "; " + summary
	}
	return demo.Verdict(ok, "%s", summary)
}

func countBy(jobs []job, name string) int {
	n := 0
	for _, j := range jobs {
		if j.by == name {
			n++
		}
	}
	return n
}

func joinErr(errs []error, mu *sync.Mutex, err error) error {
	mu.Lock()
	defer mu.Unlock()
	return errors.Join(append(append([]error(nil), errs...), err)...)
}

// schedule runs jobs whenever this scheduler leads.
func (s *scheduler) schedule(ctx context.Context, rec *record) error {
	var last *election.Term
	for {
		t, err := s.latch.Await(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if t == last { // the latch has not yet seen the end of that term
			if err := demo.Pause(ctx, 20*time.Millisecond); err != nil {
				return nil
			}
			continue
		}
		last = t
		start := time.Now()
		token, _ := t.Token(ctx)
		demo.Say("%s: LEADER now (term token %v): runs the jobs", s.name, token)
		// The term ends when Done closes, even while a request of the
		// leader's is stuck on the lost connection: from then on its
		// writes are refused (fenced).
		ended := make(chan time.Time, 1)
		go func() {
			select {
			case <-t.Done():
				demo.Say("%s: its term is over (connection %v): stops running jobs", s.name, s.c.State())
			case <-ctx.Done():
			}
			ended <- time.Now()
		}()
		s.runJobs(ctx, t, rec)
		end := <-ended
		rec.mu.Lock()
		rec.terms = append(rec.terms, term{by: s.name, start: start, end: end})
		rec.mu.Unlock()
		if ctx.Err() != nil {
			return nil
		}
	}
}

// runJobs runs a job every -job-every until the term ends.
func (s *scheduler) runJobs(ctx context.Context, t *election.Term, rec *record) {
	tick := time.NewTicker(*jobEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.Done():
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case <-t.Done():
			return // Done and the tick were both ready
		default:
		}
		// go-zookeeper holds a request made while the connection is down
		// until it is back: a cut-off leader is stuck here, and its job is
		// refused when it gets through.
		data, st, err := s.c.Get(ctx, jobsPath)
		if err != nil {
			continue // a connection problem: Done says whether the term goes on
		}
		n, _ := strconv.Atoi(string(data))
		n++
		next := []byte(strconv.Itoa(n))
		select {
		case at := <-s.cutNext:
			s.cutAfter(next, at)
		default:
		}
		_, err = t.Fenced(ctx, recipes.SetOp(jobsPath, next, st.Version))
		switch {
		case err == nil:
			rec.add(job{n: n, by: s.name, when: time.Now()})
			demo.Say("%s: runs job #%d", s.name, n)
		case errors.Is(err, recipes.ErrFenced):
			rec.mu.Lock()
			rec.refused++
			rec.mu.Unlock()
			demo.Say("%s: job #%d refused: no longer the leader (%v)", s.name, n, err)
		case errors.Is(err, recipes.ErrBadVersion):
			rec.mu.Lock()
			rec.conflict++
			rec.mu.Unlock()
			demo.Say("%s: job #%d: someone else moved the counter", s.name, n)
		default:
			// The write failed with the connection (or was given up): it
			// may have landed or not, and the counter will tell.
			rec.mu.Lock()
			rec.unsure[n] = s.name
			rec.mu.Unlock()
			if ctx.Err() == nil {
				demo.Say("%s: job #%d: outcome unknown (%v): it may have landed", s.name, n, err)
			}
		}
	}
}

// cutAfter arms the scheduler's proxy to cut it off from ZooKeeper right
// after its write of data to the job counter has gone to the server: the
// server applies the write, and the scheduler never sees the reply. It
// sends the time of the cut on at.
func (s *scheduler) cutAfter(data []byte, at chan<- time.Time) {
	// A SetData request carries the path and then the data, each after
	// its length as a 4-byte big-endian integer.
	pattern := binary.BigEndian.AppendUint32([]byte(jobsPath), uint32(len(data)))
	pattern = append(pattern, data...)
	s.proxy.CutAfterClientSendsFunc(pattern, func() {
		s.proxy.Blackhole() // the reconnections are lost too
		at <- time.Now()
	})
}

// waitLeader waits until a scheduler other than not leads.
func waitLeader(ctx context.Context, scheds []*scheduler, not *scheduler) (*scheduler, error) {
	for {
		for _, s := range scheds {
			if s != not && s.latch.HasLeadership() {
				return s, nil
			}
		}
		if err := demo.Pause(ctx, 20*time.Millisecond); err != nil {
			return nil, fmt.Errorf("waiting for a leader: %w", err)
		}
	}
}

// waitParticipants waits until the election has n participants.
func waitParticipants(ctx context.Context, c *recipes.Client, n int) error {
	for {
		ps, err := election.Participants(ctx, c, latchPath)
		if err == nil && len(ps) == n {
			return nil
		}
		if err := demo.Pause(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for %d participants: %w", n, err)
		}
	}
}
