package interop_test

// Every version Curator's CuratorCache reports, the Go cache reports
// (issue 34): both caches watch one tree of 25 nodes, each in a process
// of its own (ours: the test binary run again as a helper), while a
// writer changes it at about 200 writes/s (sets, deletions, creations,
// now and then the same node twice in a row, 5 ms apart, and bursts of
// sets). After each run both caches are waited for until their events,
// replayed, give the server's tree; then every (path, version) Curator
// reported as NODE_CREATED or NODE_CHANGED in the run must be among the
// Go cache's, as often. A run ends with a set of the root, whose event
// each cache reports after every event before it. A cache that reads a
// node once for several events of it (the Go cache did, for a batch of
// events) reports fewer versions than Curator's, which reads once per
// event. It is a race of the two caches' reads against the writer's next
// set: on a loaded machine either side can lose one (cache/held_test.go
// checks the same without a race).
//
// CI makes -cache-versions-runs runs (4 by default) and asserts that both
// caches converge, logging each version Curator's cache reported and ours
// did not (a race either cache can lose: see the loop); the check
// is 20 runs on the 3.9 leg, strict, which fails on any such version
// (-cache-versions-gap 3ms makes it harder):
//
//	eval "$(bash scripts/zk39-env.sh)"
//	go test -race -count=1 -run TestCuratorCacheVersions ./internal/interop \
//	    -cache-versions-runs 20 -cache-versions-strict

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

var (
	cacheVersionsRuns   = flag.Int("cache-versions-runs", 4, "TestCuratorCacheVersions: runs of 60 writes at 200/s (the issue's check: 20)")
	cacheVersionsStrict = flag.Bool("cache-versions-strict", false, "TestCuratorCacheVersions: fail a run in which ours missed a version Curator's cache reported (by default it is logged)")
	// pairGap is the time between the reply to a set and the next set of
	// the same node, when the writer sets one node twice in a row.
	pairGap = flag.Duration("cache-versions-gap", 5*time.Millisecond, "TestCuratorCacheVersions: from a set's reply to the next set of the same node")
)

// versionCounts counts the NODE_CREATED and NODE_CHANGED lines of evs by
// "path version".
func versionCounts(evs []string) map[string]int {
	out := map[string]int{}
	for _, e := range evs {
		f := strings.Fields(e)
		if len(f) == 3 && (f[0] == "NODE_CREATED" || f[0] == "NODE_CHANGED") {
			out[f[1]+" v"+f[2]]++
		}
	}
	return out
}

// about returns the events of evs about path.
func about(evs []string, path string) []string {
	var out []string
	for _, e := range evs {
		if f := strings.Fields(e); len(f) == 3 && f[1] == path {
			out = append(out, f[0]+" v"+f[2])
		}
	}
	return out
}

// settled reports whether evs, replayed on from, give want.
func settled(from, want map[string]int32, evs []string) bool {
	got := maps.Clone(from)
	return replay(got, evs) == nil && maps.Equal(got, want)
}

