package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/par"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// The peers workloads of issue 27 (peers.go runs them): package discovery
// against Curator's curator-x-discovery and package nodes' GroupMember
// against Curator's. Only Curator takes part (Kazoo has neither).
//
//   - discovery-register: one discovery on session 0 registers
//     discRegisterN DYNAMIC instances of one service, one after another;
//     the time for all of them (ms) and client CPU per registration. The
//     instances are unregistered (Close) outside the clock.
//   - discovery-see: discReaders discoveries, each with a started service
//     cache of the service, on sessions 0..discReaders-1; a registering
//     discovery on session 0 registers a new instance discSeeK times per
//     round: the time until every cache holds it (median over the round),
//     then unregisters it and waits until every cache has dropped it.
//     Client CPU per registration+unregistration seen by all.
//   - discovery-getinstance-<n>: n instances of one service registered
//     (in parallel, outside the clock) and a started ServiceProvider
//     (round robin, the default filters) holding them; getInstance called
//     in a loop on one thread for discGetInstanceFor (Curator's after as
//     long a warm-up, for its JIT): calls per second, and allocations
//     per call (ours: heap allocations; Curator: bytes its thread
//     allocated). Rows for n = 50 and 1,000 show whether the cost is flat.
//   - group: groupMembers GroupMembers (member i on session i%sessions)
//     started at once: the time until every member's current membership
//     holds all of them (polled each ms on both sides); client CPU per
//     member, from the first start to the last Close.
//   - group-expiry: groupExpiryMembers GroupMembers, all but the last on
//     sessions 0..sessions-1 (member i on i%sessions), the last on a
//     session of its own through a zktest proxy; once all agree, the
//     proxy is black-holed and the server expires that session: the time
//     from the deletion of its member node (a watch on session 0 hears
//     it) until every other member's current membership has dropped it
//     (polled each ms on both sides); client CPU per remaining member
//     from the black-hole to agreement.

const (
	discRegisterN = 1000
	discReaders   = 10
	discSeeK      = 20
	groupMembers  = 100

	groupExpiryMembers = 200

	discGetInstanceFor = time.Second
)

// discGetInstanceNs are the service sizes of the discovery-getinstance
// rows.
var discGetInstanceNs = []int{50, 1000}

// discPayloadless is an instance without payload, as the Curator side's
// ServiceInstance<Void>.
func discInstance(id string) *discovery.Instance {
	return &discovery.Instance{Name: "svc", ID: id, Address: "127.0.0.1", Port: 8080}
}

