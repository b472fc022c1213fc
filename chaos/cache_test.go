//go:build chaos

package chaos

// The cache worker: two caches (package cache) of one subtree, one on a
// persistent recursive watch and one forced onto the one-shot fallback
// (WithOneShotWatches), each on a session of its own (workerSession)
// through three proxies of its own, while writers in this process create,
// change, delete and re-create nodes across the subtree (depth 3, 1,110
// nodes to begin with). It runs in cycles: a burst of writes, during which
// the caches' links suffer a fault of the worker's own (in turn: none; a
// cut; a black-hole shorter than the session; a black-hole past the
// session, so the session expires), while the suite injects its faults
// (ZooKeeper members killed and paused included, where enabled); then a
// quiet point: the writers stop, the fault heals, and each cache must
// equal a fresh full read of the server node for node (data, version,
// mzxid) within cacheConverge, and its events since the last quiet point,
// replayed on what it held then, must give what it holds now. Either
// failing is a violation. The worker prints one line starting with
// "CACHE SUMMARY".

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/par"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

var flagCache = flag.Bool("cache", true, "run the cache worker (see cache_test.go)")

const (
	cacheRoot     = root + "/cache"
	cacheFanout   = 10 // children per node, depth 3: 1,110 nodes under cacheRoot
	cacheWriters  = 2
	cacheConverge = time.Minute // a quiet point's bound: the server readable and both caches equal to it
)

// The worker's own faults on the caches' links, in turn.
var cacheFaults = []string{"none", "cut", "blackhole", "expire"}

// cacheNode is what the check compares.
type cacheNode struct {
	version int32
	mzxid   int64
	data    string
}

// cacheUnder is one cache under test.
type cacheUnder struct {
	name    string
	c       *recipes.Client
	proxies []*zktest.Proxy
	cc      *cache.Cache

	mu    sync.Mutex
	evs   []cache.Event
	inits int

	base   map[string]int64 // path -> mzxid at the last quiet point
	baseEv int              // len(evs) then
	worst  time.Duration    // longest convergence after a quiet point began
}

func (u *cacheUnder) listen(ev cache.Event) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if ev.Type == cache.Initialized {
		u.inits++
	}
	u.evs = append(u.evs, ev)
}

// cacheCheck is one quiet point.
type cacheCheck struct {
	n            int
	fault        string
	faultFor     time.Duration
	cycle, quiet time.Time
	took         []time.Duration
	nodes        int
	ok           bool
}

type cacheWorker struct {
	t      *testing.T
	h      *harness
	writer *recipes.Client
	caches []*cacheUnder
	cands  []string
	rng    *rand.Rand
	stopCh chan struct{}
	done   chan struct{}

	mu         sync.Mutex
	checks     []cacheCheck
	violations []string
	writes     int
}

func (w *cacheWorker) violation(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.violations = append(w.violations, fmt.Sprintf(format, args...))
}