// TestCuratorCacheVersions: see the head of the file.
func TestCuratorCacheVersions(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root := "/interop/versions-" + uuid.NewString()[:8]
	admin := testutil.Connect(t, zkc.Servers())
	var nodes []string
	for i := range 24 {
		nodes = append(nodes, fmt.Sprintf("%s/n%02d", root, i))
	}
	_, err := admin.CreateWithParents(ctx, root, []byte("root"), 0)
	require.NoError(t, err)
	for _, p := range nodes {
		_, err := admin.Create(ctx, p, []byte("init"), 0)
		require.NoError(t, err)
	}
	jc := testutil.Curator(t, ctx, t.TempDir(), "cache", zkc.ConnectString(), root)
	gc := startGoCache(ctx, t, zkc.ConnectString(), root)
	require.NoError(t, jc.WaitLine(ctx, "INITIALIZED"))

	rng := rand.New(rand.NewPCG(34, 200))
	from, err := readTree(ctx, admin, root)
	require.NoError(t, err)
	gFrom, _ := gc.events()
	jFrom, _ := javaEvents(jc)
	gGet := func() []string { evs, _ := gc.events(); return evs[len(gFrom):] }
	jGet := func() []string { evs, _ := javaEvents(jc); return evs[len(jFrom):] }
	run := func() (missed []string) {
		writeAt200(ctx, t, admin, root, nodes, rng, 60)
		st, err := admin.Set(ctx, root, []byte("end"), -1)
		require.NoError(t, err)
		want, err := readTree(ctx, admin, root)
		require.NoError(t, err)
		end := fmt.Sprintf("NODE_CHANGED %s %d", root, st.Version)
		gEvs, jEvs := settle(ctx, t, gGet, jGet, end, versionsOf(from), versionsOf(want))
		gCount, jCount := versionCounts(gEvs), versionCounts(jEvs)
		for k, n := range jCount {
			if gCount[k] < n {
				path := strings.Fields(k)[0]
				missed = append(missed, fmt.Sprintf("%s (Curator %d, ours %d; the node's events: ours %v, Curator's %v)", k, n, gCount[k], about(gEvs, path), about(jEvs, path)))
			}
		}
		from = want
		gFrom, jFrom = append(gFrom, gEvs...), append(jFrom, jEvs...)
		return missed
	}
	misses := 0
	for i := range *cacheVersionsRuns {
		if missed := run(); len(missed) > 0 {
			misses++
			// Each cache's read races the writer's next set: a version is
			// reported once its read reaches the server before the next
			// set, which a loaded machine can make either cache lose. So
			// CI asserts what is not a race (both caches converge, above,
			// and TestEventsReadWhileHeld in package cache); the
			// comparison is asserted with -cache-versions-strict.
			if *cacheVersionsStrict {
				t.Errorf("run %d: versions Curator's cache reported and ours did not: %v", i+1, missed)
			} else {
				t.Logf("run %d: versions Curator's cache reported and ours did not: %v", i+1, missed)
			}
		}
	}
	t.Logf("%d of %d runs: every version Curator's cache reported was reported by ours", *cacheVersionsRuns-misses, *cacheVersionsRuns)
}

// writeAt200 makes n writes at about 200 per second: on a random node, a
// set (or its creation when it is gone; a deletion one time in four),
// and one time in three the same node as the write before, pairGap (5 ms)
// after its reply (6 ms for another node). One write in ten is a burst
// instead: a multi that sets 12 other nodes, then two sets of one node
// pairGap apart. A cache that reads each event's node at once sees both
// versions; one that waits for the reads of the events before (the
// burst's) may not.
func writeAt200(ctx context.Context, t *testing.T, c *recipes.Client, root string, nodes []string, rng *rand.Rand, n int) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	wait := func(d time.Duration) {
		tick.Reset(d)
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	p := nodes[0]
	for i := range n {
		data := []byte("w" + strconv.Itoa(i))
		var err error
		switch {
		case i%10 == 9:
			p = burst(ctx, t, c, root, p, rng)
			if _, err = c.Set(ctx, p, data, -1); err == nil {
				wait(*pairGap)
				_, err = c.Set(ctx, p, append(data, '+'), -1)
			}
		case rng.IntN(4) == 0:
			err = c.Delete(ctx, p, -1)
		default:
			if _, err = c.Set(ctx, p, data, -1); errors.Is(err, zk.ErrNoNode) {
				_, err = c.Create(ctx, p, data, 0)
			}
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			require.NoError(t, err)
		}
		gap := *pairGap
		if rng.IntN(3) != 0 {
			p, gap = nodes[rng.IntN(len(nodes))], 6*time.Millisecond
		}
		wait(gap)
	}
}

// burst sets up to 12 nodes under root other than p in one multi, and
// returns p, or another node when p does not exist.
func burst(ctx context.Context, t *testing.T, c *recipes.Client, root, p string, rng *rand.Rand) string {
	t.Helper()
	kids, _, err := c.Children(ctx, root)
	require.NoError(t, err)
	require.NotEmpty(t, kids)
	if !slices.Contains(kids, p[len(root)+1:]) {
		p = root + "/" + kids[rng.IntN(len(kids))]
	}
	var ops []recipes.Op
	for _, i := range rng.Perm(len(kids)) {
		if q := root + "/" + kids[i]; q != p && len(ops) < 12 {
			ops = append(ops, recipes.SetOp(q, []byte("burst"), -1))
		}
	}
	_, err = c.Multi(ctx, ops...)
	require.NoError(t, err)
	return p
}

