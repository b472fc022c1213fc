//go:build chaos

package chaos

// The worker processes: the test binary re-run with -test.run=^TestWorkerProcess$
// and its role in the environment (the idiom Go's own os/exec tests use).
// A worker has one Client (one session) connected through its own three
// proxies, loops on one recipe until told to stop, and appends every event
// to its log file as "<unix nanoseconds> <event> <fields...>", one write per
// line, so a SIGKILL loses nothing written before it.
//
// Commands on stdin (from TestChaos):
//
//	stall <id> <mode>  at the next stall point of that mode ("hold": while
//	                   holding, before the next fenced write; "commit": after
//	                   a fenced write landed, before its outcome is logged),
//	                   print "STALLED <id>" and wait for "release"
//	release            end a stall, or cancel one asked for
//	stop               finish the current operation, release, close, exit 0
//	dump               write every goroutine's stack to stderr (diagnostics)
//
// On stdout it prints READY once connected, OP after every completed
// operation, STALLED <id> and BYE. EOF on stdin (the parent is gone) exits.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// Environment of a worker process.
const (
	envRole    = "ZKCHAOS_ROLE"     // one of the roles below
	envName    = "ZKCHAOS_NAME"     // e.g. "mutex-1"
	envSeg     = "ZKCHAOS_SEG"      // log segment: 1, then +1 per restart
	envServers = "ZKCHAOS_SERVERS"  // the worker's proxies, comma-separated
	envLog     = "ZKCHAOS_LOG"      // its log file
	envSeed    = "ZKCHAOS_SEED"     // the run's seed (pacing)
	envSabot   = "ZKCHAOS_SABOTAGE" // "1": break the rules on purpose (-sabotage)
)

// Roles, which are also the kinds of operation the summary counts.
const (
	roleMutex    = "mutex"     // mutex.Mutex: record writer
	roleRWWrite  = "rwwrite"   // rwlock write lock: record writer
	roleRWRead   = "rwread"    // rwlock read lock: record reader
	roleSem      = "semaphore" // semaphore.Semaphore, gauge
	roleSelector = "selector"  // election.Selector, heartbeats
	roleLatch    = "latch"     // election.Latch, heartbeats
	roleCounter  = "counter"   // atomicval.Int64: increments, compare-and-sets, reads
)

var roles = []string{roleMutex, roleRWWrite, roleRWRead, roleSem, roleSelector, roleLatch, roleCounter}

// Server paths (no namespace) shared by the workers and the checker.
const (
	root      = "/chaos"
	pathMutex = root + "/locks/mutex"
	pathRW    = root + "/locks/rw"
	pathSem   = root + "/locks/sem"
	pathSel   = root + "/locks/selector"
	pathLatch = root + "/locks/latch"
	recMutex  = root + "/rec/mutex" // "value nonce"
	recRW     = root + "/rec/rw"
	histMutex = root + "/hist/mutex" // <name>.<seg>/<n>-<value>, made with each write
	histRW    = root + "/hist/rw"
	gaugePath = root + "/gauge"         // ephemeral children named after the holders' lease nodes
	leadSel   = root + "/lead/selector" // "token id counter"
	leadLatch = root + "/lead/latch"
)

const (
	workerSession = 2 * time.Second // asked for by every worker
	semMax        = 3               // the semaphore's maximum
	semGoroutines = 2               // contenders per semaphore worker
	hbEvery       = 40 * time.Millisecond
	stallLimit    = time.Minute // a stall nobody releases ends by itself
)

// pacing is how long a worker holds and waits between operations.
type pacing struct{ holdMin, holdMax, gapMin, gapMax time.Duration }

var pace = map[string]pacing{
	roleMutex:    {0, 0, 5 * time.Millisecond, 25 * time.Millisecond},
	roleRWWrite:  {0, 0, 20 * time.Millisecond, 60 * time.Millisecond},
	roleRWRead:   {5 * time.Millisecond, 20 * time.Millisecond, 5 * time.Millisecond, 25 * time.Millisecond},
	roleSem:      {10 * time.Millisecond, 40 * time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond},
	roleSelector: {0, 0, 0, 0},
	roleLatch:    {0, 0, 10 * time.Millisecond, 30 * time.Millisecond},
	roleCounter:  {0, 0, 10 * time.Millisecond, 40 * time.Millisecond},
}

