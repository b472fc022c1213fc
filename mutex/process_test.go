package mutex_test

// Tests that run contenders in separate OS processes. They re-run the test
// binary itself (os.Args[0] -test.run=^TestHelperProcess$) with its role in
// the environment, the idiom Go's own os/exec tests use.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// Environment of a helper process.
const (
	helperEnvRole    = "ZKR_HELPER"  // "contend" or "hold"
	helperEnvServers = "ZKR_SERVERS" // comma-separated host:port
	helperEnvPath    = "ZKR_PATH"    // lock path
	helperEnvOut     = "ZKR_OUT"     // contend: intervals file
	helperEnvIters   = "ZKR_ITERS"   // contend: iterations per goroutine
	helperEnvCounter = "ZKR_COUNTER" // contend: counter znode
	helperEnvWorkers = "ZKR_WORKERS" // contend: goroutines
	helperEnvLocal   = "ZKR_LOCAL"   // contend: WithLocalHandoff bound, if set
)

// TestHelperProcess is not a test: it is the body of the helper processes
// the tests below start. It returns at once unless ZKR_HELPER is set.
func TestHelperProcess(t *testing.T) {
	helpers.Run(map[string]func() error{"contend": helperContend, "hold": helperHold})
}

// helpers starts the helper processes.
var helpers = testutil.Helpers{Test: "TestHelperProcess", RoleEnv: helperEnvRole}