// startDiscovery starts a discovery at base on session 0.
func (w *peerWork) startDiscovery(ctx context.Context, base string) (*discovery.Discovery, error) {
	d, err := discovery.New(w.clients[0], base)
	if err != nil {
		return nil, err
	}
	if err := d.Start(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

func (w *peerWork) discovery() ([]string, bool, error) {
	if len(w.clients) < discReaders {
		return nil, false, fmt.Errorf("discovery needs %d sessions, -sessions gives %d", discReaders, len(w.clients))
	}
	var lines []string
	line, err := w.discRegister(discRegisterN)
	if err != nil {
		return lines, false, err
	}
	lines = append(lines, line)
	if line, err = w.discSee(0); err != nil {
		return lines, false, err
	}
	lines = append(lines, line)
	for _, n := range discGetInstanceNs {
		line, err := w.discGetInstance(n)
		if err != nil {
			return lines, false, err
		}
		lines = append(lines, line)
	}
	return lines, true, nil
}

// sized is a row's key, with its size when it is not the row's usual one
// (the scale scenario's sizes: scale.go).
func sized(key string, n, usual int) string {
	if n == usual {
		return key
	}
	return fmt.Sprintf("%s-%d", key, n)
}

// warmOnce reports whether the workload key has not been warmed up yet,
// and marks it warmed: a row run at several sizes warms up once.
func (w *peerWork) warmOnce(key string) bool {
	if w.warmed == nil {
		w.warmed = map[string]bool{}
	}
	if w.warmed[key] {
		return false
	}
	w.warmed[key] = true
	return true
}

var discKazoo = map[string]string{"kazoo": "Kazoo has no curator-x-discovery"}

// discRegister is the discovery-register row for n instances.
func (w *peerWork) discRegister(n int) (string, error) {
	key := sized("discovery-register", n, discRegisterN)
	fmt.Printf("\n-- peers %s: one ServiceDiscovery registers %d DYNAMIC instances of one service one after another (ms for all)\n", key, n)
	regOurs := func(base string) (peerFig, error) {
		ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
		defer cancel()
		d, err := w.startDiscovery(ctx, base)
		if err != nil {
			return peerFig{}, err
		}
		defer d.Close(context.Background())
		t0, c0 := time.Now(), cpuTime()
		for i := range n {
			if err := d.Register(ctx, discInstance("i"+strconv.Itoa(i))); err != nil {
				return peerFig{}, err
			}
		}
		took, used := time.Since(t0), cpuTime()-c0
		return peerFig{rate: 1e3 / msf(took), cpuUS: cpuPerOp(used, n)}, nil
	}
	oursReg := peerSide{label: "ours", key: "ours", run: func(r int) (peerFig, error) {
		return regOurs(fmt.Sprintf("%s/r%d", w.path(key, "ours"), r))
	}}
	sides := []peerSide{oursReg}
	if p := w.proc("curator"); p != nil {
		sides = append(sides, peerSide{label: p.label, key: p.key, run: func(r int) (peerFig, error) {
			a, err := p.do(3*time.Minute, "discregister %s/r%d %d", w.path(key, p.key), r, n)
			if err != nil {
				return peerFig{}, err
			}
			if _, err := p.do(time.Minute, "discclose"); err != nil {
				return peerFig{}, err
			}
			return peerFig{rate: 1 / a.seconds, cpuUS: a.cpu * 1e6 / float64(n)}, nil
		}})
	}
	if w.warmOnce("discovery-register") {
		if _, err := regOurs(w.path(key, "warm")); err != nil {
			return "", fmt.Errorf("warm-up: %w", err)
		}
		if p := w.proc("curator"); p != nil {
			if _, err := p.do(3*time.Minute, "discregister %s %d", w.path(key, "curator-warm"), n); err != nil {
				return "", fmt.Errorf("Curator warm-up: %w", err)
			}
			if _, err := p.do(time.Minute, "discclose"); err != nil {
				return "", err
			}
		}
	}
	row := peerRow{workload: fmt.Sprintf("discovery: register %d instances, one after another", n), key: key,
		latency: "ms for all", note: discKazoo}
	line, _, err := w.compare(row, w.rounds(), sides)
	return line, err
}

// discSee is the discovery-see row, with bg instances of the service
// registered before the caches start (0: the usual row, an empty service).
func (w *peerWork) discSee(bg int) (string, error) {
	key := sized("discovery-see", bg, 0)
	fmt.Printf("\n-- peers %s: %d ServiceCaches (a session each) of one service of %d instances; a new instance registered %d times per round: ms until every cache holds it (median over the round)\n", key, discReaders, bg, discSeeK)
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Minute)
	defer cancel()
	sc, err := w.startSeeCaches(ctx, w.path(key, "ours"), bg)
	defer sc.close()
	if err != nil {
		return "", err
	}
	seq := 0
	seeOurs := func(k int) (peerFig, error) {
		var ms []time.Duration
		c0 := cpuTime()
		for range k {
			id := "n" + strconv.Itoa(seq)
			seq++
			t0 := time.Now()
			if err := sc.reg.Register(ctx, discInstance(id)); err != nil {
				return peerFig{}, err
			}
			if err := sc.await(id, true); err != nil {
				return peerFig{}, err
			}
			ms = append(ms, time.Since(t0))
			if err := sc.reg.Unregister(ctx, "svc", id); err != nil {
				return peerFig{}, err
			}
			if err := sc.await(id, false); err != nil {
				return peerFig{}, err
			}
		}
		return peerFig{rate: 1e3 / msf(percentile(ms, 0.5)), cpuUS: cpuPerOp(cpuTime()-c0, k)}, nil
	}
	oursSee := peerSide{label: "ours", key: "ours", run: func(int) (peerFig, error) { return seeOurs(discSeeK) }}
	sides := w.curatorOnly(oursSee, 3*time.Minute, func(a peerAnswer) peerFig {
		m := 1.0
		if len(a.extra) == 2 {
			m = a.extra[0]
		}
		return peerFig{rate: 1e3 / m, cpuUS: a.cpu * 1e6 / float64(max(a.ops, 1))}
	}, func(int) string { return fmt.Sprintf("discsee %d", discSeeK) })
	if p := w.proc("curator"); p != nil {
		if _, err := p.do(5*time.Minute, "discsee-start %s %d %d", w.path(key, "curator"), discReaders, bg); err != nil {
			return "", err
		}
		defer p.do(5*time.Minute, "discsee-stop")
		if _, err := p.do(time.Minute, "discsee %d", 3); err != nil {
			return "", fmt.Errorf("Curator warm-up: %w", err)
		}
	}
	if _, err := seeOurs(3); err != nil {
		return "", fmt.Errorf("warm-up: %w", err)
	}
	row := peerRow{workload: fmt.Sprintf("discovery: %d service caches of %d instances see a new instance (median of %d)", discReaders, bg, discSeeK), key: key,
		latency: "ms to all caches", note: discKazoo}
	line, _, err := w.compare(row, w.rounds(), sides)
	return line, err
}

// seeCaches are the discovery-see row's caches and the discovery that
// registers.
type seeCaches struct {
	reg    *discovery.Discovery
	discs  []*discovery.Discovery
	caches []*discovery.ServiceCache
	notify chan struct{}
}

// startSeeCaches starts the registering discovery on session 0, registers
// bg instances of the service on it, then starts discReaders discoveries
// with a service cache each (on sessions 0..discReaders-1) and waits until
// every cache holds the bg instances.
func (w *peerWork) startSeeCaches(ctx context.Context, base string, bg int) (*seeCaches, error) {
	sc := &seeCaches{notify: make(chan struct{}, 1)}
	for i := range discReaders + 1 {
		d, err := discovery.New(w.clients[i%discReaders], base)
		if err != nil {
			return sc, err
		}
		if err := d.Start(ctx); err != nil {
			return sc, err
		}
		sc.discs = append(sc.discs, d)
		if i == 0 { // the registering one
			sc.reg = d
			if err := par.Each(32, seqInts(bg), func(k int) error {
				return d.Register(ctx, discInstance("b"+strconv.Itoa(k)))
			}); err != nil {
				return sc, err
			}
			continue
		}
		c, err := d.NewServiceCache("svc")
		if err != nil {
			return sc, err
		}
		c.Listen(func([]*discovery.Instance) {
			select {
			case sc.notify <- struct{}{}:
			default:
			}
		})
		if err := c.Start(ctx); err != nil {
			return sc, err
		}
		sc.caches = append(sc.caches, c)
	}
	for _, c := range sc.caches {
		for len(c.Instances()) < bg {
			if ctx.Err() != nil {
				return sc, fmt.Errorf("a cache never held the %d instances: %d", bg, len(c.Instances()))
			}
			time.Sleep(time.Millisecond)
		}
	}
	return sc, nil
}

// seqInts is 0..n-1.
func seqInts(n int) []int {
	xs := make([]int, n)
	for i := range xs {
		xs[i] = i
	}
	return xs
}

// allHold reports whether every cache holds (want) or lacks (!want) the
// instance id. The instances are sorted by node name, which is the id:
// a binary search, so that the check does not grow with the service.
func (sc *seeCaches) allHold(id string, want bool) bool {
	for _, c := range sc.caches {
		_, has := slices.BinarySearchFunc(c.Instances(), id, func(in *discovery.Instance, id string) int {
			return strings.Compare(in.ID, id)
		})
		if has != want {
			return false
		}
	}
	return true
}

// await waits until allHold(id, want).
func (sc *seeCaches) await(id string, want bool) error {
	deadline := time.After(time.Minute)
	for !sc.allHold(id, want) {
		select {
		case <-sc.notify:
		case <-deadline:
			return fmt.Errorf("the caches never agreed on %s", id)
		}
	}
	return nil
}

func (sc *seeCaches) close() {
	if sc == nil {
		return
	}
	for _, c := range sc.caches {
		c.Close(context.Background())
	}
	for _, d := range sc.discs {
		d.Close(context.Background())
	}
}

// discGetInstance is the discovery-getinstance row for n instances (see
// the top of the file).
func (w *peerWork) discGetInstance(n int) (string, error) {
	fmt.Printf("\n-- peers discovery-getinstance-%d: a ServiceProvider (round robin) of one service of %d instances: getInstance calls per second on one thread, for %s (Curator after %s of warm-up)\n", n, n, discGetInstanceFor, discGetInstanceFor)
	var mu sync.Mutex
	allocs := map[string][]float64{}  // side -> per round: ours allocations, Curator bytes per call
	nsPer := map[string][]float64{}   // side -> per round: ns per call
	startMs := map[string][]float64{} // side -> per round: ms from the provider's start until it holds n
	ours := func(base string) (peerFig, error) {
		ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
		defer cancel()
		d, err := w.startDiscovery(ctx, base)
		if err != nil {
			return peerFig{}, err
		}
		defer d.Close(context.Background())
		if err := par.Each(32, seqInts(n), func(i int) error {
			return d.Register(ctx, discInstance("i"+strconv.Itoa(i)))
		}); err != nil {
			return peerFig{}, err
		}
		p, err := d.NewProvider("svc")
		if err != nil {
			return peerFig{}, err
		}
		t0 := time.Now()
		if err := p.Start(ctx); err != nil {
			return peerFig{}, err
		}
		defer p.Close(context.Background())
		for len(p.Instances()) != n {
			if ctx.Err() != nil {
				return peerFig{}, fmt.Errorf("the provider never held %d instances: %d", n, len(p.Instances()))
			}
			time.Sleep(time.Millisecond)
		}
		started := time.Since(t0)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		calls := 0
		t0 = time.Now()
		for end := t0.Add(discGetInstanceFor); time.Now().Before(end); {
			for range 1000 {
				if p.Instance() == nil {
					return peerFig{}, errors.New("getInstance gave none")
				}
			}
			calls += 1000
		}
		took := time.Since(t0)
		runtime.ReadMemStats(&m1)
		mu.Lock()
		allocs["ours"] = append(allocs["ours"], float64(m1.Mallocs-m0.Mallocs)/float64(calls))
		nsPer["ours"] = append(nsPer["ours"], float64(took.Nanoseconds())/float64(calls))
		startMs["ours"] = append(startMs["ours"], msf(started))
		mu.Unlock()
		return peerFig{rate: float64(calls) / took.Seconds(), cpuUS: took.Seconds() * 1e6 / float64(calls)}, nil
	}
	sides := []peerSide{{label: "ours", key: "ours", run: func(r int) (peerFig, error) {
		return ours(fmt.Sprintf("%s/r%d", w.path(fmt.Sprintf("discovery-getinstance-%d", n), "ours"), r))
	}}}
	if p := w.proc("curator"); p != nil {
		sides = append(sides, peerSide{label: p.label, key: p.key, run: func(r int) (peerFig, error) {
			a, err := p.do(3*time.Minute, "discgetinstance %s/r%d %d %d", w.path(fmt.Sprintf("discovery-getinstance-%d", n), p.key), r, n, discGetInstanceFor.Milliseconds())
			if err != nil {
				return peerFig{}, err
			}
			if len(a.extra) < 2 {
				return peerFig{}, fmt.Errorf("%s: discgetinstance gave %d figures", p.label, len(a.extra))
			}
			mu.Lock()
			allocs[p.key] = append(allocs[p.key], a.extra[1])
			nsPer[p.key] = append(nsPer[p.key], a.extra[0])
			if len(a.extra) > 2 {
				startMs[p.key] = append(startMs[p.key], a.extra[2])
			}
			mu.Unlock()
			return peerFig{rate: 1e9 / a.extra[0], cpuUS: a.extra[0] / 1e3}, nil
		}})
	}
	row := peerRow{workload: fmt.Sprintf("discovery: getInstance among %d instances (calls/s on one thread)", n), key: fmt.Sprintf("discovery-getinstance-%d", n),
		target: 10, note: map[string]string{"kazoo": "Kazoo has no curator-x-discovery"}}
	line, _, err := w.compare(row, w.rounds(), sides)
	mu.Lock()
	defer mu.Unlock()
	w.getInstanceNotes(row.key, n, nsPer, allocs, startMs)
	return line, err
}

// getInstanceNotes prints the getInstance row's further medians, per
// side: ns and allocations per call, the provider's start; and notes
// them (peerWork.note).
func (w *peerWork) getInstanceNotes(key string, n int, nsPer, allocs, startMs map[string][]float64) {
	fmt.Printf("per call (medians of rounds): ours %.1f ns, %.2f allocations; provider start to %d instances %.1f ms", median(nsPer["ours"]), median(allocs["ours"]), n, median(startMs["ours"]))
	w.note(key, "ours", "ns", median(nsPer["ours"]))
	w.note(key, "ours", "start_ms", median(startMs["ours"]))
	if c := allocs["curator"]; len(c) > 0 {
		fmt.Printf("; Curator %.0f ns, %.0f bytes allocated, provider start %.1f ms", median(nsPer["curator"]), median(c), median(startMs["curator"]))
		w.note(key, "curator", "ns", median(nsPer["curator"]))
		if len(startMs["curator"]) > 0 {
			w.note(key, "curator", "start_ms", median(startMs["curator"]))
		}
	}
	fmt.Println()
}

func (w *peerWork) group() ([]string, bool, error) {
	line, err := w.groupJoin(groupMembers)
	if err != nil {
		return []string{line}, true, err
	}
	line2, err := w.groupExpiry(groupExpiryMembers)
	return []string{line, line2}, true, err
}

// groupJoin is the group row for n members.
func (w *peerWork) groupJoin(n int) (string, error) {
	sessions := len(w.clients)
	key := sized("group", n, groupMembers)
	fmt.Printf("\n-- peers %s: %d GroupMembers (member i on session i%%%d) started at once: ms until every member's current membership holds all\n", key, n, sessions)
	oursGroup := func(path string) (peerFig, error) {
		ctx, cancel := context.WithTimeout(w.ctx, 10*time.Minute)
		defer cancel()
		c0, t0 := cpuTime(), time.Now()
		gs := make([]*nodes.GroupMember, n)
		defer func() {
			for _, g := range gs {
				if g != nil {
					g.Close(context.Background())
				}
			}
		}()
		for i := range gs {
			g, err := nodes.NewGroupMember(w.clients[i%sessions], path, "m"+strconv.Itoa(i), nil)
			if err != nil {
				return peerFig{}, err
			}
			if err := g.Start(ctx); err != nil {
				return peerFig{}, err
			}
			gs[i] = g
		}
		for _, g := range gs {
			for len(g.CurrentMembers()) != n {
				if ctx.Err() != nil {
					return peerFig{}, fmt.Errorf("group never agreed: %d of %d", len(g.CurrentMembers()), n)
				}
				time.Sleep(time.Millisecond)
			}
		}
		took := time.Since(t0)
		for i, g := range gs {
			if err := g.Close(ctx); err != nil {
				return peerFig{}, err
			}
			gs[i] = nil
		}
		return peerFig{rate: 1e3 / msf(took), cpuUS: cpuPerOp(cpuTime()-c0, n)}, nil
	}
	oursSide := peerSide{label: "ours", key: "ours", run: func(r int) (peerFig, error) {
		return oursGroup(fmt.Sprintf("%s/r%d", w.path(key, "ours"), r))
	}}
	sides := w.curatorOnly(oursSide, 10*time.Minute, func(a peerAnswer) peerFig {
		m := 1.0
		if len(a.extra) == 1 {
			m = a.extra[0]
		}
		return peerFig{rate: 1e3 / m, cpuUS: a.cpu * 1e6 / float64(n)}
	}, func(r int) string {
		return fmt.Sprintf("group %s/r%d %d %d", w.path(key, "curator"), r, n, sessions)
	})
	if w.warmOnce("group") {
		if _, err := oursGroup(w.path(key, "warm")); err != nil {
			return "", fmt.Errorf("warm-up: %w", err)
		}
		if p := w.proc("curator"); p != nil {
			if _, err := p.do(10*time.Minute, "group %s %d %d", w.path(key, "curator-warm"), n, sessions); err != nil {
				return "", fmt.Errorf("Curator warm-up: %w", err)
			}
		}
	}
	row := peerRow{workload: fmt.Sprintf("group: %d GroupMembers over %d sessions agree on the membership", n, sessions), key: key,
		latency: "ms to agreement", note: map[string]string{"kazoo": "Kazoo has no GroupMember"}}
	line, _, err := w.compare(row, w.rounds(), sides)
	return line, err
}

// groupExpiry is the group-expiry row for n members (see the top of the
// file).
func (w *peerWork) groupExpiry(n int) (string, error) {
	sessions := len(w.clients)
	key := sized("group-expiry", n, groupExpiryMembers)
	fmt.Printf("\n-- peers %s: %d GroupMembers (%d on %d sessions, one on a session of its own through a proxy); the proxy black-holed until the server expires that session: ms from its member node's deletion until every other member has dropped it\n", key, n, n-1, sessions)
	ours := func(path string) (peerFig, error) {
		ctx, cancel := context.WithTimeout(w.ctx, 10*time.Minute)
		defer cancel()
		px, err := zktest.ListenProxy(w.b.servers[0])
		if err != nil {
			return peerFig{}, err
		}
		defer px.Close()
		lc, err := recipes.Connect(ctx, []string{px.Addr()}, recipes.WithSessionTimeout(w.b.f.sessionTimeout))
		if err != nil {
			return peerFig{}, err
		}
		defer lc.Close(context.Background())
		gs := make([]*nodes.GroupMember, n)
		defer func() {
			for _, g := range gs {
				if g != nil {
					g.Close(context.Background())
				}
			}
		}()
		for i := range gs {
			c := lc
			if i < n-1 {
				c = w.clients[i%sessions]
			}
			g, err := nodes.NewGroupMember(c, path, "m"+strconv.Itoa(i), nil)
			if err != nil {
				return peerFig{}, err
			}
			if err := g.Start(ctx); err != nil {
				return peerFig{}, err
			}
			gs[i] = g
		}
		agree := func(members []*nodes.GroupMember, want int) error {
			for _, g := range members {
				for len(g.CurrentMembers()) != want {
					if ctx.Err() != nil {
						return fmt.Errorf("group never agreed: %d of %d", len(g.CurrentMembers()), want)
					}
					time.Sleep(time.Millisecond)
				}
			}
			return nil
		}
		if err := agree(gs, n); err != nil {
			return peerFig{}, err
		}
		ok, _, ev, err := w.clients[0].ExistsW(ctx, path+"/m"+strconv.Itoa(n-1))
		if err != nil || !ok {
			return peerFig{}, fmt.Errorf("the last member's node: %v %w", ok, err)
		}
		c0 := cpuTime()
		px.Blackhole()
		var gone time.Time
		select {
		case e := <-ev:
			gone = time.Now()
			if e.Type != zk.EventNodeDeleted {
				return peerFig{}, fmt.Errorf("the last member's node: %v, not deleted", e.Type)
			}
		case <-ctx.Done():
			return peerFig{}, fmt.Errorf("the last member's session never expired: %w", ctx.Err())
		}
		if err := agree(gs[:n-1], n-1); err != nil {
			return peerFig{}, err
		}
		took, used := time.Since(gone), cpuTime()-c0
		px.Restore()
		return peerFig{rate: 1e3 / msf(took), cpuUS: cpuPerOp(used, n-1)}, nil
	}
	sides := []peerSide{{label: "ours", key: "ours", run: func(r int) (peerFig, error) {
		return ours(fmt.Sprintf("%s/r%d", w.path(key, "ours"), r))
	}}}
	if p := w.proc("curator"); p != nil {
		sides = append(sides, peerSide{label: p.label, key: p.key, run: func(r int) (peerFig, error) {
			px, err := zktest.ListenProxy(w.b.servers[0])
			if err != nil {
				return peerFig{}, err
			}
			defer px.Close()
			if _, err := p.do(10*time.Minute, "groupexp-start %s/r%d %d %d %s", w.path(key, p.key), r, n, sessions, px.Addr()); err != nil {
				return peerFig{}, err
			}
			px.Blackhole()
			a, err := p.do(10*time.Minute, "groupexp-wait")
			px.Restore()
			if _, serr := p.do(5*time.Minute, "groupexp-stop"); err == nil {
				err = serr
			}
			if err != nil {
				return peerFig{}, err
			}
			if len(a.extra) < 1 {
				return peerFig{}, fmt.Errorf("%s: groupexp-wait gave no figure", p.label)
			}
			return peerFig{rate: 1e3 / a.extra[0], cpuUS: a.cpu * 1e6 / float64(n-1)}, nil
		}})
	}
	row := peerRow{workload: fmt.Sprintf("group-expiry: %d GroupMembers agree after one's session expires", n), key: key,
		latency: "ms from the node's deletion to agreement", note: map[string]string{"kazoo": "Kazoo has no GroupMember"}}
	line, _, err := w.compare(row, w.rounds(), sides)
	return line, err
}
