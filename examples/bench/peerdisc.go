package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
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
	kazoo := map[string]string{"kazoo": "Kazoo has no curator-x-discovery"}

	// Registration of discRegisterN instances.
	fmt.Printf("\n-- peers discovery-register: one ServiceDiscovery registers %d DYNAMIC instances of one service one after another (ms for all)\n", discRegisterN)
	regOurs := func(base string) (peerFig, error) {
		ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
		defer cancel()
		d, err := w.startDiscovery(ctx, base)
		if err != nil {
			return peerFig{}, err
		}
		defer d.Close(context.Background())
		t0, c0 := time.Now(), cpuTime()
		for i := range discRegisterN {
			if err := d.Register(ctx, discInstance("i"+strconv.Itoa(i))); err != nil {
				return peerFig{}, err
			}
		}
		took, used := time.Since(t0), cpuTime()-c0
		return peerFig{rate: 1e3 / msf(took), cpuUS: cpuPerOp(used, discRegisterN)}, nil
	}
	oursReg := peerSide{label: "ours", key: "ours", run: func(r int) (peerFig, error) {
		return regOurs(fmt.Sprintf("%s/r%d", w.path("discovery-register", "ours"), r))
	}}
	sides := []peerSide{oursReg}
	if p := w.proc("curator"); p != nil {
		sides = append(sides, peerSide{label: p.label, key: p.key, run: func(r int) (peerFig, error) {
			a, err := p.do(3*time.Minute, "discregister %s/r%d %d", w.path("discovery-register", p.key), r, discRegisterN)
			if err != nil {
				return peerFig{}, err
			}
			if _, err := p.do(time.Minute, "discclose"); err != nil {
				return peerFig{}, err
			}
			return peerFig{rate: 1 / a.seconds, cpuUS: a.cpu * 1e6 / discRegisterN}, nil
		}})
	}
	if _, err := regOurs(w.path("discovery-register", "warm")); err != nil {
		return nil, false, fmt.Errorf("warm-up: %w", err)
	}
	if p := w.proc("curator"); p != nil {
		if _, err := p.do(3*time.Minute, "discregister %s %d", w.path("discovery-register", "curator-warm"), discRegisterN); err != nil {
			return nil, false, fmt.Errorf("Curator warm-up: %w", err)
		}
		if _, err := p.do(time.Minute, "discclose"); err != nil {
			return nil, false, err
		}
	}
	row := peerRow{workload: fmt.Sprintf("discovery: register %d instances, one after another", discRegisterN), key: "discovery-register",
		latency: "ms for all", note: kazoo}
	line, _, err := w.compare(row, w.b.f.rounds, sides)
	if err != nil {
		return lines, false, err
	}
	lines = append(lines, line)

	// Time until every cache sees a new instance.
	fmt.Printf("\n-- peers discovery-see: %d ServiceCaches (a session each) of one service; a new instance registered %d times per round: ms until every cache holds it (median over the round)\n", discReaders, discSeeK)
	base := w.path("discovery-see", "ours")
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Minute)
	defer cancel()
	notify := make(chan struct{}, 1)
	var caches []*discovery.ServiceCache
	var discs []*discovery.Discovery
	defer func() {
		for _, c := range caches {
			c.Close(context.Background())
		}
		for _, d := range discs {
			d.Close(context.Background())
		}
	}()
	for i := range discReaders + 1 {
		d, err := discovery.New(w.clients[i%discReaders], base)
		if err != nil {
			return lines, false, err
		}
		if err := d.Start(ctx); err != nil {
			return lines, false, err
		}
		discs = append(discs, d)
		if i == discReaders {
			break // the registering one
		}
		c, err := d.NewServiceCache("svc")
		if err != nil {
			return lines, false, err
		}
		c.Listen(func([]*discovery.Instance) {
			select {
			case notify <- struct{}{}:
			default:
			}
		})
		if err := c.Start(ctx); err != nil {
			return lines, false, err
		}
		caches = append(caches, c)
	}
	allHold := func(id string, want bool) bool {
		for _, c := range caches {
			has := false
			for _, in := range c.Instances() {
				has = has || in.ID == id
			}
			if has != want {
				return false
			}
		}
		return true
	}
	await := func(id string, want bool) error {
		deadline := time.After(time.Minute)
		for !allHold(id, want) {
			select {
			case <-notify:
			case <-deadline:
				return fmt.Errorf("the caches never agreed on %s", id)
			}
		}
		return nil
	}
	reg, seq := discs[discReaders], 0
	seeOurs := func(k int) (peerFig, error) {
		var ms []time.Duration
		c0 := cpuTime()
		for range k {
			id := "n" + strconv.Itoa(seq)
			seq++
			t0 := time.Now()
			if err := reg.Register(ctx, discInstance(id)); err != nil {
				return peerFig{}, err
			}
			if err := await(id, true); err != nil {
				return peerFig{}, err
			}
			ms = append(ms, time.Since(t0))
			if err := reg.Unregister(ctx, "svc", id); err != nil {
				return peerFig{}, err
			}
			if err := await(id, false); err != nil {
				return peerFig{}, err
			}
		}
		return peerFig{rate: 1e3 / msf(percentile(ms, 0.5)), cpuUS: cpuPerOp(cpuTime()-c0, k)}, nil
	}
	oursSee := peerSide{label: "ours", key: "ours", run: func(int) (peerFig, error) { return seeOurs(discSeeK) }}
	curBase := w.path("discovery-see", "curator")
	sides = w.curatorOnly(oursSee, 3*time.Minute, func(a peerAnswer) peerFig {
		m := 1.0
		if len(a.extra) == 2 {
			m = a.extra[0]
		}
		return peerFig{rate: 1e3 / m, cpuUS: a.cpu * 1e6 / float64(max(a.ops, 1))}
	}, func(int) string { return fmt.Sprintf("discsee %d", discSeeK) })
	if p := w.proc("curator"); p != nil {
		if _, err := p.do(time.Minute, "discsee-start %s %d", curBase, discReaders); err != nil {
			return lines, false, err
		}
		defer p.do(time.Minute, "discsee-stop")
		if _, err := p.do(time.Minute, "discsee %d", 3); err != nil {
			return lines, false, fmt.Errorf("Curator warm-up: %w", err)
		}
	}
	if _, err := seeOurs(3); err != nil {
		return lines, false, fmt.Errorf("warm-up: %w", err)
	}
	row = peerRow{workload: fmt.Sprintf("discovery: %d service caches see a new instance (median of %d)", discReaders, discSeeK), key: "discovery-see",
		latency: "ms to all caches", note: kazoo}
	line, _, err = w.compare(row, w.b.f.rounds, sides)
	if err != nil {
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

// discGetInstance is the discovery-getinstance row for n instances (see
// the top of the file).
func (w *peerWork) discGetInstance(n int) (string, error) {
	fmt.Printf("\n-- peers discovery-getinstance-%d: a ServiceProvider (round robin) of one service of %d instances: getInstance calls per second on one thread, for %s (Curator after %s of warm-up)\n", n, n, discGetInstanceFor, discGetInstanceFor)
	var mu sync.Mutex
	allocs := map[string][]float64{} // side -> per round: ours allocations, Curator bytes per call
	nsPer := map[string][]float64{}  // side -> per round: ns per call
	ours := func(base string) (peerFig, error) {
		ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
		defer cancel()
		d, err := w.startDiscovery(ctx, base)
		if err != nil {
			return peerFig{}, err
		}
		defer d.Close(context.Background())
		ids := make([]int, n)
		for i := range ids {
			ids[i] = i
		}
		if err := par.Each(32, ids, func(i int) error {
			return d.Register(ctx, discInstance("i"+strconv.Itoa(i)))
		}); err != nil {
			return peerFig{}, err
		}
		p, err := d.NewProvider("svc")
		if err != nil {
			return peerFig{}, err
		}
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
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		calls := 0
		t0 := time.Now()
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
			mu.Unlock()
			return peerFig{rate: 1e9 / a.extra[0], cpuUS: a.extra[0] / 1e3}, nil
		}})
	}
	row := peerRow{workload: fmt.Sprintf("discovery: getInstance among %d instances (calls/s on one thread)", n), key: fmt.Sprintf("discovery-getinstance-%d", n),
		target: 10, note: map[string]string{"kazoo": "Kazoo has no curator-x-discovery"}}
	line, _, err := w.compare(row, w.b.f.rounds, sides)
	mu.Lock()
	defer mu.Unlock()
	fmt.Printf("per call (medians of rounds): ours %.1f ns, %.2f allocations", median(nsPer["ours"]), median(allocs["ours"]))
	if c := allocs["curator"]; len(c) > 0 {
		fmt.Printf("; Curator %.0f ns, %.0f bytes allocated", median(nsPer["curator"]), median(c))
	}
	fmt.Println()
	return line, err
}