// helperContend runs ZKR_WORKERS goroutines sharing one Client and one
// Mutex. Each does ZKR_ITERS times: Lock; read-increment-write the counter
// znode (unconditional Set, so a second holder would lose updates);
// Unlock; and records the hold in ZKR_OUT.
func helperContend() error {
	servers := strings.Split(os.Getenv(helperEnvServers), ",")
	path, counter, outFile := os.Getenv(helperEnvPath), os.Getenv(helperEnvCounter), os.Getenv(helperEnvOut)
	iters, err := testutil.EnvInt(helperEnvIters)
	if err != nil {
		return err
	}
	workers, err := testutil.EnvInt(helperEnvWorkers)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()

	c, err := testutil.Dial(context.Background(), servers, recipes.WithSessionTimeout(4*time.Second))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	var opts []mutex.Option
	if os.Getenv(helperEnvLocal) != "" {
		bound, err := testutil.EnvInt(helperEnvLocal)
		if err != nil {
			return err
		}
		opts = append(opts, mutex.WithLocalHandoff(bound))
	}
	m, err := mutex.New(c, path, opts...)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(outFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()

	var (
		fileMu sync.Mutex
		wg     sync.WaitGroup
		errMu  sync.Mutex
		errs   []error
	)
	fail := func(err error) {
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				if err := contendOnce(ctx, c, m, counter, f, &fileMu); err != nil {
					fail(fmt.Errorf("goroutine %d iteration %d: %w", g, i, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "done %d\n", workers*iters); err != nil {
		return err
	}
	return f.Close()
}

func contendOnce(ctx context.Context, c *recipes.Client, m *mutex.Mutex, counter string, f *os.File, fileMu *sync.Mutex) error {
	lease, err := m.Acquire(ctx)
	if err != nil {
		return err
	}
	start := time.Now().UnixNano()
	// The counter holds "<count> <fence token of its last writer>": each
	// holder checks that its token is larger, and writes through Fenced.
	tok, err := lease.Token(ctx)
	var data []byte
	if err == nil {
		data, _, err = c.UnsafeConn().Get(counter)
	}
	if err == nil {
		var n int
		var last recipes.FenceToken
		if n, last, err = parseCounter(data); err == nil {
			if tok.Compare(last) <= 0 {
				err = fmt.Errorf("fencing token %v does not follow %v", tok, last)
			} else {
				_, err = lease.Fenced(ctx, recipes.SetOp(counter, []byte(fmt.Sprintf("%d %d.%d", n+1, tok.Czxid, tok.Local)), -1))
			}
		}
	}
	select {
	case <-lease.Done():
		if err == nil {
			err = errors.New("hold may have been lost during the critical section")
		}
	default:
	}
	end := time.Now().UnixNano()
	if uerr := m.Release(ctx); err == nil {
		err = uerr
	}
	if err != nil {
		return err
	}
	fileMu.Lock()
	defer fileMu.Unlock()
	_, err = fmt.Fprintf(f, "%d %d\n", start, end)
	return err
}

// parseCounter reads "<count> <czxid>.<local>" (or a bare count).
func parseCounter(data []byte) (int, recipes.FenceToken, error) {
	var t recipes.FenceToken
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0, t, fmt.Errorf("empty counter")
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || len(fields) == 1 {
		return n, t, err
	}
	_, err = fmt.Sscanf(fields[1], "%d.%d", &t.Czxid, &t.Local)
	return n, t, err
}

// helperHold takes the lock with a 2s session, prints "NODE <path>
// <token> <negotiated session timeout in ms>" and "LOCKED", and then
// blocks until its stdin closes (the parent is gone), so it can only lose
// the lock by being killed.
func helperHold() error {
	return testutil.HoldUntilParentGone(strings.Split(os.Getenv(helperEnvServers), ","), "LOCKED",
		func(ctx context.Context, c *recipes.Client) (recipes.Hold, error) {
			m, err := mutex.New(c, os.Getenv(helperEnvPath))
			if err != nil {
				return nil, err
			}
			return m.AcquireHold(ctx)
		})
}

// procConnect connects a Client to the cluster and closes it at the end
// of the test.
func procConnect(t *testing.T, servers []string, opts ...recipes.Option) *recipes.Client {
	t.Helper()
	c, err := testutil.Dial(context.Background(), servers, append([]recipes.Option{recipes.WithSessionTimeout(4 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// procWaitParticipants polls until m has exactly n participants and returns
// them.
func procWaitParticipants(ctx context.Context, t *testing.T, m *mutex.Mutex, n int) []recipes.Participant {
	t.Helper()
	for {
		ps, err := m.Participants(ctx)
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

// TestMutualExclusionAcrossProcesses runs 3 processes × 8 goroutines on one
// lock path. Every hold does an unconditional read-increment-write of a
// counter znode, so two simultaneous holders would lose an update; the
// final count must be exact and the recorded hold intervals (wall clock,
// one machine) must not overlap.
// TestMutualExclusionAcrossProcesses runs 3 processes × 8 goroutines on
// one lock, each holder incrementing a counter through a fenced write after
// checking that its fencing token follows the last writer's: with every
// goroutine queueing its own node, and with WithLocalHandoff (the
// goroutines of a process passing the process's node in memory, at most 4
// times in a row).
func TestMutualExclusionAcrossProcesses(t *testing.T) {
	t.Run("zookeeper", func(t *testing.T) { testMutualExclusionAcrossProcesses(t, 0) })
	t.Run("local", func(t *testing.T) { testMutualExclusionAcrossProcesses(t, 4) })
}

func testMutualExclusionAcrossProcesses(t *testing.T, local int) {
	const (
		procs   = 3
		workers = 8
		iters   = 10
	)
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	c := procConnect(t, zkc.Servers())
	id := uuid.NewString()[:8]
	path := "/process/mutex-" + id
	counter := "/counter-" + id
	if _, err := c.UnsafeConn().Create(counter, []byte("0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	start := time.Now()
	hs := make([]*testutil.HelperProc, procs)
	files := make([]string, procs)
	for i := range hs {
		files[i] = filepath.Join(dir, fmt.Sprintf("proc%d.txt", i))
		hs[i] = helpers.Start(t, fmt.Sprintf("contend-%d", i), "contend",
			helperEnvServers+"="+strings.Join(zkc.Servers(), ","),
			helperEnvPath+"="+path,
			helperEnvCounter+"="+counter,
			helperEnvOut+"="+files[i],
			helperEnvIters+"="+strconv.Itoa(iters),
			helperEnvWorkers+"="+strconv.Itoa(workers),
			helperEnvLocal+"="+map[bool]string{true: strconv.Itoa(local)}[local > 0],
		)
	}
	for _, h := range hs {
		if err := h.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)

	data, _, err := c.UnsafeConn().Get(counter)
	if err != nil {
		t.Fatal(err)
	}
	want := procs * workers * iters
	if got, _, err := parseCounter(data); err != nil || got != want {
		t.Errorf("counter = %q, want %d (lost updates mean two holders at once)", data, want)
	}

	var all []interop.Interval
	for i, f := range files {
		iv, err := interop.ReadIntervals(f, fmt.Sprintf("proc%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if len(iv) != workers*iters {
			t.Errorf("proc%d recorded %d holds, want %d", i, len(iv), workers*iters)
		}
		all = append(all, iv...)
	}
	if err := interop.CheckNoOverlap(all); err != nil {
		t.Error(err)
	}
	switches := 0
	for i := 1; i < len(all); i++ {
		if all[i].Who != all[i-1].Who {
			switches++
		}
	}
	span := time.Duration(all[len(all)-1].End - all[0].Start)
	t.Logf("%d holds by %d processes × %d goroutines in %v (holds span %v: %.0f holds/s), %d hand-offs between processes",
		len(all), procs, workers, elapsed.Round(time.Millisecond), span.Round(time.Millisecond),
		float64(len(all))/span.Seconds(), switches)
	if switches == 0 {
		t.Error("the processes never handed the lock to each other")
	}

	if ps, err := procNewMutex(t, c, path).Participants(ctx); err != nil || len(ps) != 0 {
		t.Errorf("participants after all released = %v, %v; want none", ps, err)
	}
}

func procNewMutex(t *testing.T, c *recipes.Client, path string, opts ...mutex.Option) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestHolderKilledNextWaiterAcquires kills -9 a process that holds the lock
// and checks that the queued waiter gets it once the server expires the
// dead session: not before the kill, and within the session timeout plus a
// margin. The new holder's fencing token is larger than the dead one's.
func TestHolderKilledNextWaiterAcquires(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	path := "/process/killed-" + uuid.NewString()[:8]

	h := helpers.Start(t, "hold", "hold",
		helperEnvServers+"="+strings.Join(zkc.Servers(), ","),
		helperEnvPath+"="+path,
	)
	dead := h.WaitHolder(ctx, t, "LOCKED", 2*time.Second)

	c := procConnect(t, zkc.Servers())
	m := procNewMutex(t, c, path)
	if ps := procWaitParticipants(ctx, t, m, 1); ps[0].Node != dead.Node {
		t.Fatalf("participants = %v, want the helper's %s", ps, dead.Node)
	}

	// An explicit owner lets the test goroutine unlock what another took.
	owner := mutex.WithOwner(ctx, "waiter")
	got := make(chan testutil.Acquired[*mutex.Lease], 1)
	go func() {
		l, err := m.Acquire(owner)
		got <- testutil.Acquired[*mutex.Lease]{Value: l, Err: err, At: time.Now()}
	}()
	ps := procWaitParticipants(ctx, t, m, 2) // the waiter is queued behind the helper
	if ps[0].Node != dead.Node {
		t.Fatalf("participants = %v, want the helper's %s first", ps, dead.Node)
	}
	select {
	case r := <-got:
		t.Fatalf("waiter returned while the helper held the lock: %v, %v", r.Value, r.Err)
	default:
	}

	lease := testutil.KillHolder(t, h, dead.SessionTimeout, got)

	tok, err := lease.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Czxid <= dead.Token {
		t.Errorf("token %v of the new holder is not above the dead holder's 0x%x", tok, dead.Token)
	}
	if ps := procWaitParticipants(ctx, t, m, 1); ps[0].Node != lease.Node() {
		t.Errorf("participants = %v, want only %s", ps, lease.Node())
	}
	if err := m.Release(owner); err != nil {
		t.Errorf("unlock: %v", err)
	}
}