// startCacheWorker builds the subtree, starts both caches and waits for
// them to load, and runs the cycles until stop. It returns nil when
// -cache=false.
func startCacheWorker(t *testing.T, h *harness) *cacheWorker {
	if !*flagCache {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	writer, err := dial(ctx, h.zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
	if err != nil {
		t.Fatalf("cache worker: %v", err)
	}
	t.Cleanup(func() { _ = writer.Close(context.Background()) })
	w := &cacheWorker{t: t, h: h, writer: writer, rng: rand.New(rand.NewPCG(h.seed, 0x6361636865)),
		stopCh: make(chan struct{}), done: make(chan struct{})}

	// The subtree, level by level.
	level := []string{cacheRoot}
	if _, err := writer.Create(ctx, cacheRoot, []byte("root"), 0); err != nil {
		t.Fatalf("cache worker: create %s: %v", cacheRoot, err)
	}
	for range 3 {
		var next []string
		for _, p := range level {
			for i := range cacheFanout {
				next = append(next, fmt.Sprintf("%s/%d", p, i))
			}
		}
		if err := par.Each(16, next, func(p string) error {
			_, err := writer.Create(ctx, p, []byte("init"), 0)
			return err
		}); err != nil {
			t.Fatalf("cache worker: building the tree: %v", err)
		}
		w.cands = append(w.cands, next...)
		level = next
	}

	for _, mode := range []string{"persistent", "oneshot"} {
		u := &cacheUnder{name: mode}
		var addrs []string
		for slot, s := range h.zkc.Servers() {
			px := h.newProxy(slot, s)
			u.proxies = append(u.proxies, px)
			addrs = append(addrs, px.Addr())
		}
		u.c, err = dial(ctx, addrs, append(proxiedOpts(h.reconf), recipes.WithSessionTimeout(workerSession))...)
		if err != nil {
			t.Fatalf("cache worker: %v", err)
		}
		t.Cleanup(func() { _ = u.c.Close(context.Background()) })
		var opts []cache.Option
		if mode == "oneshot" {
			opts = append(opts, cache.WithOneShotWatches())
		}
		if u.cc, err = cache.New(u.c, cacheRoot, opts...); err != nil {
			t.Fatalf("cache worker: %v", err)
		}
		u.cc.Listen(u.listen)
		if err := u.cc.Start(ctx); err != nil {
			t.Fatalf("cache worker: start the %s cache: %v", mode, err)
		}
		t.Cleanup(func() { _ = u.cc.Close(context.Background()) })
		if err := u.cc.WaitReady(ctx); err != nil {
			t.Fatalf("cache worker: the %s cache: %v", mode, err)
		}
		u.base = map[string]int64{}
		w.caches = append(w.caches, u)
	}
	if !w.caches[0].cc.Persistent() {
		t.Fatalf("cache worker: the persistent cache is not on a persistent watch")
	}
	now := time.Now()
	w.check(cacheCheck{n: 0, fault: "none", cycle: now, quiet: now})
	t.Logf("cache worker: two caches (persistent, oneshot) of %d nodes under %s", len(w.cands)+1, cacheRoot)
	go w.run()
	return w
}

func (w *cacheWorker) run() {
	defer close(w.done)
	for i := 1; ; i++ {
		select {
		case <-w.stopCh:
			return
		default:
		}
		w.cycle(i)
	}
}

// cycle is one burst of writes with a fault on the caches' links, and the
// quiet point after it.
func (w *cacheWorker) cycle(n int) {
	c := cacheCheck{n: n, fault: cacheFaults[n%len(cacheFaults)], cycle: time.Now()}
	burst := 2*time.Second + time.Duration(w.rng.Int64N(int64(2*time.Second)))
	at := time.Duration(w.rng.Int64N(int64(time.Second)))
	var d time.Duration
	switch c.fault {
	case "blackhole":
		d = 300*time.Millisecond + time.Duration(w.rng.Int64N(int64(workerSession/2)))
	case "expire":
		d = workerSession + 500*time.Millisecond + time.Duration(w.rng.Int64N(int64(time.Second)))
	}
	c.faultFor = d
	seeds := []uint64{w.rng.Uint64(), w.rng.Uint64()}

	end := time.Now().Add(burst)
	var wg sync.WaitGroup
	for i := range cacheWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.write(rand.New(rand.NewPCG(seeds[i], uint64(n))), end)
		}()
	}
	time.Sleep(at)
	w.forProxies(func(px *zktest.Proxy) {
		switch c.fault {
		case "cut":
			px.Cut()
		case "blackhole", "expire":
			px.Blackhole()
		}
	})
	if d > 0 {
		time.Sleep(d)
		w.forProxies((*zktest.Proxy).Restore)
	}
	wg.Wait()
	c.quiet = time.Now()
	w.check(c)
}

func (w *cacheWorker) forProxies(fn func(*zktest.Proxy)) {
	for _, u := range w.caches {
		for _, px := range u.proxies {
			fn(px)
		}
	}
}