// TestWorkerProcess is not a test: it is the body of the worker processes
// TestChaos starts. It skips unless ZKCHAOS_ROLE is set.
func TestWorkerProcess(t *testing.T) {
	role := os.Getenv(envRole)
	if role == "" {
		t.Skip("the body of the chaos workers; TestChaos starts them")
	}
	if err := runWorker(role); err != nil {
		fmt.Fprintf(os.Stderr, "chaos worker %s: ERROR: %v\n", os.Getenv(envName), err)
		os.Exit(2)
	}
	os.Exit(0) // skip the testing package's epilogue on stdout
}

type worker struct {
	role, name string
	seg        int
	p          pacing
	c          *recipes.Client
	ctx        context.Context // cancelled by "stop"
	stop       context.CancelFunc
	log        *eventLog

	outMu sync.Mutex // stdout

	stallMu      sync.Mutex
	stallID      string // asked for, not yet taken
	stallMode    string
	stallRelease chan struct{} // non-nil while stalled

	rngMu sync.Mutex
	rng   *rand.Rand

	seq atomic.Int64 // nonces, gauge entries, heartbeat counters

	// sabotage makes the worker break the rules now and then, to show
	// that the checker catches it: a mutex worker writes without the
	// lock, a latch writes a heartbeat after its term, unfenced.
	sabotage bool
}

func runWorker(role string) error {
	if _, ok := pace[role]; !ok {
		return fmt.Errorf("unknown role %q", role)
	}
	name := os.Getenv(envName)
	seg, err := strconv.Atoi(os.Getenv(envSeg))
	if err != nil {
		return fmt.Errorf("%s: %w", envSeg, err)
	}
	seed, err := strconv.ParseUint(os.Getenv(envSeed), 10, 64)
	if err != nil {
		return fmt.Errorf("%s: %w", envSeed, err)
	}
	f, err := os.OpenFile(os.Getenv(envLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	h := fnv.New64a()
	h.Write([]byte(name))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	w := &worker{role: role, name: name, seg: seg, p: pace[role], ctx: ctx, stop: stop,
		log: &eventLog{f: f}, rng: rand.New(rand.NewPCG(seed, h.Sum64()+uint64(seg))),
		sabotage: os.Getenv(envSabot) == "1"}
	go w.commands()

	c, err := w.connect(strings.Split(os.Getenv(envServers), ","))
	if err != nil {
		if ctx.Err() != nil { // stopped before it could connect
			w.say("BYE")
			return nil
		}
		return err
	}
	w.c = c
	w.log.printf("start %s %d %#x", name, seg, c.SessionID())
	c.Listen(func(s recipes.State) { w.log.printf("state %s %#x", s, c.SessionID()) })
	w.say("READY")

	switch role {
	case roleMutex:
		var m *mutex.Mutex
		if m, err = mutex.New(c, pathMutex, mutex.WithData([]byte(name))); err == nil {
			err = w.runRecordWriter(m, recMutex, histMutex)
		}
	case roleRWWrite, roleRWRead:
		var rw *rwlock.RWLock
		if rw, err = rwlock.New(c, pathRW, mutex.WithData([]byte(name))); err == nil {
			if role == roleRWWrite {
				err = w.runRecordWriter(rw.WriteLock(), recRW, histRW)
			} else {
				err = w.runReader(rw.ReadLock())
			}
		}
	case roleSem:
		var s *semaphore.Semaphore
		if s, err = semaphore.New(c, pathSem, semMax, semaphore.WithData([]byte(name))); err == nil {
			err = w.runSemaphore(s, semV2Gauge)
		}
	case roleSelector:
		err = w.runSelector()
	case roleLatch:
		err = w.runLatch()
	case roleCounter:
		err = w.runCounter()
	default:
		err = roleRunners[role](w) // registered (hooks_test.go)
	}
	cerr := c.Close(context.Background())
	w.log.printf("stop")
	w.say("BYE")
	return errors.Join(err, cerr)
}

// connect dials the worker's proxies, retrying while the ensemble is down
// (a worker restarted during a fault).
func (w *worker) connect(servers []string) (*recipes.Client, error) {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		opts := append(proxiedOpts(os.Getenv(envReconfig) == "1"), recipes.WithSessionTimeout(workerSession), recipes.WithConnectTimeout(10*time.Second))
		c, err := dial(context.Background(), servers, opts...)
		if err == nil {
			return c, nil
		}
		if w.ctx.Err() != nil || time.Now().After(deadline) {
			return nil, err
		}
		w.log.printf("connecterr %s", oneLine(err))
		w.sleep(200*time.Millisecond, 200*time.Millisecond)
	}
}

// commands reads the parent's commands until stdin closes.
func (w *worker) commands() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "stall":
			w.stallMu.Lock()
			w.stallID, w.stallMode = f[1], f[2]
			w.stallMu.Unlock()
		case len(f) == 1 && f[0] == "release":
			w.stallMu.Lock()
			w.stallID, w.stallMode = "", ""
			if w.stallRelease != nil {
				close(w.stallRelease)
				w.stallRelease = nil
			}
			w.stallMu.Unlock()
		case len(f) == 1 && f[0] == "stop":
			w.stop()
		case len(f) == 1 && f[0] == "dump":
			w.outMu.Lock()
			fmt.Fprintf(os.Stderr, "=== goroutines of %s.%d at %s\n", w.name, w.seg, time.Now().Format(time.RFC3339Nano))
			_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
			w.outMu.Unlock()
		}
	}
	// stdin closed: the parent is gone.
	os.Exit(3)
}

