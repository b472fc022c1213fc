package main

// The tests run zkinspect (run, as main does) against real queues on one
// ZooKeeper server: made by Go recipes, by Curator 5.4 (Java) and by Kazoo
// (Python) processes driven through internal/interop. The output is
// compared with testdata/*.golden after normalising what changes from run
// to run (sessions, ages, uuids, addresses); go test -run . -update
// rewrites the golden files.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/shared"
)

// newRunRoot returns a fresh path for a test's queues, so that runs against
// one server (-count=2, ZK_TEST_SERVERS) start from empty parents. The
// normaliser writes it as /zkinspect-xxxxxxxx.
func newRunRoot() string { return "/zkinspect-" + zkpath.NewUUID()[:8] }

var reRunRoot = regexp.MustCompile(`/zkinspect-[0-9a-f]{8}`)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the current output")

func TestMain(m *testing.M) { testutil.Main(m) }

// zkServer returns the one server every test of this package shares.
func zkServer(t *testing.T) *zktest.Cluster { return testutil.SharedServer(t) }

func connectT(t *testing.T, zkc *zktest.Cluster) *recipes.Client {
	t.Helper()
	return testutil.Connect(t, zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// inspectOut runs zkinspect with args against zkc and returns its output.
func inspectOut(t *testing.T, zkc *zktest.Cluster, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	args = append(append([]string{"-servers", zkc.ConnectString()}, tlsFlags(zkc)...), args...)
	if err := run(testCtx(t), args, &out); err != nil {
		t.Fatalf("zkinspect %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// waitChildren waits until path has n children.
func waitChildren(t *testing.T, c *recipes.Client, path string, n int) {
	t.Helper()
	var last []string
	zktest.Eventually(t, 30*time.Second, fmt.Sprintf("%d children under %s (have %v)", n, path, &last), func() bool {
		kids, _, err := c.Children(context.Background(), path)
		last = kids
		return err == nil && len(kids) == n
	})
}

var (
	reUUID    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	reHex32   = regexp.MustCompile(`[0-9a-f]{32}`)
	reSession = regexp.MustCompile(`0x[0-9a-f]{16}`)
	reAge     = regexp.MustCompile(` +(\d+\.\ds|\d+s|\d+m\d\ds|\d+h\d\dm|\d+d\d\dh)\b`)
	reIP      = regexp.MustCompile(`\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b`)
	reKazooID = regexp.MustCompile(`"kazoo-[^"]*"(\.\.\. \(\d+ bytes\))?`)
)

// normaliser replaces what changes from run to run with fixed text of the
// same width, so that tables stay aligned: uuids and Kazoo's or
// go-zookeeper's hex prefixes by x's, sessions by <session-N> (numbered in
// order of appearance), ages by <age>, IPv4 addresses by <ip> and Kazoo's
// identifiers (kazoo-<host>-<pid>).
type normaliser struct{ sessions map[string]int }

func (n *normaliser) session(s string) string {
	if n.sessions == nil {
		n.sessions = map[string]int{}
	}
	id, ok := n.sessions[s]
	if !ok {
		id = len(n.sessions) + 1
		n.sessions[s] = id
	}
	return fmt.Sprintf("<session-%d>", id)
}

func (n *normaliser) text(s string) string {
	s = reRunRoot.ReplaceAllString(s, "/zkinspect-xxxxxxxx")
	s = reUUID.ReplaceAllString(s, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
	s = reHex32.ReplaceAllString(s, strings.Repeat("x", 32))
	s = reSession.ReplaceAllStringFunc(s, func(m string) string { return fmt.Sprintf("%-18s", n.session(m)) })
	s = reAge.ReplaceAllStringFunc(s, func(m string) string { return fmt.Sprintf("%*s", max(len(m), 6), "<age>") })
	s = reKazooID.ReplaceAllString(s, `"kazoo-<host>-<pid>"`)
	return reIP.ReplaceAllString(s, "<ip>")
}

func (n *normaliser) data(s string) string {
	s = reKazooID.ReplaceAllString(`"`+s+`"`, `"kazoo-<host>-<pid>"`)
	return reIP.ReplaceAllString(s[1:len(s)-1], "<ip>")
}

func (n *normaliser) node(x *Node) {
	x.Name = n.text(x.Name)
	x.Path = n.text(x.Path)
	x.Key = n.text(x.Key)
	if x.Session != "" {
		x.Session = n.session(x.Session)
	}
	x.Ctime, x.AgeMS = time.Time{}, 0
	x.Data = n.data(x.Data)
	x.DataLen = len(x.Data)
}

// json normalises a JSON report field by field and indents it again.
func (n *normaliser) json(t *testing.T, s string) string {
	t.Helper()
	var rep Report
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("output is not a report: %v\n%s", err, s)
	}
	rep.Path = n.text(rep.Path)
	rep.Namespace = n.text(rep.Namespace)
	for i := range rep.Notes {
		rep.Notes[i] = n.text(rep.Notes[i])
	}
	if q := rep.Queue; q != nil {
		q.Path = n.text(q.Path)
		for i := range q.Notes {
			q.Notes[i] = n.text(q.Notes[i])
		}
		for i := range q.Nodes {
			n.node(&q.Nodes[i])
		}
		for i := range q.InternalLock {
			n.node(&q.InternalLock[i])
		}
		if q.OldestWaiterAgeMS != nil {
			*q.OldestWaiterAgeMS = 0
		}
		if q.OldestItemAgeMS != nil {
			*q.OldestItemAgeMS = 0
		}
	}
	for i := range rep.Skipped {
		rep.Skipped[i].Path = n.text(rep.Skipped[i].Path)
	}
	for i := range rep.Locks {
		rep.Locks[i].Path = n.text(rep.Locks[i].Path)
		if rep.Locks[i].OldestWaiterAgeMS != nil {
			*rep.Locks[i].OldestWaiterAgeMS = 0
		}
		if rep.Locks[i].OldestItemAgeMS != nil {
			*rep.Locks[i].OldestItemAgeMS = 0
		}
	}
	var b strings.Builder
	if err := writeJSON(&b, rep, false); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// golden compares got with testdata/<name>.golden, or rewrites it with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it); got:\n%s", err, t.Name(), got)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -run %s -update rewrites it)\n--- got:\n%s\n--- want:\n%s", file, t.Name(), got, want)
	}
}

// goldenBoth runs zkinspect on args in text and in JSON and compares both
// with testdata/<name>.golden and testdata/<name>.json.golden.
func goldenBoth(t *testing.T, zkc *zktest.Cluster, name string, args ...string) {
	t.Helper()
	golden(t, name, new(normaliser).text(inspectOut(t, zkc, args...)))
	golden(t, name+".json", new(normaliser).json(t, inspectOut(t, zkc, append([]string{"-json"}, args...)...)))
}

// treeStats returns the stat of path and of each of its children, to
// prove an inspection changed nothing.
func treeStats(t *testing.T, c *recipes.Client, path string) map[string]zk.Stat {
	t.Helper()
	out := map[string]zk.Stat{}
	var walk func(p string)
	walk = func(p string) {
		kids, st, err := c.Children(context.Background(), p)
		if errors.Is(err, recipes.ErrNoNode) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		out[p] = *st
		for _, k := range kids {
			walk(zkpath.JoinPath(p, k))
		}
	}
	walk(path)
	return out
}

// lockAsync runs lock in a goroutine and returns a channel that gets its
// error; the goroutine is waited for at the end of the test.
func lockAsync(t *testing.T, lock func() error) <-chan error {
	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		done <- lock()
	}()
	t.Cleanup(wg.Wait)
	return done
}

// TestGoMutex: a Go holder, a Go waiter and a go-zookeeper zk.Lock waiter.
func TestGoMutex(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	path := runRoot + "/go-mutex"
	a, b, cz := connectT(t, zkc), connectT(t, zkc), connectT(t, zkc)
	ma, err := mutex.New(a, path, mutex.WithData([]byte("holder-a")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ma.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	mb, err := mutex.New(b, path, mutex.WithData([]byte("waiter-b")))
	if err != nil {
		t.Fatal(err)
	}
	bctx, cancelB := context.WithCancel(ctx)
	defer cancelB()
	bdone := lockAsync(t, func() error { _, err := mb.Acquire(bctx); return err })
	waitChildren(t, a, path, 2)
	zl := zk.NewLock(cz.UnsafeConn(), path, zk.WorldACL(zk.PermAll))
	zdone := lockAsync(t, zl.Lock)
	waitChildren(t, a, path, 3)

	before := treeStats(t, a, runRoot)
	goldenBoth(t, zkc, "mutex", path)
	if after := treeStats(t, a, runRoot); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("zkinspect changed the tree:\nbefore %v\nafter  %v", before, after)
	}

	cancelB()
	if err := <-bdone; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter b: %v", err)
	}
	if err := ma.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-zdone; err != nil {
		t.Fatal(err)
	}
	if err := zl.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// TestGoRWLock: a writer that downgrades (its read node at its write
// node's sequence), readers and a writer queued behind it.
func TestGoRWLock(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	path := runRoot + "/go-rwlock"
	newRW := func(c *recipes.Client, data string) *rwlock.RWLock {
		rw, err := rwlock.New(c, path, mutex.WithData([]byte(data)))
		if err != nil {
			t.Fatal(err)
		}
		return rw
	}
	a, b, cc, d := connectT(t, zkc), connectT(t, zkc), connectT(t, zkc), connectT(t, zkc)
	rwA := newRW(a, "writer-a")
	if _, err := rwA.WriteLock().Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rwA.ReadLock().Acquire(ctx); err != nil { // the downgrade
		t.Fatal(err)
	}
	waitChildren(t, a, path, 2)
	rwD := newRW(d, "reader-d")
	var leaseD *mutex.Lease
	ddone := lockAsync(t, func() (err error) { leaseD, err = rwD.ReadLock().Acquire(ctx); return err })
	waitChildren(t, a, path, 3)
	rwB := newRW(b, "writer-b")
	bctx, cancelB := context.WithCancel(ctx)
	defer cancelB()
	bdone := lockAsync(t, func() error { _, err := rwB.WriteLock().Acquire(bctx); return err })
	waitChildren(t, a, path, 4)
	goldenBoth(t, zkc, "rwlock-downgrading", path)

	if err := rwA.WriteLock().Release(ctx); err != nil { // downgraded: reads on
		t.Fatal(err)
	}
	if err := <-ddone; err != nil {
		t.Fatal(err)
	}
	rwC := newRW(cc, "reader-c")
	cctx, cancelC := context.WithCancel(ctx)
	defer cancelC()
	cdone := lockAsync(t, func() error { _, err := rwC.ReadLock().Acquire(cctx); return err })
	waitChildren(t, a, path, 4)
	goldenBoth(t, zkc, "rwlock-downgraded", path)

	cancelC()
	cancelB()
	for _, ch := range []<-chan error{bdone, cdone} {
		if err := <-ch; !errors.Is(err, context.Canceled) {
			t.Fatalf("waiter: %v", err)
		}
	}
	if err := leaseD.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rwA.ReadLock().Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestGoSemaphore: two leases held of a maximum of two (a SharedCount),
// a third acquirer waiting for room while it holds the internal lock,
// a fourth queued on the internal lock.
func TestGoSemaphore(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	path, countPath := runRoot+"/go-sem", runRoot+"/go-sem-count"
	a := connectT(t, zkc)
	startCount(t, a, countPath, 2)
	newSem := func(c *recipes.Client, data string) *semaphore.Semaphore {
		s, err := semaphore.New(c, path, 2, semaphore.WithData([]byte(data)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var leases []*semaphore.Lease
	for _, name := range []string{"lease-a", "lease-b"} {
		lease, err := newSem(connectT(t, zkc), name).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, lease)
	}
	wctx, cancelW := context.WithCancel(ctx)
	defer cancelW()
	sc, sd := newSem(connectT(t, zkc), "lease-c"), newSem(connectT(t, zkc), "lease-d")
	cdone := lockAsync(t, func() error { _, err := sc.Acquire(wctx); return err })
	waitChildren(t, a, path+"/leases", 3)
	ddone := lockAsync(t, func() error { _, err := sd.Acquire(wctx); return err })
	waitChildren(t, a, path+"/locks", 2)

	goldenBoth(t, zkc, "semaphore", path)
	goldenBoth(t, zkc, "semaphore-count", "-count", countPath, path)
	golden(t, "semaphore-leases", new(normaliser).text(inspectOut(t, zkc, "-count", "2", path+"/leases")))

	cancelW()
	for _, ch := range []<-chan error{cdone, ddone} {
		if err := <-ch; !errors.Is(err, context.Canceled) {
			t.Fatalf("waiter: %v", err)
		}
	}
	if err := semaphore.ReleaseAll(ctx, leases); err != nil {
		t.Fatal(err)
	}
}

// TestGoLatch: three leader latches; the first leads.
func TestGoLatch(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	path := runRoot + "/go-latch"
	obs := connectT(t, zkc)
	for i := 1; i <= 3; i++ {
		l, err := election.NewLatch(connectT(t, zkc), path, fmt.Sprintf("scheduler-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close(context.Background()) })
		waitChildren(t, obs, path, i)
	}
	goldenBoth(t, zkc, "latch", path)
}

// TestGoQueue: work queues (package queue): a DistributedQueue and a
// simple queue show their depth and their oldest item's age, and a
// summary lists them with their depth as waiters.
func TestGoQueue(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	c := connectT(t, zkc)
	dq, err := queue.New(c, runRoot+"/jobs")
	if err != nil {
		t.Fatal(err)
	}
	sq, err := queue.NewSimple(c, runRoot+"/simple")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := dq.Put(ctx, fmt.Appendf(nil, "job %d", i)); err != nil {
			t.Fatal(err)
		}
		if err := sq.Offer(ctx, fmt.Appendf(nil, "cmd %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	goldenBoth(t, zkc, "queue", runRoot+"/jobs")
	goldenBoth(t, zkc, "simple-queue", runRoot+"/simple")
	golden(t, "parent-queues", new(normaliser).text(inspectOut(t, zkc, runRoot)))
}

// release tells a holder process to release, and waits for it to exit.
func release(t *testing.T, ctx context.Context, p *interop.Proc) {
	t.Helper()
	if err := p.Send("release"); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitLine(ctx, "RELEASED"); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestCurator: queues made by Curator 5.4: a mutex (holder mode) with a Go
// waiter, a read/write lock (rwholder mode: a reader holding, a writer
// waiting) with a Go reader behind them, and a semaphore (semholder).
func TestCurator(t *testing.T) {
	runRoot := newRunRoot()
	if _, err := interop.JavaClasspath(); err != nil {
		testutil.Unavailable(t, err)
	}
	zkc := testutil.Server(t) // plain even under ZK_TEST_TLS: Curator speaks plain ZooKeeper
	ctx := testCtx(t)
	dir := t.TempDir()
	conn := zkc.ConnectString()
	c := connectT(t, zkc)

	t.Run("Mutex", func(t *testing.T) {
		path := runRoot + "/curator-mutex"
		holder := testutil.Curator(t, ctx, dir, "holder", conn, path)
		if err := holder.WaitLine(ctx, "ACQUIRED"); err != nil {
			t.Fatal(err)
		}
		m, err := mutex.New(c, path, mutex.WithData([]byte("go-waiter")))
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := lockAsync(t, func() error { _, err := m.Acquire(wctx); return err })
		waitChildren(t, c, path, 2)
		goldenBoth(t, zkc, "curator-mutex", path)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("waiter: %v", err)
		}
		release(t, ctx, holder)
	})

	t.Run("RWLock", func(t *testing.T) {
		path := runRoot + "/curator-rwlock"
		reader := testutil.Curator(t, ctx, dir, "rwholder", conn, path, "read")
		if err := reader.WaitLine(ctx, "ACQUIRED"); err != nil {
			t.Fatal(err)
		}
		writer := testutil.Curator(t, ctx, dir, "rwholder", conn, path, "write")
		waitChildren(t, c, path, 2)
		rw, err := rwlock.New(c, path, mutex.WithData([]byte("go-reader")))
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := lockAsync(t, func() error { _, err := rw.ReadLock().Acquire(wctx); return err })
		waitChildren(t, c, path, 3)
		goldenBoth(t, zkc, "curator-rwlock", path)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("waiter: %v", err)
		}
		release(t, ctx, reader)
		if err := writer.WaitLine(ctx, "ACQUIRED"); err != nil {
			t.Fatal(err)
		}
		release(t, ctx, writer)
	})

	t.Run("Semaphore", func(t *testing.T) {
		path := runRoot + "/curator-sem"
		holder := testutil.Curator(t, ctx, dir, "semholder", conn, path, "3", "2")
		if err := holder.WaitLine(ctx, "ACQUIRED"); err != nil {
			t.Fatal(err)
		}
		goldenBoth(t, zkc, "curator-semaphore", "-count", "3", path)
		release(t, ctx, holder)
	})
}

// TestKazoo: a Kazoo Lock holder (holder mode) with a Go waiter that
// recognises Kazoo's node names.
func TestKazoo(t *testing.T) {
	runRoot := newRunRoot()
	if err := interop.KazooAvailable(); err != nil {
		testutil.Unavailable(t, err)
	}
	zkc := testutil.Server(t) // plain even under ZK_TEST_TLS: Kazoo speaks plain ZooKeeper
	ctx := testCtx(t)
	path := runRoot + "/kazoo-mutex"
	c := connectT(t, zkc)
	p, err := interop.StartKazoo(ctx, t.TempDir(), "holder", zkc.ConnectString(), path)
	if errors.Is(err, interop.ErrUnavailable) {
		testutil.Unavailable(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if err := p.WaitLine(ctx, "ACQUIRED"); err != nil {
		t.Fatal(err)
	}
	m, err := mutex.New(c, path, mutex.WithData([]byte("go-waiter")), mutex.WithExtraLockNames(mutex.KazooLockName))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := lockAsync(t, func() error { _, err := m.Acquire(wctx); return err })
	waitChildren(t, c, path, 2)
	goldenBoth(t, zkc, "kazoo-mutex", path)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter: %v", err)
	}
	release(t, ctx, p)
}

// TestSummary: a parent of several lock paths, summarised automatically
// (its children are not queue nodes) and with -summary.
func TestSummary(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	root := runRoot + "/tree"
	a, b := connectT(t, zkc), connectT(t, zkc)
	lock := func(c *recipes.Client, path string) *mutex.Mutex {
		m, err := mutex.New(c, path, mutex.WithData([]byte("x")))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// orders/1: held, one waiter; orders/2: held; orders/3: a persistent
	// parent nobody uses; jobs/sem: a semaphore with one lease.
	held1 := lock(a, root+"/orders/1")
	if _, err := held1.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := lockAsync(t, func() error { _, err := lock(b, root+"/orders/1").Acquire(wctx); return err })
	waitChildren(t, a, root+"/orders/1", 2)
	held2 := lock(a, root+"/orders/2")
	if _, err := held2.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(ctx, root+"/orders/3", nil, 0); err != nil {
		t.Fatal(err)
	}
	defer a.Delete(ctx, root+"/orders/3", -1)
	s, err := semaphore.New(a, root+"/jobs/sem", 5)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitChildren(t, a, root+"/jobs/sem", 1) // the internal lock's container is gone
	// Data nodes, not listed as locks: a SharedCount and a configuration
	// node (data, no children).
	startCount(t, a, root+"/jobs/count", 5)
	if _, err := a.Create(ctx, root+"/config", []byte("mode=fast"), 0); err != nil {
		t.Fatal(err)
	}
	defer a.Delete(ctx, root+"/config", -1)

	goldenBoth(t, zkc, "summary", root)
	// -summary on a queue summarises that queue alone (the flag after the
	// path).
	golden(t, "summary-queue", new(normaliser).text(inspectOut(t, zkc, root+"/orders/1", "-summary")))
	// A data node given as the path is shown as one.
	goldenBoth(t, zkc, "data-node", root+"/jobs/count")

	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter: %v", err)
	}
	for _, m := range []*mutex.Mutex{held1, held2} {
		if err := m.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatch: -watch redraws when a waiter queues, when the holder leaves
// and when the data of a node changes, and returns when ctx ends; -json
// -watch prints one report per line.
func TestWatch(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	base := runRoot + "/watch"
	a, b := connectT(t, zkc), connectT(t, zkc)
	for _, asJSON := range []bool{false, true} {
		path := base
		if asJSON {
			path += "-json"
		}
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			var out syncBuffer
			wctx, stop := context.WithCancel(ctx)
			args := append(tlsFlags(zkc), "-servers", zkc.ConnectString(), "-watch", path)
			if asJSON {
				args = append([]string{"-json"}, args...)
			}
			done := lockAsync(t, func() error { return run(wctx, args, &out) })
			t.Cleanup(stop) // before the goroutine is waited for
			draws := func() int {
				if asJSON {
					return strings.Count(out.String(), "\n")
				}
				return strings.Count(out.String(), "=== ")
			}
			waitDraws := func(n int, what string) {
				t.Helper()
				zktest.Eventually(t, 30*time.Second, what, func() bool { return draws() >= n })
			}
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("zkinspect printed:\n%s", out.String())
				}
			})
			waitDraws(1, "the first draw (no such node)")
			if !strings.Contains(out.String(), "no such node") {
				t.Fatalf("first draw: %s", out.String())
			}
			ma, err := mutex.New(a, path, mutex.WithData([]byte("first")))
			if err != nil {
				t.Fatal(err)
			}
			lease, err := ma.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			zktest.Eventually(t, 30*time.Second, "a draw with the holder", func() bool {
				return strings.Contains(out.String(), `"first"`) || strings.Contains(out.String(), `"data":"first"`)
			})
			n := draws()
			if _, err := a.Set(ctx, lease.Node(), []byte("second"), -1); err != nil {
				t.Fatal(err)
			}
			waitDraws(n+1, "a draw after the data changed")
			zktest.Eventually(t, 30*time.Second, "the new data", func() bool { return strings.Contains(out.String(), "second") })
			mb, err := mutex.New(b, path, mutex.WithData([]byte("waiter")))
			if err != nil {
				t.Fatal(err)
			}
			var leaseB *mutex.Lease
			bdone := lockAsync(t, func() (err error) { leaseB, err = mb.Acquire(ctx); return err })
			zktest.Eventually(t, 30*time.Second, "a draw with the waiter", func() bool { return strings.Contains(out.String(), "waiter") })
			if err := ma.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-bdone; err != nil {
				t.Fatal(err)
			}
			if err := leaseB.Release(ctx); err != nil {
				t.Fatal(err)
			}
			zktest.Eventually(t, 30*time.Second, "a last draw with the lock free", func() bool {
				s := strings.TrimSpace(out.String())
				if asJSON {
					last := s[strings.LastIndex(s, "\n")+1:]
					return strings.Contains(last, `"held":false`) || strings.Contains(last, `"error"`)
				}
				last := s[strings.LastIndex(s, "=== "):]
				return strings.Contains(last, "(no contenders)") || strings.Contains(last, ": empty") || strings.Contains(last, "no such node")
			})
			stop()
			if err := <-done; err != nil {
				t.Fatalf("run -watch: %v", err)
			}
			if asJSON {
				for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
					var v map[string]any
					if err := json.Unmarshal([]byte(l), &v); err != nil {
						t.Fatalf("not a JSON line: %q: %v", l, err)
					}
				}
			}
		})
	}
}

// TestWatchSetsEachWatchOnce: a redraw sets no watch where one is still
// armed, so a long -watch does not pile up watches on nodes that do not
// change.
func TestWatchSetsEachWatchOnce(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	path := runRoot + "/once"
	a, c := connectT(t, zkc), connectT(t, zkc)
	m, err := mutex.New(a, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Release(ctx)
	ws := new(engine.Watches)
	cfg := config{path: path}
	before := (*engine.Client)(c).Stats()
	if _, err := inspect(ctx, &reader{c: c, watches: ws}, cfg); err != nil {
		t.Fatal(err)
	}
	first := (*engine.Client)(c).Stats().Sub(before)
	if first.Watches != 2 || ws.Len() != 2 { // the children and the holder's data
		t.Fatalf("first inspection set %d watches (%d armed), want 2", first.Watches, ws.Len())
	}
	mid := (*engine.Client)(c).Stats()
	if _, err := inspect(ctx, &reader{c: c, watches: ws}, cfg); err != nil {
		t.Fatal(err)
	}
	if again := (*engine.Client)(c).Stats().Sub(mid); again.Watches != 0 {
		t.Fatalf("second inspection set %d more watches, want 0", again.Watches)
	}
}

// TestErrors: bad usage and a missing path.
func TestErrors(t *testing.T) {
	runRoot := newRunRoot()
	for _, args := range [][]string{
		{},
		{"-servers", "127.0.0.1:1"},
		{"-servers", "127.0.0.1:1", "relative"},
		{"-servers", "127.0.0.1:1", "/a/"},
		{"-servers", "127.0.0.1:1", "-count", "zero", "/a"},
		{"-servers", "127.0.0.1:1", "-count", "0", "/a"},
		{"-servers", "127.0.0.1:1", "/a", "/b"},
		{"-nosuchflag", "/a"},
		{"-servers", "", "/a"},
	} {
		if err := run(context.Background(), args, new(bytes.Buffer)); !errors.Is(err, errUsage) {
			t.Errorf("zkinspect %q: got %v, want a usage error", args, err)
		}
	}
	if err := run(context.Background(), []string{"-h"}, new(bytes.Buffer)); err != nil {
		t.Errorf("-h: %v", err)
	}
	zkc := zkServer(t)
	err := run(testCtx(t), append(append([]string{"-servers", zkc.ConnectString()}, tlsFlags(zkc)...), runRoot+"/no/such/node"), new(bytes.Buffer))
	if !errors.Is(err, errNoNode) {
		t.Errorf("missing path: got %v, want errNoNode", err)
	}
}

func TestLibrary(t *testing.T) {
	for name, want := range map[string]string{
		"_c_6f1d2c4e-8b1a-4c2d-9e3f-0a1b2c3d4e5f-lock-0000000001":    libCurator,
		"_c_6f1d2c4e-8b1a-4c2d-9e3f-0a1b2c3d4e5f-__READ__0000000001": libCurator,
		"_c_6f1d2c4e8b1a4c2d9e3f0a1b2c3d4e5f-lock-0000000001":        libZKLock,
		"6f1d2c4e8b1a4c2d9e3f0a1b2c3d4e5f__lock__0000000001":         libKazoo,
		"6f1d2c4e8b1a4c2d9e3f0a1b2c3d4e5f__rlock__0000000001":        libKazoo,
		"lock-0000000001":   libUnknown,
		"member_0000000001": libUnknown,
	} {
		if got := library(name); got != want {
			t.Errorf("library(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestFormatAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                               "0.0s",
		1250 * time.Millisecond:         "1.2s",
		9999 * time.Millisecond:         "9.9s",
		42 * time.Second:                "42s",
		3*time.Minute + 7*time.Second:   "3m07s",
		5*time.Hour + 2*time.Minute:     "5h02m",
		50*time.Hour + 10*time.Minute:   "2d02h",
		59*time.Minute + 59*time.Second: "59m59s",
	} {
		if got := formatAge(d); got != want {
			t.Errorf("formatAge(%v) = %q, want %q", d, got, want)
		}
		if !reAge.MatchString(" " + formatAge(d)) {
			t.Errorf("the test's age pattern misses %q", formatAge(d))
		}
	}
}

// TestWatchRetriesErrors: -watch draws an error that no watch will end (a
// missing -count node) and reads again, drawing the report once the error
// is gone; it returns ErrClosed when its client closes.
func TestWatchRetriesErrors(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	path, countPath := runRoot+"/watch-sem", runRoot+"/watch-sem-count"
	a, c := connectT(t, zkc), connectT(t, zkc)
	s, err := semaphore.New(a, path, 2)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(ctx)
	var out syncBuffer
	cfg := config{path: path, count: countPath, timeout: 10 * time.Second}
	done := lockAsync(t, func() error { return watchLoop(ctx, c, cfg, &out) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("zkinspect printed:\n%s", out.String())
		}
	})
	zktest.Eventually(t, 30*time.Second, "the error drawn", func() bool {
		return strings.Contains(out.String(), "error: -count "+countPath)
	})
	if _, err := a.Create(ctx, countPath, []byte{0, 0, 0, 3}, 0); err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 30*time.Second, "the report drawn", func() bool {
		s := out.String()
		return strings.Contains(s[strings.LastIndex(s, "=== "):], "1 lease held (max 3)")
	})
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, recipes.ErrClosed) {
		t.Fatalf("watch after Close: got %v, want ErrClosed", err)
	}
}

// runOut runs zkinspect with args against zkc and returns its output and
// error.
func runOut(t *testing.T, zkc *zktest.Cluster, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(testCtx(t), append(append([]string{"-servers", zkc.ConnectString()}, tlsFlags(zkc)...), args...), &out)
	return out.String(), err
}

// TestNamespace: a lock made under a namespace is found with -namespace
// (one-shot and -watch), and its path alone without it is no node.
func TestNamespace(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	a := connectT(t, zkc)
	ns := testutil.Connect(t, zkc.Servers(), recipes.WithNamespace(runRoot), recipes.WithSessionTimeout(4*time.Second))
	m, err := mutex.New(ns, "/locks/a", mutex.WithData([]byte("in-namespace")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Release(ctx)
	waitChildren(t, a, runRoot+"/locks/a", 1)

	out := inspectOut(t, zkc, "-namespace", runRoot, "/locks/a")
	for _, want := range []string{"namespace " + runRoot + ": paths are inside it", "/locks/a: mutex", "HOLDS", `"in-namespace"`} {
		if !strings.Contains(out, want) {
			t.Errorf("-namespace: no %q in\n%s", want, out)
		}
	}
	if _, err := runOut(t, zkc, "/locks/a"); !errors.Is(err, errNoNode) {
		t.Errorf("without -namespace: got %v, want errNoNode", err)
	}

	var w syncBuffer
	wctx, stop := context.WithCancel(ctx)
	done := lockAsync(t, func() error {
		return run(wctx, append(tlsFlags(zkc), "-servers", zkc.ConnectString(), "-watch", "-namespace", runRoot, "/locks"), &w)
	})
	t.Cleanup(stop)
	zktest.Eventually(t, 30*time.Second, "-watch -namespace draws the lock", func() bool {
		return strings.Contains(w.String(), "/locks/a  mutex  held")
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("-watch: %v\n%s", err, w.String())
	}
}

// TestAuth: nodes readable only with digest auth (an ACL): -auth reads
// them; without it, a one-shot read of one fails with NoAuth, and -summary
// skips them with a line each, lists the rest and returns errPartial.
func TestAuth(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	root := runRoot + "/acl"
	a := connectT(t, zkc)
	authed := testutil.Connect(t, zkc.Servers(), recipes.WithAuth("digest", []byte("ops:pw")), recipes.WithSessionTimeout(4*time.Second))
	secretACL := zk.DigestACL(zk.PermAll, "ops", "pw")
	for _, p := range []string{runRoot, root} {
		if _, err := a.Create(ctx, p, nil, 0); err != nil && !errors.Is(err, recipes.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	// acl/config: a data node only ops may read; acl/secret: a parent
	// only ops may list, with a lock in it; acl/open: a lock anyone reads.
	if _, err := authed.UnsafeConn().Create(root+"/config", []byte("s3cret"), 0, secretACL); err != nil {
		t.Fatal(err)
	}
	if _, err := authed.UnsafeConn().Create(root+"/secret", nil, 0, secretACL); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct {
		c    *recipes.Client
		path string
	}{{a, root + "/open"}, {authed, root + "/secret/lock"}} {
		m, err := mutex.New(l.c, l.path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		defer m.Release(ctx)
	}

	if _, err := runOut(t, zkc, root+"/config"); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("without -auth: got %v, want NoAuth", err)
	}
	out := inspectOut(t, zkc, "-auth", "digest:ops:pw", root+"/config")
	if !strings.Contains(out, `data: "s3cret"`) {
		t.Errorf("-auth: the data is not shown:\n%s", out)
	}

	out, err := runOut(t, zkc, "-summary", root)
	if !errors.Is(err, errPartial) {
		t.Errorf("summary without -auth: got %v, want errPartial", err)
	}
	golden(t, "summary-partial", new(normaliser).text(out))
	jsonOut, _ := runOut(t, zkc, "-summary", "-json", root)
	golden(t, "summary-partial.json", new(normaliser).json(t, jsonOut))
	golden(t, "summary-auth", new(normaliser).text(inspectOut(t, zkc, "-summary", "-auth", "digest:ops:pw", root)))
}

// TestFlagsAfterPath: flags are parsed before and after the path; after
// "--" everything is a path.
func TestFlagsAfterPath(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		path, servers string
		summary, json bool
		count         string
	}{
		{[]string{"/locks/a", "-summary"}, "/locks/a", "env:1", true, false, ""},
		{[]string{"-json", "/locks/a", "-servers", "h:1", "-count", "3"}, "/locks/a", "h:1", false, true, "3"},
		{[]string{"-summary", "--", "/locks/a"}, "/locks/a", "env:1", true, false, ""},
		{[]string{"/locks/a", "-json", "-summary"}, "/locks/a", "env:1", true, true, ""},
	} {
		cfg, err := parseFlags(tc.args, envServers("env:1"), io.Discard)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if cfg.path != tc.path || strings.Join(cfg.op.Servers, ",") != tc.servers || cfg.summary != tc.summary || cfg.json != tc.json || cfg.count != tc.count {
			t.Errorf("%q: got path %q servers %v summary %v json %v count %q", tc.args, cfg.path, cfg.op.Servers, cfg.summary, cfg.json, cfg.count)
		}
	}
	for _, args := range [][]string{
		{"/a", "/b", "-summary"},
		{"/a", "--", "-summary"},
		{"/a", "-nosuchflag"},
		{"/a", "-auth", "digest"},
		{"/a", "-namespace", "/"},
	} {
		if _, err := parseFlags(args, envServers("env:1"), io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("%q: got %v, want a usage error", args, err)
		}
	}
}

// envServers is a getenv that knows only $ZK_SERVERS.
func envServers(v string) func(string) string {
	return func(k string) string {
		if k == "ZK_SERVERS" {
			return v
		}
		return ""
	}
}

// TestHelp: -h prints the help on stdout, with $ZK_SERVERS named as the
// servers' default and no default value of its own even when it is set.
func TestHelp(t *testing.T) {
	t.Setenv("ZK_SERVERS", "zk-from-env:2181")
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "zk-from-env") {
		t.Errorf("the help shows $ZK_SERVERS's value:\n%s", out.String())
	}
	golden(t, "help", out.String())
}

// TestWatchRedraws: -watch clears the screen only on a terminal (a
// character device) and for text; to a file, a pipe or a buffer it
// appends each draw.
func TestWatchRedraws(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, out := range map[string]io.Writer{"pipe": w, "file": f, "buffer": new(bytes.Buffer)} {
		if redraws(out, false) {
			t.Errorf("%s: redraws, want appends", name)
		}
	}
	if !isCharDevice(os.ModeDevice|os.ModeCharDevice) || isCharDevice(os.ModeNamedPipe) || isCharDevice(0) {
		t.Error("isCharDevice: wrong")
	}
	if null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil { // a character device
		defer null.Close()
		if !redraws(null, false) || redraws(null, true) {
			t.Errorf("%s: redraws %v for text, %v for JSON; want true, false", os.DevNull, redraws(null, false), redraws(null, true))
		}
	}
	rep := &Report{Path: "/a", Mode: "summary"}
	var clear, appended bytes.Buffer
	for i := 0; i < 2; i++ {
		if err := draw(&clear, rep, nil, config{path: "/a"}, true); err != nil {
			t.Fatal(err)
		}
		if err := draw(&appended, rep, nil, config{path: "/a"}, false); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Count(clear.String(), "\x1b[H\x1b[2J=== "); got != 2 || !strings.HasPrefix(clear.String(), "\x1b[H\x1b[2J") {
		t.Errorf("on a terminal each draw starts with home and clear (%d of 2):\n%q", got, clear.String())
	}
	if strings.Contains(appended.String(), "\x1b") || strings.Count(appended.String(), "=== ") != 2 {
		t.Errorf("not on a terminal the draws are appended without escapes:\n%q", appended.String())
	}
}

// startCount returns a started shared count, closed at the end of the
// test.
func startCount(t *testing.T, c *recipes.Client, path string, seed int) *shared.Count {
	t.Helper()
	count, err := shared.NewCount(c, path, seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := count.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = count.Close(context.Background()) })
	return count
}

// TestGoBarriersAndCounters: a double barrier of 3 with two members
// waiting, then all three entered (ready); a barrier that is up; a
// counter of each width (a long, an int).
func TestGoBarriersAndCounters(t *testing.T) {
	runRoot := newRunRoot()
	zkc := zkServer(t)
	ctx := testCtx(t)
	obs := connectT(t, zkc)
	path := runRoot + "/jobs/start"
	var members []*barrier.DoubleBarrier
	for range 3 {
		d, err := barrier.NewDouble(connectT(t, zkc), path, 3)
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, d)
	}
	var entered []<-chan error
	for _, d := range members[:2] {
		entered = append(entered, lockAsync(t, func() error { return d.Enter(ctx) }))
	}
	waitChildren(t, obs, path, 2)
	goldenBoth(t, zkc, "double-barrier-waiting", path)
	if err := members[2].Enter(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ch := range entered {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	goldenBoth(t, zkc, "double-barrier-ready", path)

	b, err := barrier.New(obs, runRoot+"/jobs/gate")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	golden(t, "barrier-up", new(normaliser).text(inspectOut(t, zkc, runRoot+"/jobs/gate")))
	long, err := atomicval.NewInt64(obs, runRoot+"/ids/orders")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := long.Add(ctx, 1<<40); err != nil {
		t.Fatal(err)
	}
	goldenBoth(t, zkc, "counter-long", runRoot+"/ids/orders")
	short, err := atomicval.NewInt32(obs, runRoot+"/ids/retries")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := short.Add(ctx, -3); err != nil {
		t.Fatal(err)
	}
	golden(t, "counter-int", new(normaliser).text(inspectOut(t, zkc, runRoot+"/ids/retries")))
	golden(t, "summary-barriers", new(normaliser).text(inspectOut(t, zkc, runRoot)))

	var wg sync.WaitGroup
	for _, d := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.Leave(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var out bytes.Buffer
	err = run(ctx, append(append([]string{"-servers", zkc.ConnectString()}, tlsFlags(zkc)...), path), &out)
	if err == nil {
		// The container may stay a moment: then it has no children.
		if !strings.Contains(out.String(), "empty") {
			t.Errorf("after every member left: %s", out.String())
		}
	} else if !errors.Is(err, errNoNode) {
		t.Errorf("after every member left: %v", err)
	}
}

// TestCuratorDoubleBarrier: a double barrier of 3 with two Curator members
// waiting and one Go member: zkinspect sees Curator's members as ours
// (curator-compatible, waiting), then all three IN once ready exists.
func TestCuratorDoubleBarrier(t *testing.T) {
	runRoot := newRunRoot()
	if _, err := interop.JavaClasspath(); err != nil {
		testutil.Unavailable(t, err)
	}
	zkc := testutil.Server(t) // plain even under ZK_TEST_TLS: Curator speaks plain ZooKeeper
	ctx := testCtx(t)
	dir := t.TempDir()
	path := runRoot + "/curator-double"
	obs := connectT(t, zkc)
	var javas []*interop.Proc
	for range 2 {
		j := testutil.Curator(t, ctx, dir, "doublebarrier", zkc.ConnectString(), path, "3")
		if err := j.WaitLine(ctx, "READY"); err != nil {
			t.Fatal(err)
		}
		if err := j.Send("ENTER"); err != nil {
			t.Fatal(err)
		}
		javas = append(javas, j)
	}
	waitChildren(t, obs, path, 2)
	out := new(normaliser).text(inspectOut(t, zkc, path))
	for _, want := range []string{"double barrier (DistributedDoubleBarrier)", "status: 2 members, ready: no; 0 entered, 2 waiting", "curator-compatible"} {
		if !strings.Contains(out, want) {
			t.Errorf("Curator's waiting members: no %q in\n%s", want, out)
		}
	}
	d, err := barrier.NewDouble(connectT(t, zkc), path, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	for _, j := range javas {
		if err := j.WaitLine(ctx, "ENTERED"); err != nil {
			t.Fatal(err)
		}
	}
	out = new(normaliser).text(inspectOut(t, zkc, path))
	if !strings.Contains(out, "status: 3 members, ready: yes; 3 entered, 0 waiting") {
		t.Errorf("all entered:\n%s", out)
	}
	for _, j := range javas {
		if err := j.Send("LEAVE"); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for _, j := range javas {
		if err := j.WaitLine(ctx, "LEFT"); err != nil {
			t.Fatal(err)
		}
	}
}