func (w *peerWork) group() ([]string, bool, error) {
	sessions := len(w.clients)
	fmt.Printf("\n-- peers group: %d GroupMembers (member i on session i%%%d) started at once: ms until every member's current membership holds all\n", groupMembers, sessions)
	oursGroup := func(path string) (peerFig, error) {
		ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
		defer cancel()
		c0, t0 := cpuTime(), time.Now()
		gs := make([]*nodes.GroupMember, groupMembers)
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
			for len(g.CurrentMembers()) != groupMembers {
				if ctx.Err() != nil {
					return peerFig{}, fmt.Errorf("group never agreed: %d of %d", len(g.CurrentMembers()), groupMembers)
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
		return peerFig{rate: 1e3 / msf(took), cpuUS: cpuPerOp(cpuTime()-c0, groupMembers)}, nil
	}
	oursSide := peerSide{label: "ours", key: "ours", run: func(r int) (peerFig, error) {
		return oursGroup(fmt.Sprintf("%s/r%d", w.path("group", "ours"), r))
	}}
	sides := w.curatorOnly(oursSide, 3*time.Minute, func(a peerAnswer) peerFig {
		m := 1.0
		if len(a.extra) == 1 {
			m = a.extra[0]
		}
		return peerFig{rate: 1e3 / m, cpuUS: a.cpu * 1e6 / groupMembers}
	}, func(r int) string {
		return fmt.Sprintf("group %s/r%d %d %d", w.path("group", "curator"), r, groupMembers, sessions)
	})
	if _, err := oursGroup(w.path("group", "warm")); err != nil {
		return nil, false, fmt.Errorf("warm-up: %w", err)
	}
	if p := w.proc("curator"); p != nil {
		if _, err := p.do(3*time.Minute, "group %s %d %d", w.path("group", "curator-warm"), groupMembers, sessions); err != nil {
			return nil, false, fmt.Errorf("Curator warm-up: %w", err)
		}
	}
	row := peerRow{workload: fmt.Sprintf("group: %d GroupMembers over %d sessions agree on the membership", groupMembers, sessions), key: "group",
		latency: "ms to agreement", note: map[string]string{"kazoo": "Kazoo has no GroupMember"}}
	line, _, err := w.compare(row, w.b.f.rounds, sides)
	if err != nil {
		return []string{line}, true, err
	}
	line2, err := w.groupExpiry()
	return []string{line, line2}, true, err
}

// groupExpiry is the group-expiry row (see the top of the file).
func (w *peerWork) groupExpiry() (string, error) {
	sessions := len(w.clients)
	n := groupExpiryMembers
	fmt.Printf("\n-- peers group-expiry: %d GroupMembers (%d on %d sessions, one on a session of its own through a proxy); the proxy black-holed until the server expires that session: ms from its member node's deletion until every other member has dropped it\n", n, n-1, sessions)
	ours := func(path string) (peerFig, error) {
		ctx, cancel := context.WithTimeout(w.ctx, 3*time.Minute)
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
		return ours(fmt.Sprintf("%s/r%d", w.path("group-expiry", "ours"), r))
	}}}
	if p := w.proc("curator"); p != nil {
		sides = append(sides, peerSide{label: p.label, key: p.key, run: func(r int) (peerFig, error) {
			px, err := zktest.ListenProxy(w.b.servers[0])
			if err != nil {
				return peerFig{}, err
			}
			defer px.Close()
			if _, err := p.do(3*time.Minute, "groupexp-start %s/r%d %d %d %s", w.path("group-expiry", p.key), r, n, sessions, px.Addr()); err != nil {
				return peerFig{}, err
			}
			px.Blackhole()
			a, err := p.do(3*time.Minute, "groupexp-wait")
			px.Restore()
			if _, serr := p.do(time.Minute, "groupexp-stop"); err == nil {
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
	row := peerRow{workload: fmt.Sprintf("group-expiry: %d GroupMembers agree after one's session expires", n), key: "group-expiry",
		latency: "ms from the node's deletion to agreement", note: map[string]string{"kazoo": "Kazoo has no GroupMember"}}
	line, _, err := w.compare(row, w.b.f.rounds, sides)
	return line, err
}