// write runs random creates (data "c": a node re-created gets the same
// data and version 0 again), sets, deletes until end. Errors (NoNode,
// NodeExists, NotEmpty, connection loss under the suite's faults) are
// expected and ignored.
func (w *cacheWorker) write(r *rand.Rand, end time.Time) {
	ctx := context.Background()
	n := 0
	for time.Now().Before(end) {
		p := w.cands[r.IntN(len(w.cands))]
		var err error
		switch k := r.IntN(10); {
		case k < 5: // creates outnumber deletes: many fail for want of a parent
			_, err = w.writer.Create(ctx, p, []byte("c"), 0)
		case k < 7:
			_, err = w.writer.Set(ctx, p, []byte(fmt.Sprintf("s%d", r.IntN(1000))), -1)
		default:
			err = w.writer.Delete(ctx, p, -1)
		}
		if err == nil {
			n++
		} else if recipes.IsRetryable(err) {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(time.Duration(2+r.IntN(8)) * time.Millisecond)
	}
	w.mu.Lock()
	w.writes += n
	w.mu.Unlock()
}

// readServer reads the subtree afresh after a sync, 16 reads at a time.
func (w *cacheWorker) readServer(ctx context.Context) (map[string]cacheNode, error) {
	if err := w.writer.Sync(ctx, cacheRoot); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	out := map[string]cacheNode{}
	level := []string{cacheRoot}
	for len(level) > 0 {
		var next []string
		err := par.Each(16, level, func(p string) error {
			data, st, err := w.writer.Get(ctx, p)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			if err != nil {
				return err
			}
			var kids []string
			if st.NumChildren > 0 {
				if kids, _, err = w.writer.Children(ctx, p); errors.Is(err, zk.ErrNoNode) {
					kids = nil
				} else if err != nil {
					return err
				}
			}
			mu.Lock()
			defer mu.Unlock()
			out[p] = cacheNode{st.Version, st.Mzxid, string(data)}
			for _, k := range kids {
				next = append(next, p+"/"+k)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		level = next
	}
	return out, nil
}

// cacheDiff describes how a cache's snapshot differs from the server's
// tree ("" when equal), naming at most three nodes.
func cacheDiff(want map[string]cacheNode, got []cache.Node) string {
	var d []string
	seen := make(map[string]bool, len(got))
	for _, n := range got {
		seen[n.Path] = true
		w, ok := want[n.Path]
		switch {
		case !ok:
			d = append(d, "extra "+n.Path)
		case w != (cacheNode{n.Stat.Version, n.Stat.Mzxid, string(n.Data)}):
			d = append(d, fmt.Sprintf("%s v%d m%#x %q, server v%d m%#x %q", n.Path, n.Stat.Version, n.Stat.Mzxid, n.Data, w.version, w.mzxid, w.data))
		}
	}
	for p := range want {
		if !seen[p] {
			d = append(d, "missing "+p)
		}
	}
	if len(d) == 0 {
		return ""
	}
	slices.Sort(d)
	more := ""
	if len(d) > 3 {
		more = fmt.Sprintf(" (and %d more)", len(d)-3)
		d = d[:3]
	}
	return strings.Join(d, "; ") + more
}

// check is a quiet point: both caches must equal the server within
// cacheConverge, and their events must replay.
func (w *cacheWorker) check(c cacheCheck) {
	deadline := c.quiet.Add(cacheConverge)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	c.took = make([]time.Duration, len(w.caches))
	done := make([]bool, len(w.caches))
	last := make([]string, len(w.caches))
	readErr := error(nil)
	for {
		tree, err := w.readServer(ctx)
		readErr = err
		if err == nil {
			c.nodes = len(tree)
			all := true
			for i, u := range w.caches {
				if done[i] {
					continue
				}
				if last[i] = cacheDiff(tree, u.cc.Snapshot()); last[i] == "" {
					done[i], c.took[i] = true, time.Since(c.quiet)
				} else {
					all = false
				}
			}
			if all {
				break
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.ok = true
	for i, u := range w.caches {
		if !done[i] {
			c.ok = false
			why := last[i]
			if why == "" {
				why = fmt.Sprintf("the server could not be read: %v", readErr)
			}
			w.violation("cache check #%d (fault %s): the %s cache still differs from the server %v after the quiet point: %s", c.n, c.fault, u.name, cacheConverge, why)
			continue
		}
		u.worst = max(u.worst, c.took[i])
		if !w.replays(u, time.Now().Add(10*time.Second)) {
			c.ok = false
			w.violation("cache check #%d (fault %s): the %s cache's events since the last quiet point do not replay to what it holds", c.n, c.fault, u.name)
		}
	}
	w.mu.Lock()
	w.checks = append(w.checks, c)
	w.mu.Unlock()
	w.t.Logf("cache check #%d (own fault %s %v): %d nodes; equal to the server after %v (persistent), %v (oneshot); ok=%v",
		c.n, c.fault, c.faultFor.Round(time.Millisecond), c.nodes, c.took[0].Round(time.Millisecond), c.took[1].Round(time.Millisecond), c.ok)
}

// replays waits until the events the listener has heard since the last
// quiet point, applied to what the cache held then, give what it holds now
// (path -> mzxid), and makes that the new base.
func (w *cacheWorker) replays(u *cacheUnder, deadline time.Time) bool {
	for {
		u.mu.Lock()
		evs := slices.Clone(u.evs[u.baseEv:])
		u.mu.Unlock()
		got := map[string]int64{}
		for _, n := range u.cc.Snapshot() {
			got[n.Path] = n.Stat.Mzxid
		}
		state := make(map[string]int64, len(u.base))
		for p, m := range u.base {
			state[p] = m
		}
		ok := true
		for _, ev := range evs {
			switch ev.Type {
			case cache.NodeCreated:
				if _, there := state[ev.New.Path]; there {
					ok = false
				}
				state[ev.New.Path] = ev.New.Stat.Mzxid
			case cache.NodeChanged:
				if _, there := state[ev.New.Path]; !there {
					ok = false
				}
				state[ev.New.Path] = ev.New.Stat.Mzxid
			case cache.NodeDeleted:
				if _, there := state[ev.Old.Path]; !there {
					ok = false
				}
				delete(state, ev.Old.Path)
			}
		}
		if ok && len(state) == len(got) {
			same := true
			for p, m := range got {
				if state[p] != m {
					same = false
					break
				}
			}
			if same {
				u.base, u.baseEv = got, u.baseEv+len(evs)
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the cycles (the current one finishes with its check).
func (w *cacheWorker) stop() {
	if w == nil {
		return
	}
	close(w.stopCh)
	<-w.done
}

// report adds the worker's violations to the test and prints its summary,
// counting the suite's faults that overlapped each cycle.
func (w *cacheWorker) report() {
	if w == nil {
		return
	}
	for _, u := range w.caches {
		u.mu.Lock()
		if u.inits != 1 {
			w.violation("the %s cache reported Initialized %d times, want 1", u.name, u.inits)
		}
		u.mu.Unlock()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.violations {
		w.t.Errorf("VIOLATION: %s", v)
	}
	w.h.mu.Lock()
	suite := slices.Clone(w.h.faults)
	w.h.mu.Unlock()
	own := map[string]int{}
	overlap := map[string]int{}
	bad := 0
	for _, c := range w.checks {
		own[c.fault]++
		if !c.ok {
			bad++
		}
		end := c.quiet.Add(c.took[0])
		for _, f := range suite {
			if f.start.Before(end) && !f.heal.Before(c.cycle) {
				overlap[f.kind]++
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CACHE SUMMARY server=%s checks=%d mismatches=%d writes=%d own-faults:", w.h.zkc.Version(), len(w.checks), bad, w.writes)
	for _, k := range cacheFaults {
		fmt.Fprintf(&b, " %s=%d", k, own[k])
	}
	b.WriteString(" suite-faults-during-cycles:")
	for _, k := range faultKinds {
		if overlap[k.name] > 0 {
			fmt.Fprintf(&b, " %s=%d", k.name, overlap[k.name])
		}
	}
	for _, u := range w.caches {
		fmt.Fprintf(&b, " %s(resyncs=%d longest-convergence=%v)", u.name, u.cc.Resyncs(), u.worst.Round(time.Millisecond))
	}
	if n := len(w.checks); n > 0 {
		fmt.Fprintf(&b, " nodes-at-last-check=%d", w.checks[n-1].nodes)
	}
	fmt.Println(b.String())
	w.t.Log(b.String())
}