// stallPoint stalls here if the parent asked for a stall at a point of this
// mode, until released, and reports whether it did.
func (w *worker) stallPoint(mode string) bool {
	w.stallMu.Lock()
	if w.stallMode != mode || w.stallRelease != nil {
		w.stallMu.Unlock()
		return false
	}
	id := w.stallID
	w.stallID, w.stallMode = "", ""
	ch := make(chan struct{})
	w.stallRelease = ch
	w.stallMu.Unlock()
	w.log.printf("stalled %s %s", id, mode)
	w.say("STALLED " + id)
	t := time.NewTimer(stallLimit)
	select {
	case <-ch:
	case <-t.C:
		w.stallMu.Lock()
		if w.stallRelease == ch {
			w.stallRelease = nil
		}
		w.stallMu.Unlock()
	}
	t.Stop()
	w.log.printf("resumed %s", id)
	return true
}

func (w *worker) say(line string) {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	_, _ = os.Stdout.WriteString(line + "\n")
}

// op tells the parent an operation completed.
func (w *worker) op() { w.say("OP") }

// sleep waits a random time in [lo, hi], or until the worker stops.
func (w *worker) sleep(lo, hi time.Duration) {
	d := lo
	if hi > lo {
		w.rngMu.Lock()
		d += time.Duration(w.rng.Int64N(int64(hi - lo)))
		w.rngMu.Unlock()
	}
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.ctx.Done():
	}
}

func (w *worker) intN(lo, hi int) int {
	w.rngMu.Lock()
	defer w.rngMu.Unlock()
	return lo + w.rng.IntN(hi-lo+1)
}

// eventLog appends timestamped lines, one write each.
type eventLog struct {
	mu sync.Mutex
	f  *os.File
}

func (l *eventLog) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := strconv.FormatInt(time.Now().UnixNano(), 10) + " " + fmt.Sprintf(format, args...) + "\n"
	_, _ = l.f.WriteString(line)
}

func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", " | ")
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// readRecord syncs and reads a record "value nonce".
func (w *worker) readRecord(rec string) (int, string, *zk.Stat, error) {
	if err := w.c.Sync(context.Background(), rec); err != nil {
		return 0, "", nil, err
	}
	data, st, err := w.c.Get(context.Background(), rec)
	if err != nil {
		return 0, "", nil, err
	}
	v, nonce, ok := strings.Cut(string(data), " ")
	n, err := strconv.Atoi(v)
	if !ok || err != nil {
		return 0, "", nil, fmt.Errorf("record %s = %q", rec, data)
	}
	return n, nonce, st, nil
}

