package rwlock_test

// Interop tests: the Go RWLock shares one path with real Apache Curator
// 5.4 InterProcessReadWriteLock processes (Java, driven through
// internal/interop), against the same ZooKeeper server.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// ioConnect connects a Client that is closed at the end of the test.
func ioConnect(t *testing.T, zkc *zktest.Cluster) *recipes.Client {
	t.Helper()
	return testutil.Connect(t, zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
}

func ioNew(t *testing.T, c *recipes.Client, path string) *rwlock.RWLock {
	t.Helper()
	rw, err := rwlock.New(c, path)
	if err != nil {
		t.Fatal(err)
	}
	return rw
}

// ioWaitParticipants polls until rw has exactly n participants and returns
// them.
func ioWaitParticipants(ctx context.Context, t *testing.T, rw *rwlock.RWLock, n int) []recipes.Participant {
	t.Helper()
	for {
		ps, err := rw.Participants(ctx)
		if err != nil {
			t.Fatalf("participants: %v", err)
		}
		if len(ps) == n {
			return ps
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %d participants, have %d (%v): %v", n, len(ps), ps, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ioWaitPrefix polls p's stdout for a line starting with prefix and
// returns the rest of it.
func ioWaitPrefix(ctx context.Context, t *testing.T, p *interop.Proc, prefix string) string {
	t.Helper()
	for {
		for _, l := range p.Lines() {
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				return strings.TrimSpace(rest)
			}
		}
		select {
		case <-p.Done():
			t.Fatalf("%s exited before printing %q; stdout:\n%s\nstderr:\n%s", p.Name, prefix, p.Output(), p.Stderr())
		case <-ctx.Done():
			t.Fatalf("%s: waiting for %q: %v; stdout:\n%s", p.Name, prefix, ctx.Err(), p.Output())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ioPrinted reports whether p has printed line.
func ioPrinted(p *interop.Proc, line string) bool { return slices.Contains(p.Lines(), line) }

// ioWatches returns the paths session (as "0x<hex>") watches on server i,
// from the "wchc" four-letter word (one "0x<session>" line, then one
// tab-indented line per watched path).
func ioWatches(t *testing.T, zkc *zktest.Cluster, i int, session string) []string {
	t.Helper()
	out, err := zkc.FourLetter(i, "wchc")
	if err != nil {
		t.Fatalf("wchc: %v", err)
	}
	var paths []string
	cur := ""
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "0x"):
			cur = strings.TrimSpace(l)
		case strings.HasPrefix(l, "\t") && cur == session:
			paths = append(paths, strings.TrimSpace(l))
		}
	}
	return paths
}

// ioWaitWatch polls until session watches path on server 0. It fails at
// once if p prints the line bad meanwhile.
func ioWaitWatch(ctx context.Context, t *testing.T, zkc *zktest.Cluster, session, path string, p *interop.Proc, bad string) {
	t.Helper()
	for !slices.Contains(ioWatches(t, zkc, 0, session), path) {
		if ioPrinted(p, bad) {
			t.Fatalf("%s printed %s while waiting for session %s to watch %s", p.Name, bad, session, path)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("session %s never watched %s; it watches %v: %v", session, path, ioWatches(t, zkc, 0, session), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestCuratorInterop runs the Go RWLock against Curator 5.4's
// InterProcessReadWriteLock on one path.
func TestCuratorInterop(t *testing.T) {
	testutil.NeedCurator(t)
	// Plain even under ZK_TEST_TLS: the Curator program speaks plain
	// ZooKeeper.
	zkc := zktest.Start(t, zktest.WithoutTLS())
	dir := t.TempDir() // the driver program is written here once
	t.Run("GoReadersCuratorWriters", func(t *testing.T) { interopHolds(t, zkc, dir, false) })
	t.Run("GoWritersCuratorReaders", func(t *testing.T) { interopHolds(t, zkc, dir, true) })
	t.Run("QueueOrder", func(t *testing.T) { interopQueueOrder(t, zkc, dir) })
	t.Run("Downgrade", func(t *testing.T) { interopDowngrade(t, zkc, dir) })
	t.Run("CuratorDowngrade", func(t *testing.T) { interopCuratorDowngrade(t, zkc, dir) })
}

// rwHold is one recorded hold of the read or the write lock.
type rwHold struct {
	interop.Interval
	writer bool
}

// checkRWHolds sorts holds by start (in place) and returns an error naming
// the first write hold that overlaps another hold, read or write.
// Touching holds do not overlap.
func checkRWHolds(holds []rwHold) error {
	sort.SliceStable(holds, func(i, j int) bool { return holds[i].Start < holds[j].Start })
	for i, w := range holds {
		if !w.writer {
			continue
		}
		for j, x := range holds {
			if i != j && x.Start < w.End && w.Start < x.End {
				return fmt.Errorf("write hold %s [%d, %d] overlaps %s [%d, %d] by %v",
					w.Who, w.Start, w.End, x.Who, x.Start, x.End, time.Duration(min(w.End, x.End)-max(w.Start, x.Start)))
			}
		}
	}
	return nil
}

// rwHoldStats returns, for holds sorted by start, how often the lock went
// from readers to a writer and back, and the most read holds that
// overlapped at one time.
func rwHoldStats(holds []rwHold) (switches, maxReaders int) {
	for i := 1; i < len(holds); i++ {
		if holds[i].writer != holds[i-1].writer {
			switches++
		}
	}
	var ends []int64 // ends of the read holds in progress
	for _, h := range holds {
		if h.writer {
			continue
		}
		ends = slices.DeleteFunc(ends, func(e int64) bool { return e <= h.Start })
		ends = append(ends, h.End)
		maxReaders = max(maxReaders, len(ends))
	}
	return switches, maxReaders
}

// interopHolds runs 2 Curator processes on one side of the lock (writers,
// or readers when goWrites) and 4 Go goroutines (2 Clients × 2 owners) on
// the other, released together; the Go side keeps going until the Curator
// processes are done. Every hold is recorded: no write hold may overlap any
// other hold, every contender finishes, and the lock passes between the
// two sides.
func interopHolds(t *testing.T, zkc *zktest.Cluster, dir string, goWrites bool) {
	const (
		curProcs    = 2
		curIters    = 12
		goClients   = 2
		goPerClient = 2
		goMinIters  = 10
		hold        = 5 * time.Millisecond
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	goRole, curRole := "read", "write"
	if goWrites {
		goRole, curRole = "write", "read"
	}
	path := fmt.Sprintf("/interop/rw-go%s-%s", goRole, uuid.NewString()[:8])
	outDir := t.TempDir()

	procs := make([]*interop.Proc, curProcs)
	files := make([]string, curProcs)
	for i := range procs {
		files[i] = filepath.Join(outDir, fmt.Sprintf("curator%d.txt", i))
		procs[i] = testutil.Curator(t, ctx, dir, "rwlock", zkc.ConnectString(), path, curRole,
			strconv.Itoa(curIters), files[i], strconv.Itoa(int(hold.Milliseconds())))
	}
	for _, p := range procs {
		if err := p.WaitLine(ctx, "READY"); err != nil {
			t.Fatal(err)
		}
	}
	locks := make([]*mutex.Mutex, goClients)
	for i := range locks {
		rw := ioNew(t, ioConnect(t, zkc), path)
		locks[i] = rw.ReadLock()
		if goWrites {
			locks[i] = rw.WriteLock()
		}
	}
	curatorDone := func() bool {
		for _, p := range procs {
			select {
			case <-p.Done():
			default:
				return false
			}
		}
		return true
	}

	start := time.Now()
	for _, p := range procs {
		if err := p.Send("GO"); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu     sync.Mutex
		goHeld []rwHold
		perGo  = map[string]int{}
		wg     sync.WaitGroup
	)
	for ci, m := range locks {
		for g := range goPerClient {
			who := fmt.Sprintf("go-%s%d.%d", goRole, ci, g)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < goMinIters || !curatorDone(); i++ {
					lease, err := m.Acquire(ctx)
					if err != nil {
						t.Errorf("%s iteration %d: lock: %v", who, i, err)
						return
					}
					s := time.Now().UnixNano()
					time.Sleep(hold) // the hold itself
					select {
					case <-lease.Done():
						t.Errorf("%s iteration %d: hold may have been lost", who, i)
					default:
					}
					e := time.Now().UnixNano()
					if err := m.Release(ctx); err != nil {
						t.Errorf("%s iteration %d: unlock: %v", who, i, err)
						return
					}
					mu.Lock()
					goHeld = append(goHeld, rwHold{interop.Interval{Start: s, End: e, Who: who}, goWrites})
					perGo[who]++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)

	if len(perGo) != goClients*goPerClient {
		t.Errorf("%d Go owners completed holds, want %d: %v", len(perGo), goClients*goPerClient, perGo)
	}
	for who, n := range perGo {
		if n < goMinIters {
			t.Errorf("%s completed %d holds, want at least %d", who, n, goMinIters)
		}
	}
	all := append([]rwHold(nil), goHeld...)
	for i, f := range files {
		iv, err := interop.ReadIntervals(f, fmt.Sprintf("curator-%s%d", curRole, i))
		if err != nil {
			t.Fatal(err)
		}
		if len(iv) != curIters {
			t.Errorf("curator%d completed %d holds, want %d", i, len(iv), curIters)
		}
		for _, h := range iv {
			all = append(all, rwHold{h, !goWrites})
		}
	}
	if err := checkRWHolds(all); err != nil { // sorts all by start
		t.Error(err)
	}
	switches, maxReaders := rwHoldStats(all)
	t.Logf("%d holds (Go %s %d, Curator %s %d×%d) in %v after GO; %d switches between readers and writers; up to %d readers at once",
		len(all), goRole, len(goHeld), curRole, curProcs, curIters, elapsed.Round(time.Millisecond), switches, maxReaders)
	if switches < 2 {
		t.Errorf("the lock went between readers and writers %d times, want at least twice (both ways)", switches)
	}
	if ps, err := ioNew(t, ioConnect(t, zkc), path).Participants(ctx); err != nil || len(ps) != 0 {
		t.Errorf("participants after all released = %v, %v; want none", ps, err)
	}
}

// ioOwner is a Go contender with an explicit owner, so the test goroutine
// can unlock for it.
type ioOwner struct {
	name  string
	ctx   context.Context
	m     *mutex.Mutex
	lease chan *mutex.Lease
}

// ioQueue starts a Lock by a new owner in the background.
func ioQueue(ctx context.Context, t *testing.T, bg *sync.WaitGroup, m *mutex.Mutex, name string) *ioOwner {
	o := &ioOwner{name: name, ctx: mutex.WithOwner(ctx, name), m: m, lease: make(chan *mutex.Lease, 1)}
	bg.Add(1)
	go func() {
		defer bg.Done()
		l, err := m.Acquire(o.ctx)
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("%s: lock: %v", name, err)
			}
			return
		}
		o.lease <- l
	}()
	return o
}

// holds waits for o's acquisition.
func (o *ioOwner) holds(ctx context.Context, t *testing.T) *mutex.Lease {
	t.Helper()
	select {
	case l := <-o.lease:
		o.lease <- l // keep it for notYet and later calls
		return l
	case <-ctx.Done():
		t.Fatalf("%s did not acquire: %v", o.name, ctx.Err())
		return nil
	}
}

// notYet fails if o has acquired.
func (o *ioOwner) notYet(t *testing.T) {
	t.Helper()
	select {
	case l := <-o.lease:
		o.lease <- l
		t.Fatalf("%s acquired out of turn", o.name)
	default:
	}
}

func (o *ioOwner) unlock(t *testing.T) {
	t.Helper()
	if err := o.m.Release(o.ctx); err != nil {
		t.Fatalf("%s: unlock: %v", o.name, err)
	}
}

// ioCuratorList runs the rwparticipants mode and returns its READ, WRITE
// and ALL lists.
func ioCuratorList(ctx context.Context, t *testing.T, zkc *zktest.Cluster, dir, path string) (reads, writes, all []string) {
	t.Helper()
	p := testutil.Curator(t, ctx, dir, "rwparticipants", zkc.ConnectString(), path)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, l := range p.Lines() {
		kind, node, ok := strings.Cut(strings.TrimSpace(l), " ")
		switch {
		case !ok:
			t.Fatalf("rwparticipants printed %q", l)
		case kind == "READ":
			reads = append(reads, node)
		case kind == "WRITE":
			writes = append(writes, node)
		case kind == "ALL":
			all = append(all, node)
		default:
			t.Fatalf("rwparticipants printed %q", l)
		}
	}
	return reads, writes, all
}

// interopQueueOrder builds the mixed queue
//
//	go-w0 (holds), cur-r1, go-r2, cur-w3, go-r4, go-w5
//
// checks that Curator lists it as Go does (its read lock's and write
// lock's getParticipantNodes, and the whole sorted list its read lock
// decides on), then hands the lock down: cur-r1 and go-r2 read together,
// cur-w3 waits for both, go-r4 waits for cur-w3 (a queued writer holds back
// later readers, in both libraries), go-w5 waits for go-r4.
func interopQueueOrder(t *testing.T, zkc *zktest.Cluster, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := "/interop/rw-queue-" + uuid.NewString()[:8]
	rw := ioNew(t, ioConnect(t, zkc), path)
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel() // stops blocked Locks if the test ends early

	w0 := ioQueue(ctx, t, &bg, rw.WriteLock(), "go-w0")
	l0 := w0.holds(ctx, t)
	ioWaitParticipants(ctx, t, rw, 1)
	r1 := testutil.Curator(t, ctx, dir, "rwholder", zkc.ConnectString(), path, "read")
	ioWaitParticipants(ctx, t, rw, 2)
	r2 := ioQueue(ctx, t, &bg, rw.ReadLock(), "go-r2")
	ioWaitParticipants(ctx, t, rw, 3)
	w3 := testutil.Curator(t, ctx, dir, "rwholder", zkc.ConnectString(), path, "write")
	ioWaitParticipants(ctx, t, rw, 4)
	r4 := ioQueue(ctx, t, &bg, rw.ReadLock(), "go-r4")
	ioWaitParticipants(ctx, t, rw, 5)
	w5 := ioQueue(ctx, t, &bg, rw.WriteLock(), "go-w5")
	ps := ioWaitParticipants(ctx, t, rw, 6)

	wantWriter := []bool{true, false, false, true, false, true}
	for i, p := range ps {
		if p.Writer != wantWriter[i] || p.Writer != strings.Contains(filepath.Base(p.Node), rwlock.WriteLockName) ||
			p.Writer == strings.Contains(filepath.Base(p.Node), rwlock.ReadLockName) {
			t.Fatalf("participant %d is %+v; want writer=%t; queue %v", i, p, wantWriter[i], ps)
		}
	}
	if ps[0].Node != l0.Node() {
		t.Fatalf("queue head %s, want go-w0's %s", ps[0].Node, l0.Node())
	}

	// Curator's view of the mixed queue.
	var ours, ourReads, ourWrites []string
	for _, p := range ps {
		ours = append(ours, p.Node)
		if p.Writer {
			ourWrites = append(ourWrites, p.Node)
		} else {
			ourReads = append(ourReads, p.Node)
		}
	}
	reads, writes, all := ioCuratorList(ctx, t, zkc, dir, path)
	for _, c := range []struct {
		what         string
		theirs, ours []string
	}{
		{"readLock().getParticipantNodes()", reads, ourReads},
		{"writeLock().getParticipantNodes()", writes, ourWrites},
		{"the read lock's sorted children", all, ours},
	} {
		if !slices.Equal(c.theirs, c.ours) {
			t.Fatalf("Curator's %s:\n\t%s\nGo's:\n\t%s", c.what, strings.Join(c.theirs, "\n\t"), strings.Join(c.ours, "\n\t"))
		}
	}
	t.Logf("Curator and Go agree on the queue: %s", strings.Join(ours, " "))

	// Hand the lock down the queue.
	if ioPrinted(r1, "ACQUIRED") || ioPrinted(w3, "ACQUIRED") {
		t.Fatal("a Curator contender acquired while go-w0 held the write lock")
	}
	r2.notYet(t)
	r4.notYet(t)
	w5.notYet(t)

	w0.unlock(t) // cur-r1 and go-r2 now read together
	if err := r1.WaitLine(ctx, "ACQUIRED"); err != nil {
		t.Fatal(err)
	}
	if l := r2.holds(ctx, t); l.Node() != ps[2].Node {
		t.Errorf("go-r2 holds with %s, want %s", l.Node(), ps[2].Node)
	}
	r4.notYet(t)
	w5.notYet(t)
	if ioPrinted(w3, "ACQUIRED") {
		t.Fatal("cur-w3 acquired while cur-r1 and go-r2 read")
	}

	r2.unlock(t) // cur-r1 still reads
	r4.notYet(t)
	if ioPrinted(w3, "ACQUIRED") {
		t.Fatal("cur-w3 acquired while cur-r1 read")
	}
	if err := r1.Send("release"); err != nil {
		t.Fatal(err)
	}
	if err := r1.WaitLine(ctx, "RELEASED"); err != nil {
		t.Fatal(err)
	}
	if err := w3.WaitLine(ctx, "ACQUIRED"); err != nil {
		t.Fatal(err)
	}
	r4.notYet(t)
	w5.notYet(t)

	if err := w3.Send("release"); err != nil {
		t.Fatal(err)
	}
	if err := w3.WaitLine(ctx, "RELEASED"); err != nil {
		t.Fatal(err)
	}
	if l := r4.holds(ctx, t); l.Node() != ps[4].Node {
		t.Errorf("go-r4 holds with %s, want %s", l.Node(), ps[4].Node)
	}
	w5.notYet(t)
	r4.unlock(t)
	if l := w5.holds(ctx, t); l.Node() != ps[5].Node {
		t.Errorf("go-w5 holds with %s, want %s", l.Node(), ps[5].Node)
	}
	w5.unlock(t)
	for _, p := range []*interop.Proc{r1, w3} {
		if err := p.Wait(); err != nil {
			t.Error(err)
		}
	}
	if ps, err := rw.Participants(ctx); err != nil || len(ps) != 0 {
		t.Errorf("participants after all released = %v, %v; want none", ps, err)
	}
}

// downgradeWindow is how long a test watches for something that must not
// happen (a writer acquiring while a downgraded reader reads) after the
// events that show the writer has gone back to waiting.
const downgradeWindow = 500 * time.Millisecond

// interopDowngrade: a Go owner holds the write lock with a Curator writer
// queued behind it, takes the read lock (a downgrade) and releases the
// write lock. The Curator writer wakes (its predecessor, the write node, is
// gone), finds the downgrade node where the write node was, and waits on
// it: it must not acquire until the Go reader releases.
func interopDowngrade(t *testing.T, zkc *zktest.Cluster, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := "/interop/rw-downgrade-" + uuid.NewString()[:8]
	rw := ioNew(t, ioConnect(t, zkc), path)
	own := mutex.WithOwner(ctx, "downgrader")

	wl, err := rw.WriteLock().Acquire(own)
	if err != nil {
		t.Fatal(err)
	}
	cw := testutil.Curator(t, ctx, dir, "rwholder", zkc.ConnectString(), path, "write")
	session := ioWaitPrefix(ctx, t, cw, "SESSION ")
	ps := ioWaitParticipants(ctx, t, rw, 2)
	if ps[0].Node != wl.Node() || !ps[1].Writer {
		t.Fatalf("queue %v; want our write node %s, then Curator's writer", ps, wl.Node())
	}
	curNode := ps[1].Node
	ioWaitWatch(ctx, t, zkc, session, wl.Node(), cw, "ACQUIRED") // Curator waits on our write node

	rl, err := rw.ReadLock().Acquire(own) // the downgrade: at once
	if err != nil {
		t.Fatal(err)
	}
	_, wname := zkpath.SplitPath(wl.Node())
	_, rname := zkpath.SplitPath(rl.Node())
	if !strings.Contains(rname, rwlock.ReadLockName) ||
		contend.SortKey(rname, rwlock.ReadLockName) != contend.SortKey(wname, rwlock.WriteLockName) {
		t.Fatalf("downgrade node %s does not take write node %s's sequence", rname, wname)
	}
	if err := rw.WriteLock().Release(own); err != nil {
		t.Fatal(err)
	}
	// Curator's writer has woken from the write node's deletion and gone
	// back to waiting, now on the downgrade node.
	ioWaitWatch(ctx, t, zkc, session, rl.Node(), cw, "ACQUIRED")
	reads, writes, all := ioCuratorList(ctx, t, zkc, dir, path)
	if want := []string{rl.Node(), curNode}; !slices.Equal(all, want) {
		t.Fatalf("Curator sorts the queue as %v, want %v", all, want)
	}
	if !slices.Equal(reads, []string{rl.Node()}) || !slices.Equal(writes, []string{curNode}) {
		t.Fatalf("Curator's participants: read %v, write %v", reads, writes)
	}
	observe := time.NewTimer(downgradeWindow)
	defer observe.Stop()
	for done := false; !done; {
		if ioPrinted(cw, "ACQUIRED") {
			t.Fatal("Curator's writer acquired while the downgraded Go reader still held the read lock")
		}
		select {
		case <-observe.C:
			done = true
		case <-cw.Done():
			t.Fatalf("Curator's writer exited: %v", cw.Wait())
		case <-time.After(10 * time.Millisecond):
		}
	}
	select {
	case <-rl.Done():
		t.Fatal("the downgraded read hold may have been lost")
	default:
	}

	if err := rw.ReadLock().Release(own); err != nil {
		t.Fatal(err)
	}
	if err := cw.WaitLine(ctx, "ACQUIRED"); err != nil {
		t.Fatal(err)
	}
	if err := cw.Send("release"); err != nil {
		t.Fatal(err)
	}
	if err := cw.WaitLine(ctx, "RELEASED"); err != nil {
		t.Fatal(err)
	}
	if err := cw.Wait(); err != nil {
		t.Fatal(err)
	}
	if ps, err := rw.Participants(ctx); err != nil || len(ps) != 0 {
		t.Errorf("participants after all released = %v, %v; want none", ps, err)
	}
}

// interopCuratorDowngrade records what Curator's own downgrade does to a Go
// writer queued behind it. Curator 5.4 (CURATOR-621, fixed in 5.5.0) gives
// the downgraded reader an ordinary sequential node, behind the queued
// writer, so the Go writer acquires as soon as Curator releases its write
// lock, while Curator still reads: that is Curator 5.4's behaviour, which
// no client sharing the queue can prevent. A fixed Curator puts the read
// node at the write node's sequence, as Go does, and the Go writer waits.
func interopCuratorDowngrade(t *testing.T, zkc *zktest.Cluster, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := "/interop/rw-curdowngrade-" + uuid.NewString()[:8]
	rw := ioNew(t, ioConnect(t, zkc), path)
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel()

	cd := testutil.Curator(t, ctx, dir, "rwdowngrade", zkc.ConnectString(), path)
	fixed, err := strconv.ParseBool(ioWaitPrefix(ctx, t, cd, "CURATOR-621-FIXED "))
	if err != nil {
		t.Fatal(err)
	}
	if err := cd.WaitLine(ctx, "WRITE-ACQUIRED"); err != nil {
		t.Fatal(err)
	}
	ps := ioWaitParticipants(ctx, t, rw, 1)
	w := ioQueue(ctx, t, &bg, rw.WriteLock(), "go-w")
	ioWaitParticipants(ctx, t, rw, 2)
	w.notYet(t)
	if err := cd.Send("downgrade"); err != nil {
		t.Fatal(err)
	}
	if err := cd.WaitLine(ctx, "DOWNGRADED"); err != nil {
		t.Fatal(err)
	}
	if !fixed {
		// Curator 5.4: the Go writer is now first in the queue.
		l := w.holds(ctx, t)
		ps = ioWaitParticipants(ctx, t, rw, 2)
		if ps[0].Node != l.Node() || ps[1].Writer {
			t.Fatalf("queue %v; want the Go writer %s, then Curator's downgraded reader", ps, l.Node())
		}
		if ioPrinted(cd, "RELEASED") {
			t.Fatal("Curator released its read lock unasked")
		}
		t.Logf("Curator 5.4 (CURATOR-621): after Curator's own downgrade, the queued Go writer holds while Curator still reads (%s); Go's downgrade keeps it out", filepath.Base(ps[1].Node))
		w.unlock(t)
	} else {
		observe := time.NewTimer(downgradeWindow)
		defer observe.Stop()
		select {
		case <-observe.C:
		case <-w.lease:
			t.Fatal("the Go writer acquired while Curator's downgraded reader still read")
		}
	}
	if err := cd.Send("release"); err != nil {
		t.Fatal(err)
	}
	if err := cd.WaitLine(ctx, "RELEASED"); err != nil {
		t.Fatal(err)
	}
	if fixed {
		w.holds(ctx, t)
		w.unlock(t)
	}
	if err := cd.Wait(); err != nil {
		t.Fatal(err)
	}
	if ps, err := rw.Participants(ctx); err != nil || len(ps) != 0 {
		t.Errorf("participants after all released = %v, %v; want none", ps, err)
	}
}