// settle waits until each cache's events since the run's start (gGet,
// jGet) include end and, replayed on from, give want, and returns them.
func settle(ctx context.Context, t *testing.T, gGet, jGet func() []string, end string, from, want map[string]int32) (gEvs, jEvs []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		gEvs, jEvs = gGet(), jGet()
		if slices.Contains(gEvs, end) && slices.Contains(jEvs, end) && settled(from, want, gEvs) && settled(from, want, jEvs) {
			return gEvs, jEvs
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("the caches' events do not give the server's tree after 30s: ours %v, Curator's %v", gEvs, jEvs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The Go cache runs in a process of its own, as Curator's does (the test
// binary run again as a helper), so that neither shares a process with
// the writer: it prints its events as the Java side does.
const (
	cvEnvRole    = "ZKI_CACHE_HELPER" // "cache"
	cvEnvServers = "ZKI_CACHE_SERVERS"
	cvEnvRoot    = "ZKI_CACHE_ROOT"
)

var cvHelpers = testutil.Helpers{Test: "TestCacheVersionsHelperProcess", RoleEnv: cvEnvRole, Timeout: 4 * time.Minute}

// TestCacheVersionsHelperProcess is not a test: it is the body of the Go
// cache's process of TestCuratorCacheVersions. It returns at once unless
// ZKI_CACHE_HELPER is set.
func TestCacheVersionsHelperProcess(t *testing.T) {
	cvHelpers.Run(map[string]func() error{"cache": cvCache})
}

// cvCache runs a cache of ZKI_CACHE_ROOT and prints "EVENT <TYPE> <path>
// <version>" for each event and INITIALIZED, until stdin ends.
func cvCache() error {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := testutil.Dial(ctx, strings.Split(os.Getenv(cvEnvServers), ","))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	cc, err := cache.New(c, os.Getenv(cvEnvRoot))
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	cc.Listen(func(ev cache.Event) { // one goroutine: in order
		switch ev.Type {
		case cache.Initialized:
			fmt.Fprintln(out, "INITIALIZED")
		case cache.Resynced:
		default:
			n := ev.New
			if n == nil {
				n = ev.Old
			}
			fmt.Fprintf(out, "EVENT %s %s %d\n", ev.Type, n.Path, n.Stat.Version)
		}
		out.Flush()
	})
	if err := cc.Start(ctx); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return cc.Close(ctx)
}

// goCache is the Go cache's process, its stdout lines kept.
type goCache struct {
	mu    sync.Mutex
	lines []string
	init  chan struct{}
}

// startGoCache starts the Go cache's process and waits for its
// INITIALIZED.
func startGoCache(ctx context.Context, t *testing.T, servers, root string) *goCache {
	t.Helper()
	h := cvHelpers.Start(t, "go cache", "cache", cvEnvServers+"="+servers, cvEnvRoot+"="+root)
	g := &goCache{init: make(chan struct{})}
	go func() {
		for l := range h.Lines() {
			g.mu.Lock()
			g.lines = append(g.lines, l)
			g.mu.Unlock()
			if l == "INITIALIZED" {
				close(g.init)
			}
		}
	}()
	select {
	case <-g.init:
	case <-h.Done():
		t.Fatalf("the Go cache's process ended: %v; stderr: %s", h.Err(), h.Stderr())
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	return g
}

// events returns the Go cache's event lines (without "EVENT "), and how
// many came before INITIALIZED (-1 if it has not come).
func (g *goCache) events() (evs []string, init int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	init = -1
	for _, l := range g.lines {
		switch {
		case strings.HasPrefix(l, "EVENT "):
			evs = append(evs, strings.TrimPrefix(l, "EVENT "))
		case l == "INITIALIZED":
			init = len(evs)
		}
	}
	return evs, init
}