// retry runs op until it succeeds or fails with an error that is not
// a connection problem, or until d has passed.
func (w *worker) retry(d time.Duration, op func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := op()
		if err == nil || !(recipes.IsRetryable(err) || errors.Is(err, zk.ErrSessionExpired)) || time.Now().After(deadline) {
			return err
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		_ = w.c.WaitConnected(ctx)
		cancel()
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *worker) unlock(lease *mutex.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := lease.Release(ctx); err != nil {
		w.log.printf("unlockerr %s", oneLine(err))
	}
}

// runRecordWriter loops: lock; sync and read the record; write value+1 with
// a fresh nonce, fenced, together with the history node <dir>/<n>-<value>;
// log the outcome; unlock.
func (w *worker) runRecordWriter(lk *mutex.Mutex, rec, hist string) error {
	dir := fmt.Sprintf("%s/%s.%d", hist, w.name, w.seg)
	if err := w.retry(2*time.Minute, func() error {
		_, err := w.c.Create(context.Background(), dir, nil, 0)
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	}); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for i := 1; w.ctx.Err() == nil; i++ {
		if w.sabotage && w.role == roleMutex && i%25 == 0 {
			w.writeUnlocked(rec, dir)
			continue
		}
		lease, err := lk.Acquire(w.ctx)
		if err != nil {
			if w.ctx.Err() == nil {
				w.log.printf("lockerr %s", oneLine(err))
				w.sleep(50*time.Millisecond, 100*time.Millisecond)
			}
			continue
		}
		w.writeOnce(lease, rec, dir)
		w.unlock(lease)
		w.sleep(w.p.gapMin, w.p.gapMax)
	}
	return nil
}

func (w *worker) writeOnce(lease *mutex.Lease, rec, dir string) {
	v, _, _, err := w.readRecord(rec)
	if err != nil {
		w.log.printf("readerr %s", oneLine(err))
		return
	}
	stalled := w.stallPoint("hold")
	n := w.seq.Add(1)
	val := v + 1
	nonce := fmt.Sprintf("%s.%d.%d", w.name, w.seg, n)
	histNode := fmt.Sprintf("%s/%d-%d", dir, n, val)
	w.log.printf("attempt %d %s", val, nonce)
	res, err := lease.Fenced(context.Background(),
		recipes.SetOp(rec, []byte(fmt.Sprintf("%d %s", val, nonce)), -1),
		recipes.CreateOp(histNode, nil, 0))
	if err == nil && w.stallPoint("commit") {
		stalled = true
	}
	var outcome string
	switch {
	case err == nil:
		outcome = fmt.Sprintf("ok %d %d %s", val, res[0].Stat.Version, nonce)
	case errors.Is(err, recipes.ErrFenced):
		outcome = "refused " + nonce
	default:
		// Ambiguous: the transaction may or may not have been applied.
		// The history node says which.
		outcome = w.resolve(rec, histNode, val, nonce, err)
	}
	w.log.printf("%s", outcome)
	ev, _, _ := strings.Cut(outcome, " ")
	if stalled {
		w.log.printf("poststall %s", ev)
	}
	if ev == "ok" || ev == "landed" {
		w.op()
	}
}

// writeUnlocked is sabotage: the read-increment-write of writeOnce
// without the lock or the fence, slowly, so that it races with a holder.
func (w *worker) writeUnlocked(rec, dir string) {
	v, _, _, err := w.readRecord(rec)
	if err != nil {
		return
	}
	w.sleep(30*time.Millisecond, 30*time.Millisecond)
	n := w.seq.Add(1)
	val := v + 1
	nonce := fmt.Sprintf("%s.%d.%d", w.name, w.seg, n)
	w.log.printf("attempt %d %s", val, nonce)
	res, err := w.c.Multi(context.Background(),
		recipes.SetOp(rec, []byte(fmt.Sprintf("%d %s", val, nonce)), -1),
		recipes.CreateOp(fmt.Sprintf("%s/%d-%d", dir, n, val), nil, 0))
	if err == nil {
		w.log.printf("ok %d %d %s", val, res[0].Stat.Version, nonce)
	} else {
		w.log.printf("sabotagefailed %s", oneLine(err))
	}
}

// resolve settles an ambiguous write: after a sync, the history node made
// in the same transaction exists if and only if the write landed.
func (w *worker) resolve(rec, histNode string, val int, nonce string, cause error) string {
	w.log.printf("ambiguous %s %s", nonce, oneLine(cause))
	var out string
	err := w.retry(time.Minute, func() error {
		if err := w.c.Sync(context.Background(), path.Dir(histNode)); err != nil {
			return err
		}
		ok, _, err := w.c.Exists(context.Background(), histNode)
		if err != nil {
			return err
		}
		if !ok {
			out = "lost " + nonce
			return nil
		}
		ver := int32(-1) // landed, but overwritten since: version unknown
		if data, st, err := w.c.Get(context.Background(), rec); err == nil && strings.HasSuffix(string(data), " "+nonce) {
			ver = st.Version
		}
		out = fmt.Sprintf("landed %d %d %s", val, ver, nonce)
		return nil
	})
	if err != nil {
		return "unresolved " + nonce
	}
	return out
}

// runReader loops: read lock; sync and read the record; hold; sync and read
// again. A change seen while the lease's Done is still open after the second
// read is a violation: a writer wrote under our read lock.
func (w *worker) runReader(lk *mutex.Mutex) error {
	for w.ctx.Err() == nil {
		lease, err := lk.Acquire(w.ctx)
		if err != nil {
			if w.ctx.Err() == nil {
				w.log.printf("lockerr %s", oneLine(err))
				w.sleep(50*time.Millisecond, 100*time.Millisecond)
			}
			continue
		}
		w.readOnce(lease)
		w.unlock(lease)
		w.sleep(w.p.gapMin, w.p.gapMax)
	}
	return nil
}

func (w *worker) readOnce(lease *mutex.Lease) {
	v1, _, _, err := w.readRecord(recRW)
	if err != nil {
		w.log.printf("readerr %s", oneLine(err))
		return
	}
	stalled := w.stallPoint("hold")
	w.sleep(w.p.holdMin, w.p.holdMax)
	v2, _, _, err := w.readRecord(recRW)
	if err != nil {
		w.log.printf("readerr %s", oneLine(err))
		return
	}
	done := lease.Done()
	open := !isClosed(done)
	if v2 != v1 && open {
		// Say whether Done was merely late (it closes soon after) or
		// the hold really was still believed good.
		t0, late := time.Now(), "did not close within 1s"
		select {
		case <-done:
			late = fmt.Sprintf("closed %v after that check", time.Since(t0))
		case <-time.After(time.Second):
		}
		w.log.printf("violation reader: the record changed from %d to %d under the read lock %s, whose Done was still open after the second read (it %s; IsLost=%v)",
			v1, v2, lease.Node(), late, lease.IsLost())
	}
	o := 0
	if open {
		o = 1
	}
	w.log.printf("read %d %d %d", v1, v2, o)
	if stalled {
		w.log.printf("poststall read")
	}
	w.op()
}

// semGauge is where a semaphore's holders count themselves: the gauge
// (ephemeral entries named after the lease nodes), the directory of the
// lease nodes, the maximum, and the name the violation line gives.
type semGauge struct {
	gauge, leases, what string
	max                 int
}

var semV2Gauge = semGauge{gauge: gaugePath, leases: pathSem + "/" + semaphore.LeaseParent, what: "semaphore", max: semMax}

// runSemaphore runs semGoroutines contenders on the worker's session,
// each holding its leases as semHold does with g.
func (w *worker) runSemaphore(s interface {
	Acquire(context.Context) (*semaphore.Lease, error)
}, g semGauge) error {
	var wg sync.WaitGroup
	for range semGoroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w.ctx.Err() == nil {
				lease, err := s.Acquire(w.ctx)
				if err != nil {
					if w.ctx.Err() == nil {
						w.log.printf("acquireerr %s", oneLine(err))
						w.sleep(50*time.Millisecond, 100*time.Millisecond)
					}
					continue
				}
				w.semHold(lease, g)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := lease.Release(ctx); err != nil {
					w.log.printf("closeerr %s", oneLine(err))
				}
				cancel()
				w.sleep(w.p.gapMin, w.p.gapMax)
			}
		}()
	}
	wg.Wait()
	return nil
}

