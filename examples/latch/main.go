// Command latch demonstrates leader election with election.Latch: three
// schedulers, each with a ZooKeeper session of its own, elect one leader,
// and only the leader runs jobs. Then the leader is cut off from ZooKeeper,
// as if its process had crashed or frozen; its session expires and another
// scheduler takes over.
//
// Each job takes the next number from a counter znode with a write fenced
// by the leader's term (Term.Fenced, conditional on the leader's latch
// node and on the counter's version), so no job number is ever run twice.
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
	"errors"
	"flag"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

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
	defer admin.Close()
	if _, err := admin.Create(jobsPath, []byte("0"), 0); err != nil {
		return err
	}
	defer demo.DeleteTree(admin, base)

	rec := &record{}
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
				s.c.Close()
				s.proxy.Close()
			}
		})
	}
	defer shutdown()
	for i := 1; i <= schedulers; i++ {
		s := &scheduler{name: fmt.Sprintf("scheduler-%d", i)}
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
			s.c.Close()
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
	demo.Say("== %s is cut off from ZooKeeper, as if it crashed or froze", leader.name)
	cut := time.Now()
	leader.proxy.Blackhole()
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
		if p.IsLeader {
			role = "LEADS"
		}
		demo.Say("   election, place %d: %s %s", i+1, p.ID, role)
	}
	shutdown()
	if err := joinErr(errs, &errMu, nil); err != nil {
		return err
	}

	// The verdict: every job number once, in order, one leader at a time.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	ok, why := true, ""
	for i, j := range rec.jobs {
		if j.n != i+1 {
			ok, why = false, fmt.Sprintf("job %d confirmed as number %d", i+1, j.n)
			break
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
		demo.Say("%s: LEADER now (term token %d): runs the jobs", s.name, token)
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
		data, st, err := s.c.Get(jobsPath)
		if err != nil {
			continue // a connection problem: Done says whether the term goes on
		}
		n, _ := strconv.Atoi(string(data))
		n++
		_, err = t.Fenced(ctx, &zk.SetDataRequest{Path: jobsPath, Data: []byte(strconv.Itoa(n)), Version: st.Version})
		switch {
		case err == nil:
			rec.add(job{n: n, by: s.name, when: time.Now()})
			demo.Say("%s: runs job #%d", s.name, n)
		case errors.Is(err, recipes.ErrFenced):
			rec.mu.Lock()
			rec.refused++
			rec.mu.Unlock()
			demo.Say("%s: job #%d refused: no longer the leader (%v)", s.name, n, err)
		case errors.Is(err, zk.ErrBadVersion):
			rec.mu.Lock()
			rec.conflict++
			rec.mu.Unlock()
			demo.Say("%s: job #%d: someone else moved the counter", s.name, n)
		}
	}
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
