package interop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	_ "github.com/zkrecipes/zkrecipes/recipes/zktest/zkdocker" // Launch may start a container
)

// The package's tests share one standalone ZooKeeper server from
// recipes/zktest (ZK_TEST_SERVERS, else Debian's jars, else Docker
// through zkdocker),
// started by TestMain. Each test works under a path of its own.
var (
	zkConnect string // connect string, empty when no server
	zkErr     error  // why there is no server
)

func TestMain(m *testing.M) {
	code := func() int {
		// Plain even under ZK_TEST_TLS: the Curator and Kazoo programs
		// these tests drive speak plain ZooKeeper.
		c, err := zktest.Launch(1, zktest.WithoutTLS())
		if err != nil {
			zkErr = err
			return m.Run()
		}
		defer c.Close()
		zkConnect = c.ConnectString()
		return m.Run()
	}()
	os.Exit(code)
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// dialZK connects a go-zookeeper client and waits for its session.
func dialZK(addr string, wait time.Duration) (*zk.Conn, error) {
	conn, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil, errors.New("event channel closed")
			}
			if ev.State == zk.StateHasSession {
				// Keep draining so go-zookeeper never blocks on us.
				go func() {
					for range events {
					}
				}()
				return conn, nil
			}
		case <-timer.C:
			conn.Close()
			return nil, fmt.Errorf("no session with %s after %v", addr, wait)
		}
	}
}

