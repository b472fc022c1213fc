package semaphore_test

// Multi-process tests: the test binary re-runs itself as helper processes
// (os.Args[0] -test.run=^TestHelperProcess$) with their role in the
// environment, the idiom Go's own os/exec tests use, so that separate OS
// processes, each with its own session, share one semaphore.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// Environment of a helper process.
const (
	helperEnvRole    = "ZKS_HELPER"  // "contend" or "hold"
	helperEnvServers = "ZKS_SERVERS" // comma-separated host:port
	helperEnvPath    = "ZKS_PATH"    // semaphore path
	helperEnvMax     = "ZKS_MAX"     // maximum leases
	helperEnvOut     = "ZKS_OUT"     // contend: intervals file
	helperEnvIters   = "ZKS_ITERS"   // contend: iterations per goroutine
	helperEnvWorkers = "ZKS_WORKERS" // contend: goroutines
	helperEnvGauge   = "ZKS_GAUGE"   // contend: gauge znode
	helperEnvHold    = "ZKS_HOLD"    // contend: hold time (time.ParseDuration)
)

// TestHelperProcess is not a test: it is the body of the helper processes
// the tests below start. It returns at once unless ZKS_HELPER is set.
func TestHelperProcess(t *testing.T) {
	helpers.Run(map[string]func() error{"contend": helperContend, "hold": helperHold})
}

// helpers starts the helper processes.
var helpers = testutil.Helpers{Test: "TestHelperProcess", RoleEnv: helperEnvRole}

// gaugeValue is the content of the gauge znode: the holders now, the most
// there ever were, and the holds so far.
type gaugeValue struct{ cur, peak, total int }

func parseGauge(b []byte) (gaugeValue, error) {
	var g gaugeValue
	if _, err := fmt.Sscanf(string(b), "%d %d %d", &g.cur, &g.peak, &g.total); err != nil {
		return g, fmt.Errorf("gauge %q: %w", b, err)
	}
	return g, nil
}

func (g gaugeValue) bytes() []byte { return []byte(fmt.Sprintf("%d %d %d", g.cur, g.peak, g.total)) }

// gaugeAdd adds delta to the gauge with a compare-and-set that the server
// applies only while lease's node exists (a fenced write), and returns the
// new value. A holder that is not really a holder can neither raise nor
// lower it.
func gaugeAdd(ctx context.Context, c *recipes.Client, lease *semaphore.Lease, gauge string, delta int) (gaugeValue, error) {
	for {
		data, st, err := c.UnsafeConn().Get(gauge)
		if err != nil {
			return gaugeValue{}, err
		}
		g, err := parseGauge(data)
		if err != nil {
			return g, err
		}
		g.cur += delta
		g.peak = max(g.peak, g.cur)
		if delta > 0 {
			g.total++
		}
		_, err = lease.Fenced(ctx, recipes.SetOp(gauge, g.bytes(), st.Version))
		if errors.Is(err, zk.ErrBadVersion) {
			continue // another holder moved it: read again
		}
		return g, err
	}
}