// semHold, while holding lease l: creates the ephemeral gauge entry named
// after the lease node (fenced: in one transaction with the check on the
// lease node), counts the gauge, holds, deletes the entry (fenced).
func (w *worker) semHold(l *semaphore.Lease, g semGauge) {
	lease := path.Base(l.Node())
	entry := g.gauge + "/" + lease
	_, err := l.Fenced(context.Background(), recipes.CreateOp(entry, []byte(w.name), zk.FlagEphemeral))
	switch {
	case errors.Is(err, recipes.ErrFenced):
		w.log.printf("refused %s", lease)
		return
	case err != nil:
		w.log.printf("createerr %s %s", lease, oneLine(err))
		w.removeEntry(entry)
		return
	}
	live, raw, err := w.countGauge(g)
	if err != nil {
		w.log.printf("counterr %s", oneLine(err))
	} else {
		if live > g.max {
			w.log.printf("violation %s: %d holders with live leases in the gauge (at most %d): %d entries, ours %s", g.what, live, g.max, raw, lease)
		}
		w.log.printf("gauge %d %d %s", live, raw, lease)
		w.op()
	}
	stalled := w.stallPoint("hold")
	w.sleep(w.p.holdMin, w.p.holdMax)
	_, err = l.Fenced(context.Background(), recipes.DeleteOp(entry, -1))
	outcome := "delok"
	switch {
	case errors.Is(err, recipes.ErrFenced):
		outcome = "delrefused"
	case err != nil:
		outcome = "delerr"
	}
	w.log.printf("%s %s", outcome, lease)
	if stalled {
		w.log.printf("poststall %s", outcome)
	}
	if err != nil {
		w.removeEntry(entry)
	}
}