// needServer skips the test when there is no ZooKeeper, and returns a
// go-zookeeper client closed at the end of the test.
func needServer(t *testing.T) *zk.Conn {
	t.Helper()
	if zkConnect == "" {
		t.Skipf("no ZooKeeper server: %v", zkErr)
	}
	conn, err := dialZK(zkConnect, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

func needCurator(t *testing.T) {
	t.Helper()
	if _, err := JavaClasspath(); err != nil {
		t.Skip(err)
	}
	if _, err := javaBinary(); err != nil {
		t.Skip(err)
	}
}

func needKazoo(t *testing.T) {
	t.Helper()
	if err := KazooAvailable(); err != nil {
		t.Skip(err)
	}
}

// testPath returns a fresh lock path for the test.
func testPath(t *testing.T) string {
	return "/interop/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "-" + uuid.NewString()[:8]
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startProc starts a Curator or Kazoo driver and kills it at the end of
// the test if it is still running.
func startProc(t *testing.T, ctx context.Context, kind, dir string, args ...string) *Proc {
	t.Helper()
	var (
		p   *Proc
		err error
	)
	switch kind {
	case "curator":
		p, err = StartCurator(ctx, dir, args...)
	case "kazoo":
		p, err = StartKazoo(ctx, dir, args...)
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// mkdirs creates path and its parents as persistent nodes.
func mkdirs(t *testing.T, conn *zk.Conn, path string) {
	t.Helper()
	cur := ""
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		cur += "/" + seg
		if _, err := conn.Create(cur, nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", cur, err)
		}
	}
}

// createGoLockNode creates a node laid out as Curator's InterProcessMutex
// (and the Go library) does: _c_<uuid>-lock-<seq>, ephemeral sequential.
func createGoLockNode(t *testing.T, conn *zk.Conn, path string) string {
	t.Helper()
	p, err := conn.Create(path+"/_c_"+uuid.NewString()+"-lock-", []byte("go"), zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatalf("create lock node under %s: %v", path, err)
	}
	return p
}

// waitChildren polls until path has n children and returns them.
func waitChildren(t *testing.T, ctx context.Context, conn *zk.Conn, path string, n int) []string {
	t.Helper()
	for {
		kids, _, err := conn.Children(path)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatal(err)
		}
		if len(kids) == n {
			return kids
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s has children %q, want %d: %v", path, kids, n, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// curatorSortKey is StandardLockInternalsDriver.standardFixForSorting.
func curatorSortKey(name, lockName string) string {
	i := strings.LastIndex(name, lockName)
	if i < 0 {
		return name
	}
	return name[i+len(lockName):]
}

// assertNotPrinted fails if p prints want within d.
func assertNotPrinted(t *testing.T, p *Proc, want string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := p.WaitLine(ctx, want); err == nil {
		t.Fatalf("%s printed %q too early; stdout:\n%s", p.Name, want, p.Output())
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// runMutexContenders starts one mutex driver per kind on one path, lines
// them up with READY/GO, and checks that no two holds overlapped.
func runMutexContenders(t *testing.T, iterations, holdMillis int, kinds ...string) {
	needServer(t)
	ctx := testCtx(t)
	dir := t.TempDir()
	path := testPath(t)
	type contender struct {
		p        *Proc
		out, who string
	}
	var cs []contender
	for i, k := range kinds {
		who := fmt.Sprintf("%s#%d", k, i)
		out := filepath.Join(dir, who+".txt")
		p := startProc(t, ctx, k, dir, "mutex", zkConnect, path, strconv.Itoa(iterations), out, strconv.Itoa(holdMillis))
		cs = append(cs, contender{p, out, who})
	}
	for _, c := range cs {
		must(t, c.p.WaitLine(ctx, "READY"))
	}
	began := time.Now()
	for _, c := range cs {
		must(t, c.p.Send("GO"))
	}
	var all []Interval
	for _, c := range cs {
		must(t, c.p.Wait())
		iv, err := ReadIntervals(c.out, c.who)
		must(t, err)
		if len(iv) != iterations {
			t.Fatalf("%s recorded %d holds, want %d", c.who, len(iv), iterations)
		}
		all = append(all, iv...)
	}
	must(t, CheckNoOverlap(all))
	switches := 0
	for i := 1; i < len(all); i++ {
		if all[i].Who != all[i-1].Who {
			switches++
		}
	}
	t.Logf("%d holds by %v in %v, %d hand-overs between processes, no overlap",
		len(all), kinds, time.Since(began).Round(time.Millisecond), switches)
	if switches == 0 {
		t.Errorf("the contenders never alternated, so they did not really contend: %v", all)
	}
}

func TestCuratorMutexContention(t *testing.T) {
	t.Parallel()
	needCurator(t)
	runMutexContenders(t, 20, 10, "curator", "curator")
}

func TestKazooMutexContention(t *testing.T) {
	t.Parallel()
	needKazoo(t)
	runMutexContenders(t, 20, 10, "kazoo", "kazoo", "kazoo")
}

// TestCuratorWaitsForGoNode: a node made by hand in the Curator layout
// blocks a real Curator InterProcessMutex until it is deleted.
func TestCuratorWaitsForGoNode(t *testing.T) {
	t.Parallel()
	needCurator(t)
	conn := needServer(t)
	ctx := testCtx(t)
	path := testPath(t)
	mkdirs(t, conn, path)
	goNode := createGoLockNode(t, conn, path)

	h := startProc(t, ctx, "curator", t.TempDir(), "holder", zkConnect, path)
	waitChildren(t, ctx, conn, path, 2)
	assertNotPrinted(t, h, "ACQUIRED", 500*time.Millisecond)

	must(t, conn.Delete(goNode, -1))
	must(t, h.WaitLine(ctx, "ACQUIRED"))
	must(t, h.Send("release"))
	must(t, h.WaitLine(ctx, "RELEASED"))
	must(t, h.Wait())
}

// TestParticipantsOrder puts four contenders in one queue — a Curator
// holder, two nodes made by go-zookeeper in the Curator layout, and a Kazoo
// holder (whose extra pattern "-lock-" recognises the others) — and checks
// the order each library reports, then that Kazoo waits for the Go nodes.
func TestParticipantsOrder(t *testing.T) {
	t.Parallel()
	needCurator(t)
	needKazoo(t)
	conn := needServer(t)
	ctx := testCtx(t)
	dir := t.TempDir()
	path := testPath(t)

	cur := startProc(t, ctx, "curator", dir, "holder", zkConnect, path)
	must(t, cur.WaitLine(ctx, "ACQUIRED"))
	g1 := createGoLockNode(t, conn, path)
	g2 := createGoLockNode(t, conn, path)
	kaz := startProc(t, ctx, "kazoo", dir, "holder", zkConnect, path)
	kids := waitChildren(t, ctx, conn, path, 4)

	var curNode, kazNode string
	for _, k := range kids {
		switch {
		case strings.Contains(k, "__lock__"):
			kazNode = path + "/" + k
		case path+"/"+k != g1 && path+"/"+k != g2:
			curNode = path + "/" + k
		}
	}
	if curNode == "" || kazNode == "" {
		t.Fatalf("cannot tell the Curator and Kazoo nodes apart in %q", kids)
	}
	t.Logf("children: %q", kids)

	// Kazoo: contenders matching (?:__lock__|-lock-)(-?\d{10})$, by sequence.
	wantKazoo := []string{curNode, g1, g2, kazNode}
	// Curator: every child, by the text after the last "lock-" (the whole
	// name when absent, as for Kazoo's node).
	wantCurator := slices.Clone(wantKazoo)
	sort.SliceStable(wantCurator, func(i, j int) bool {
		return curatorSortKey(filepath.Base(wantCurator[i]), "lock-") < curatorSortKey(filepath.Base(wantCurator[j]), "lock-")
	})

	cp := startProc(t, ctx, "curator", dir, "participants", zkConnect, path)
	kp := startProc(t, ctx, "kazoo", dir, "participants", zkConnect, path)
	must(t, cp.Wait())
	must(t, kp.Wait())
	if got := cp.Lines(); !slices.Equal(got, wantCurator) {
		t.Errorf("Curator participants:\n got %q\nwant %q", got, wantCurator)
	}
	if got := kp.Lines(); !slices.Equal(got, wantKazoo) {
		t.Errorf("Kazoo participants:\n got %q\nwant %q", got, wantKazoo)
	}

	// Kazoo's predecessor is g2: releasing Curator and g1 is not enough.
	must(t, conn.Delete(g1, -1))
	must(t, cur.Send("release"))
	must(t, cur.WaitLine(ctx, "RELEASED"))
	must(t, cur.Wait())
	assertNotPrinted(t, kaz, "ACQUIRED", 500*time.Millisecond)
	must(t, conn.Delete(g2, -1))
	must(t, kaz.WaitLine(ctx, "ACQUIRED"))
	must(t, kaz.Send("release"))
	must(t, kaz.WaitLine(ctx, "RELEASED"))
	must(t, kaz.Wait())
}

// TestCuratorKazooMixIsUnsafe documents why Curator and Kazoo must not
// share a lock path: Curator counts Kazoo's "<hex>__lock__<seq>" node as a
// contender but sorts it by its whole name, which (unless the hex starts
// with nine zeros) sorts after every "lock-<seq>" key, so a Curator
// contender that arrives second still acquires while Kazoo holds.
func TestCuratorKazooMixIsUnsafe(t *testing.T) {
	t.Parallel()
	needCurator(t)
	needKazoo(t)
	needServer(t)
	ctx := testCtx(t)
	dir := t.TempDir()
	path := testPath(t)
	kaz := startProc(t, ctx, "kazoo", dir, "holder", zkConnect, path)
	must(t, kaz.WaitLine(ctx, "ACQUIRED"))
	cur := startProc(t, ctx, "curator", dir, "holder", zkConnect, path)
	must(t, cur.WaitLine(ctx, "ACQUIRED")) // both hold now
	for _, p := range []*Proc{cur, kaz} {
		must(t, p.Send("release"))
		must(t, p.WaitLine(ctx, "RELEASED"))
		must(t, p.Wait())
	}
}

// TestKilledHolder: a holder process killed with SIGKILL loses the lock
// when its session expires, and the next contender gets it.
func TestKilledHolder(t *testing.T) {
	for _, kind := range []string{"curator", "kazoo"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			if kind == "curator" {
				needCurator(t)
			} else {
				needKazoo(t)
			}
			needServer(t)
			ctx := testCtx(t)
			dir := t.TempDir()
			path := testPath(t)
			a := startProc(t, ctx, kind, dir, "holder", zkConnect, path)
			must(t, a.WaitLine(ctx, "ACQUIRED"))
			b := startProc(t, ctx, kind, dir, "holder", zkConnect, path)
			killed := time.Now()
			a.Kill()
			if err := a.Wait(); err == nil {
				t.Fatal("killed process reported success")
			}
			must(t, b.WaitLine(ctx, "ACQUIRED"))
			t.Logf("next holder acquired %v after the kill", time.Since(killed).Round(time.Millisecond))
			must(t, b.CloseStdin())
			must(t, b.WaitLine(ctx, "RELEASED"))
			must(t, b.Wait())
		})
	}
}

func TestProcErrors(t *testing.T) {
	t.Parallel()
	needKazoo(t)
	ctx := testCtx(t)
	p := startProc(t, ctx, "kazoo", t.TempDir(), "no-such-mode")
	err := p.WaitLine(ctx, "READY")
	if err == nil || !strings.Contains(err.Error(), "unknown mode") {
		t.Fatalf("WaitLine on a failing process: %v", err)
	}
	if err := p.Wait(); err == nil || !strings.Contains(err.Error(), "unknown mode") {
		t.Fatalf("Wait: %v", err)
	}
}

func TestReadIntervals(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		f := filepath.Join(dir, uuid.NewString())
		must(t, os.WriteFile(f, []byte(s), 0o644))
		return f
	}
	iv, err := ReadIntervals(write("1 2\n3 5\ndone 2\n"), "x")
	must(t, err)
	if want := []Interval{{1, 2, "x"}, {3, 5, "x"}}; !slices.Equal(iv, want) {
		t.Fatalf("got %v want %v", iv, want)
	}
	if iv, err := ReadIntervals(write("1 2\n"), "x"); err != nil || len(iv) != 1 {
		t.Fatalf("unfinished file: %v %v", iv, err)
	}
	for _, bad := range []string{"1 2\ndone 3\n", "2 1\n", "1\n", "a b\n", "done 0\n1 2\n"} {
		if _, err := ReadIntervals(write(bad), "x"); err == nil {
			t.Errorf("ReadIntervals(%q) succeeded", bad)
		}
	}
	if _, err := ReadIntervals(filepath.Join(dir, "missing"), "x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestCheckNoOverlap(t *testing.T) {
	ok := []Interval{{10, 20, "b"}, {0, 5, "a"}, {20, 30, "a"}}
	must(t, CheckNoOverlap(ok))
	if ok[0].Start != 0 {
		t.Fatalf("not sorted: %v", ok)
	}
	for _, bad := range [][]Interval{
		{{0, 10, "a"}, {5, 15, "b"}},
		{{0, 100, "a"}, {10, 20, "b"}, {30, 40, "c"}}, // c overlaps a, not b
	} {
		err := CheckNoOverlap(bad)
		if err == nil {
			t.Errorf("CheckNoOverlap(%v) found no overlap", bad)
		} else {
			t.Log(err)
		}
	}
}

// TestJavaClasspathOverride checks the CURATOR_CLASSPATH override.
func TestJavaClasspathOverride(t *testing.T) {
	t.Setenv(ClasspathEnv, "/x.jar:/y.jar")
	cp, err := JavaClasspath()
	if err != nil || cp != "/x.jar:/y.jar" {
		t.Fatalf("got %q, %v", cp, err)
	}
}