// helperContend runs ZKS_WORKERS goroutines sharing one Client and one
// Semaphore of ZKS_MAX leases. Each does ZKS_ITERS times: Acquire;
// raise the gauge znode by a fenced compare-and-set (failing if it goes
// over the maximum); hold for ZKS_HOLD; lower the gauge; Close; and records
// the hold in ZKS_OUT as "start end" (start taken after Acquire returned,
// end before Close, so the recorded interval lies within the lease).
func helperContend() error {
	servers := strings.Split(os.Getenv(helperEnvServers), ",")
	path, gauge, outFile := os.Getenv(helperEnvPath), os.Getenv(helperEnvGauge), os.Getenv(helperEnvOut)
	var ints [3]int
	for i, name := range []string{helperEnvMax, helperEnvIters, helperEnvWorkers} {
		n, err := testutil.EnvInt(name)
		if err != nil {
			return err
		}
		ints[i] = n
	}
	maxLeases, iters, workers := ints[0], ints[1], ints[2]
	hold, err := time.ParseDuration(os.Getenv(helperEnvHold))
	if err != nil {
		return fmt.Errorf("%s: %w", helperEnvHold, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()

	c, err := testutil.Dial(context.Background(), servers, recipes.WithSessionTimeout(4*time.Second))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	s, err := semaphore.New(c, path, maxLeases)
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
	once := func(g int) error {
		l, err := s.Acquire(ctx)
		if err != nil {
			return err
		}
		start := time.Now().UnixNano()
		v, err := gaugeAdd(ctx, c, l, gauge, +1)
		if err == nil && v.cur > maxLeases {
			err = fmt.Errorf("%d holders at once, at most %d allowed", v.cur, maxLeases)
		}
		if err == nil {
			time.Sleep(hold) // the bounded hold: holders overlap
			_, err = gaugeAdd(ctx, c, l, gauge, -1)
		}
		select {
		case <-l.Done():
			if err == nil {
				err = errors.New("the lease may have been lost during the hold")
			}
		default:
		}
		end := time.Now().UnixNano()
		if cerr := l.Release(ctx); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		fileMu.Lock()
		defer fileMu.Unlock()
		_, err = fmt.Fprintf(f, "%d %d\n", start, end)
		return err
	}
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				if err := once(g); err != nil {
					errMu.Lock()
					errs = append(errs, fmt.Errorf("goroutine %d iteration %d: %w", g, i, err))
					errMu.Unlock()
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

// helperHold takes one lease of a ZKS_MAX-lease semaphore with a 2s
// session, prints "NODE <path> <token> <negotiated session timeout in ms>"
// and "LEASED", and then blocks until its stdin closes (the parent is
// gone), so it can only lose the lease by being killed.
func helperHold() error {
	maxLeases, err := testutil.EnvInt(helperEnvMax)
	if err != nil {
		return err
	}
	return testutil.HoldUntilParentGone(strings.Split(os.Getenv(helperEnvServers), ","), "LEASED",
		func(ctx context.Context, c *recipes.Client) (recipes.Hold, error) {
			s, err := semaphore.New(c, os.Getenv(helperEnvPath), maxLeases)
			if err != nil {
				return nil, err
			}
			return s.Acquire(ctx)
		})
}

// sweep returns the largest number of intervals that hold at one instant,
// with the instant and who held then. An interval holds on [Start, End):
// one that ends where another starts does not overlap it.
func sweep(iv []interop.Interval) (peak int, at int64, who []string) {
	type edge struct {
		t     int64
		delta int
		who   string
	}
	edges := make([]edge, 0, 2*len(iv))
	for _, v := range iv {
		edges = append(edges, edge{v.Start, +1, v.Who}, edge{v.End, -1, v.Who})
	}
	// At equal times the ends go first.
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].t != edges[j].t {
			return edges[i].t < edges[j].t
		}
		return edges[i].delta < edges[j].delta
	})
	cur := 0
	holding := map[string]int{}
	for _, e := range edges {
		cur += e.delta
		holding[e.who] += e.delta
		if cur > peak {
			peak, at = cur, e.t
			who = who[:0]
			for w, n := range holding {
				for range n {
					who = append(who, w)
				}
			}
			sort.Strings(who)
		}
	}
	return peak, at, who
}

// TestProcessesShareTheMaximum runs 3 processes × 10 goroutines on one
// 4-lease semaphore. Two independent gauges of the holders: one in
// ZooKeeper, raised and lowered by compare-and-set writes fenced on the
// writer's lease node (a helper fails if it ever reads more than 4), and
// the recorded hold intervals of all processes (wall clock, one machine),
// merged and swept. Neither may exceed 4, and every goroutine completes
// all its iterations.
func TestProcessesShareTheMaximum(t *testing.T) {
	const (
		procs     = 3
		workers   = 10
		iters     = 4
		maxLeases = 4
		hold      = 10 * time.Millisecond
	)
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	c := connect(t, zkc.Servers())
	id := uuid.NewString()[:8]
	path := "/process/sem-" + id
	gauge := "/gauge-" + id
	if _, err := c.UnsafeConn().Create(gauge, gaugeValue{}.bytes(), 0, zk.WorldACL(zk.PermAll)); err != nil {
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
			helperEnvMax+"="+strconv.Itoa(maxLeases),
			helperEnvGauge+"="+gauge,
			helperEnvOut+"="+files[i],
			helperEnvIters+"="+strconv.Itoa(iters),
			helperEnvWorkers+"="+strconv.Itoa(workers),
			helperEnvHold+"="+hold.String(),
		)
	}
	for _, h := range hs {
		if err := h.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)

	data, _, err := c.UnsafeConn().Get(gauge)
	if err != nil {
		t.Fatal(err)
	}
	g, err := parseGauge(data)
	if err != nil {
		t.Fatal(err)
	}
	want := procs * workers * iters
	if g.cur != 0 || g.total != want || g.peak > maxLeases || g.peak < 1 {
		t.Errorf("gauge = %+v, want cur 0, total %d, peak in [1, %d]", g, want, maxLeases)
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
	peak, at, who := sweep(all)
	if peak > maxLeases {
		t.Errorf("%d holders at %d: %v; at most %d allowed", peak, at, who, maxLeases)
	}
	mixed := 0 // holds that overlap a hold of another process
	for i, a := range all {
		for j, b := range all {
			if i != j && a.Who != b.Who && a.Start < b.End && b.Start < a.End {
				mixed++
				break
			}
		}
	}
	t.Logf("%d holds by %d processes × %d goroutines in %v; at most %d holders at once by the intervals (%v), %d by the ZooKeeper gauge; %d holds overlapped another process's",
		len(all), procs, workers, elapsed.Round(time.Millisecond), peak, who, g.peak, mixed)
	if mixed == 0 {
		t.Error("no two processes ever held leases at the same time")
	}

	s := newSem(t, c, path, maxLeases)
	if ps, err := s.Participants(ctx); err != nil || len(ps) != 0 {
		t.Errorf("participants after all returned = %v, %v; want none", ps, err)
	}
}

// TestProcessKilledHolderLeaseFreed kills -9 a process that holds one of the
// two leases while the test holds the other and a third acquirer waits:
// the waiter gets the dead holder's lease once the server expires its
// session, not before the kill, and within the session timeout plus a
// margin; its fencing token is larger than the dead lease's.
func TestProcessKilledHolderLeaseFreed(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	const maxLeases = 2
	path := "/process/sem-killed-" + uuid.NewString()[:8]

	h := helpers.Start(t, "hold", "hold",
		helperEnvServers+"="+strings.Join(zkc.Servers(), ","),
		helperEnvPath+"="+path,
		helperEnvMax+"="+strconv.Itoa(maxLeases),
	)
	dead := h.WaitHolder(ctx, t, "LEASED", 2*time.Second)

	c := connect(t, zkc.Servers())
	s := newSem(t, c, path, maxLeases)
	mine, err := s.Acquire(ctx) // the second lease: now the semaphore is full
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TryAcquire(ctx); !errors.Is(err, recipes.ErrNotAcquired) {
		t.Fatalf("TryAcquire on a full semaphore = %v, want ErrNotAcquired", err)
	}

	got := make(chan testutil.Acquired[*semaphore.Lease], 1)
	go func() {
		l, err := s.Acquire(ctx)
		got <- testutil.Acquired[*semaphore.Lease]{Value: l, Err: err, At: time.Now()}
	}()
	// The waiter has made its lease node and waits on the lease list.
	eventually(t, 10*time.Second, "the waiter's lease node", func() bool { return leaseCount(t, c, path) == 3 })
	ps, err := s.Participants(ctx)
	if err != nil || len(ps) != 3 || ps[0].Node != dead.Node {
		t.Fatalf("participants = %v, %v; want the helper's %s first of 3", ps, err, dead.Node)
	}
	select {
	case r := <-got:
		t.Fatalf("waiter returned while the semaphore was full: %v, %v", r.Value, r.Err)
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
	ps, err = s.Participants(ctx)
	if err != nil || len(ps) != 2 {
		t.Fatalf("participants after the expiry = %v, %v; want our 2", ps, err)
	}
	for _, p := range ps {
		if p.Node == dead.Node {
			t.Errorf("the dead holder's %s is still there", dead.Node)
		}
	}
	if err := semaphore.ReleaseAll(ctx, []*semaphore.Lease{mine, lease}); err != nil {
		t.Error(err)
	}
	if n := leaseCount(t, c, path); n != 0 {
		t.Errorf("%d lease nodes left", n)
	}
}