// countGauge syncs and lists the gauge, and counts the entries whose lease
// node still exists. An entry is made only while its lease node exists and
// is deleted before the lease is returned, but when a session comes back
// after the client declared it LOST, the library deletes the lease node at
// once while the entry (made by us, not by the library) waits for our
// clean-up: such an entry is stale, not a holder. The count is sound: a
// lease node that exists after the listing existed at the listing, so more
// than semMax live entries means more than semMax granted leases at once.
func (w *worker) countGauge(g semGauge) (live, raw int, err error) {
	if err := w.c.Sync(context.Background(), g.gauge); err != nil {
		return 0, 0, err
	}
	kids, _, err := w.c.Children(context.Background(), g.gauge)
	if err != nil {
		return 0, 0, err
	}
	for _, k := range kids {
		ok, _, err := w.c.Exists(context.Background(), g.leases+"/"+k)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			live++
		}
	}
	return live, len(kids), nil
}

// removeEntry deletes our gauge entry, unfenced (deleting it can only
// lower the count), until it is gone.
func (w *worker) removeEntry(entry string) {
	err := w.retry(2*time.Minute, func() error {
		err := w.c.Delete(context.Background(), entry, -1)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	if err != nil {
		w.log.printf("entryerr %s %s", path.Base(entry), oneLine(err))
	}
}

func (w *worker) runSelector() error {
	sel, err := election.NewSelector(w.c, pathSel, w.name, func(ctx context.Context, t *election.Term) error {
		return w.lead(ctx, t, leadSel)
	}, election.WithAutoRequeue())
	if err != nil {
		return err
	}
	if err := sel.Start(context.Background()); err != nil {
		return err
	}
	<-w.ctx.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return sel.Close(ctx)
}

// runLatch joins the election with a fresh Latch, leads for a while when it
// leads, and leaves, over and over, so that leadership moves.
func (w *worker) runLatch() error {
	for w.ctx.Err() == nil {
		var stale recipes.Hold // sabotage: a heartbeat after the term
		l, err := election.NewLatch(w.c, pathLatch, w.name)
		if err != nil {
			return err
		}
		if err := l.Start(w.ctx); err != nil {
			if w.ctx.Err() == nil {
				w.log.printf("starterr %s", oneLine(err))
			}
		} else if t, err := l.Await(w.ctx); err == nil {
			ctx, cancel := context.WithCancel(w.ctx)
			go func() {
				select {
				case <-t.Done():
					cancel()
				case <-ctx.Done():
				}
			}()
			_ = w.lead(ctx, t, leadLatch)
			cancel()
			if w.sabotage && w.seq.Load()%3 == 0 {
				stale = t
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := l.Close(ctx); err != nil {
			w.log.printf("closeerr %s", oneLine(err))
		}
		cancel()
		if stale != nil {
			w.staleHeartbeat(stale)
		}
		w.sleep(w.p.gapMin, w.p.gapMax)
	}
	return nil
}

// staleHeartbeat is sabotage: once the latch is closed and another
// participant leads, a heartbeat of the old term, unfenced.
func (w *worker) staleHeartbeat(h recipes.Hold) {
	ft, err := h.Token(context.Background())
	if err != nil {
		return
	}
	tok := ft.Czxid // the checker reads the czxid: no local hand-offs here
	w.sleep(150*time.Millisecond, 150*time.Millisecond)
	cnt := w.seq.Add(1)
	st, err := w.c.Set(context.Background(), leadLatch, []byte(fmt.Sprintf("%d %s %d", tok, w.name, cnt)), -1)
	if err == nil {
		w.log.printf("hb %d %d %d", tok, st.Version, cnt)
	}
}

// lead writes fenced heartbeats "token id counter" to rec every hbEvery,
// for a term of 8-20 heartbeats, until ctx ends.
func (w *worker) lead(ctx context.Context, h recipes.Hold, rec string) error {
	ft, err := h.Token(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.printf("tokenerr %s", oneLine(err))
		}
		return err
	}
	tok := ft.Czxid // the checker reads the czxid
	w.log.printf("term %d %s", tok, path.Base(h.Node()))
	for range w.intN(8, 20) {
		t := time.NewTimer(hbEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		// Stalled or not, the heartbeat goes out without looking at ctx:
		// the fence alone must refuse it if the term is over.
		stalled := w.stallPoint("hold")
		cnt := w.seq.Add(1)
		res, err := h.Fenced(context.Background(), recipes.SetOp(rec, []byte(fmt.Sprintf("%d %s %d", tok, w.name, cnt)), -1))
		outcome := "hb"
		switch {
		case err == nil:
			w.log.printf("hb %d %d %d", tok, res[0].Stat.Version, cnt)
			w.op()
		case errors.Is(err, recipes.ErrFenced):
			outcome = "hbrefused"
			w.log.printf("hbrefused %d %d", tok, cnt)
		default:
			outcome = "hberr"
			w.log.printf("hberr %d %d %s", tok, cnt, oneLine(err))
		}
		if stalled {
			w.log.printf("poststall %s", outcome)
		}
	}
	return nil
}

// produce puts items <worker>.<segment>.<n>, n = 1, 2, ..., with put
// until the worker is stopped, logging "<verb> id" before each put and
// "<verb>ok id" or "<verb>err id error" after it; afterPut (nil for none)
// runs between a put's return and that line.
func (w *worker) produce(verb string, put func(context.Context, []byte) error, afterPut func()) {
	for n := 1; w.ctx.Err() == nil; n++ {
		id := fmt.Sprintf("%s.%d.%d", w.name, w.seg, n)
		w.log.printf("%s %s", verb, id)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := put(ctx, []byte(id))
		cancel()
		if afterPut != nil {
			afterPut()
		}
		if err == nil {
			w.log.printf("%sok %s", verb, id)
			w.op()
		} else {
			w.log.printf("%serr %s %s", verb, id, oneLine(err))
			_ = w.c.WaitConnected(w.ctx)
		}
		w.sleep(w.p.gapMin, w.p.gapMax)
	}
}
