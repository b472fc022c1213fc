//go:build chaos

package chaos

// What the GroupMember and discovery workers (group_test.go,
// discovery_test.go) share: the parent's observer, which reads the
// members' nodes on the server every memberPollEvery (after a sync, on a
// client of its own connected to the ensemble directly) and cuts one of
// those workers' links now and then (zktest.Proxy.Cut: the connections
// close, the worker reconnects at once and its session survives, which is
// what the no-churn check needs on a server where the suite injects no
// member faults); the final quiet point; and the role check, which hands
// the logs, the reads and the faults to checkMembership
// (membercheck_test.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes"
)

const (
	groupPath    = root + "/group"
	servicesPath = root + "/services"
	serviceName  = "svc"
	servicePath  = servicesPath + "/" + serviceName

	memberWorkers   = 3
	memberSettle    = workerSession + 2*time.Second // convergence after a fault: session timeout + margin
	memberMargin    = 2 * time.Second               // a change in every view; a gone node out of every Provider
	memberCutSettle = time.Second                   // a viewer's own convergence after a cut of its links
	memberPollEvery = 250 * time.Millisecond
	memberViewEvery = 100 * time.Millisecond // the workers' reads of their views
	memberPickEvery = 200 * time.Millisecond
	memberCutMin    = 3 * time.Second
	memberCutMax    = 6 * time.Second
)

// memberRoles are the roles whose nodes the observer reads, with their
// parent paths.
var memberRoles = map[string]string{roleGroup: groupPath, roleDiscovery: servicePath}

// observer is the parent's, set by startMemberObserver.
var observer *memberObserver

func init() {
	roleWatchers = append(roleWatchers, startMemberObserver)
}

type memberObserver struct {
	h     *harness
	c     *recipes.Client
	rng   *rand.Rand
	began time.Time

	mu    sync.Mutex
	polls map[string][]mPoll
	cuts  []mFault
	final time.Time

	stopCuts, stopPolls chan struct{}
	cutsDone, pollsDone chan struct{}
}

// startMemberObserver starts the reads and the cuts; the function it
// returns stops the cuts, waits (at most memberSettle) until the last
// fault that touched these workers is memberSettle old, takes that moment
// as the final quiet point, and stops the reads.
func startMemberObserver(h *harness) func() {
	c, err := dial(context.Background(), h.zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
	if err != nil {
		h.t.Fatalf("member observer: %v", err)
	}
	o := &memberObserver{h: h, c: c, rng: rand.New(rand.NewPCG(h.seed, 0x6d656d62657273)), began: time.Now(),
		polls: map[string][]mPoll{}, stopCuts: make(chan struct{}), stopPolls: make(chan struct{}),
		cutsDone: make(chan struct{}), pollsDone: make(chan struct{})}
	observer = o
	go o.poll()
	go o.cut()
	return func() {
		close(o.stopCuts)
		<-o.cutsDone
		// (+500 ms: a killed worker's successor starts just after the kill.)
		until := o.lastTouch().Add(memberSettle + 500*time.Millisecond)
		if lim := time.Now().Add(memberSettle + 500*time.Millisecond); until.After(lim) {
			until = lim
		}
		time.Sleep(time.Until(until))
		o.mu.Lock()
		o.final = time.Now()
		o.mu.Unlock()
		time.Sleep(2 * memberPollEvery)
		close(o.stopPolls)
		<-o.pollsDone
		_ = c.Close(context.Background())
	}
}

// lastTouch is when the last fault that touched the membership workers
// (a server's, one of theirs, a cut) healed.
func (o *memberObserver) lastTouch() time.Time {
	var last time.Time
	o.h.mu.Lock()
	for _, f := range o.h.faults {
		name := targetName(f.target)
		role := ""
		if i := strings.LastIndex(name, "-"); i > 0 {
			role = name[:i]
		}
		if _, ours := memberRoles[role]; ours || isMemberFault(f.kind) {
			if f.heal.After(last) {
				last = f.heal
			}
		}
	}
	o.h.mu.Unlock()
	o.mu.Lock()
	for _, f := range o.cuts {
		if t := time.Unix(0, f.heal).Add(memberCutSettle - memberSettle); t.After(last) {
			last = t
		}
	}
	o.mu.Unlock()
	return last
}

func (o *memberObserver) poll() {
	defer close(o.pollsDone)
	roles := make([]string, 0, len(memberRoles))
	for r := range memberRoles {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	t := time.NewTicker(memberPollEvery)
	defer t.Stop()
	for {
		for _, r := range roles {
			q := o.read(r, memberRoles[r])
			o.mu.Lock()
			o.polls[r] = append(o.polls[r], q)
			o.mu.Unlock()
		}
		select {
		case <-o.stopPolls:
			return
		case <-t.C:
		}
	}
}

// read reads the members under parent after a sync.
func (o *memberObserver) read(role, parent string) (q mPoll) {
	q = mPoll{ts: time.Now().UnixNano(), nodes: map[string]mNode{}}
	defer func() { q.end = time.Now().UnixNano() }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := o.c.Sync(ctx, parent); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return q
	}
	kids, _, err := o.c.Children(ctx, parent)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return q
	}
	for _, k := range kids {
		data, st, err := o.c.Get(ctx, parent+"/"+k)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return q
		}
		q.nodes[k] = mNode{payload: nodePayload(role, data), czxid: st.Czxid, owner: st.EphemeralOwner}
	}
	q.ok = true
	return q
}

// nodePayload is a member node's payload: the data of a group member, the
// instance's payload (a JSON string) of a service instance.
func nodePayload(role string, data []byte) string {
	if role != roleDiscovery {
		return string(data)
	}
	inst, err := discovery.Decode(data)
	if err != nil {
		return "?undecodable"
	}
	return instancePayload(inst)
}

func instancePayload(inst *discovery.Instance) string {
	var s string
	if err := json.Unmarshal(inst.Payload, &s); err != nil || s == "" {
		return "?" + strings.ReplaceAll(string(inst.Payload), " ", "")
	}
	return s
}

// cut cuts the links of a membership worker, one at a time, every
// memberCutMin-memberCutMax.
func (o *memberObserver) cut() {
	defer close(o.cutsDone)
	var targets []*proc
	for _, p := range o.h.procs {
		if _, ours := memberRoles[p.role]; ours {
			targets = append(targets, p)
		}
	}
	if len(targets) == 0 {
		return
	}
	for {
		d := memberCutMin + time.Duration(o.rng.Int64N(int64(memberCutMax-memberCutMin)))
		select {
		case <-o.stopCuts:
			return
		case <-time.After(d):
		}
		p := targets[o.rng.IntN(len(targets))]
		seg, _, _ := p.current()
		now := time.Now().UnixNano()
		o.mu.Lock()
		o.cuts = append(o.cuts, mFault{kind: "cut", target: fmt.Sprintf("%s.%d", p.name, seg), start: now, heal: now})
		o.mu.Unlock()
		for _, px := range p.proxies {
			px.Cut()
		}
	}
}

// memberView formats a view for the log: "id=payload,..." or "-".
func memberView(m map[string]string) string { return formatMembers(m) }

// checkMemberRole checks a membership role's history (membercheck_test.go)
// and that its nodes are gone once the workers stopped; it returns the
// checker's result for the summary.
func (h *harness) checkMemberRole(rep *report, logs map[string][]event, role string, selfInView bool) mResult {
	var lines []mLine
	for _, e := range logs[role] {
		lines = append(lines, mLine{ts: e.ts, src: e.src, name: e.name, args: e.args})
		if e.name == "msetok" {
			rep.ops[role] = append(rep.ops[role], e.ts)
		}
	}
	var faults []mFault
	h.mu.Lock()
	for _, f := range h.faults {
		faults = append(faults, mFault{kind: f.kind, target: f.target, start: f.start.UnixNano(), heal: f.heal.UnixNano()})
	}
	h.mu.Unlock()
	p := mParams{role: role, session: int64(workerSession), settle: int64(memberSettle), margin: int64(memberMargin),
		cutSettle: int64(memberCutSettle), step: int64(200 * time.Millisecond), selfInView: selfInView}
	var polls []mPoll
	if o := observer; o != nil {
		o.mu.Lock()
		polls = append(polls, o.polls[role]...)
		faults = append(faults, o.cuts...)
		p.base = o.began.UnixNano()
		if !o.final.IsZero() {
			p.final = o.final.UnixNano()
		}
		o.mu.Unlock()
	}
	r := checkMembership(p, lines, polls, faults)
	for i, v := range r.violations {
		rep.violationOf(role+" "+r.kinds[i], "%s", v)
	}
	// Nothing left once every worker stopped (a killed worker's session
	// has long expired by now).
	parent := memberRoles[role]
	var left []string
	ok := waitFor(20*time.Second, func() bool {
		q := h.readMembers(role, parent)
		left = left[:0]
		for id := range q.nodes {
			left = append(left, id)
		}
		return q.ok && len(left) == 0
	})
	if !ok {
		sort.Strings(left)
		rep.violation("%s: node(s) left under %s after every worker stopped: %v", role, parent, left)
	}
	return r
}

// readMembers reads parent on a client of its own.
func (h *harness) readMembers(role, parent string) mPoll {
	c, err := dial(context.Background(), h.zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
	if err != nil {
		return mPoll{}
	}
	defer c.Close(context.Background())
	o := &memberObserver{c: c}
	return o.read(role, parent)
}

// memberSummary is a role's part of the summary line, and its note.
func memberSummary(rep *report, role string, r mResult, picks bool) {
	final := "not-quiet"
	if r.finalChecked {
		final = map[bool]string{true: "ok", false: "MISMATCH"}[r.finalOK]
	}
	var causes []string
	total := 0
	for k, n := range r.survived {
		causes = append(causes, fmt.Sprintf("%s=%d", k, n))
		total += n
	}
	sort.Strings(causes)
	s := fmt.Sprintf("%s-quiet-checks=%d (views %d, server %d, final %s) %s-kills-checked=%d/%d %s-dup-reports=%d %s-renewed=%d %s-cuts-survived=%d",
		role, r.instants, r.viewChecks, r.serverChecks, final, role, r.killsChecked, r.kills, role, r.dupReports, role, r.recreated, role, total)
	if len(causes) > 0 {
		s += " (" + strings.Join(causes, " ") + ")"
	}
	s += fmt.Sprintf(" %s-lost-sessions-back=%d", role, r.lostBack)
	if picks {
		s += fmt.Sprintf(" %s-picks-checked=%d/%d", role, r.picksChecked, r.picks)
	}
	s += fmt.Sprintf(" %s-violations=%d", role, len(r.violations))
	rep.extra = append(rep.extra, s)
	rep.note("%s: %d quiet instants (every %v, no fault on a server or a %s worker and no new session within %v) checked: %d views and %d server reads equal to the live members with their latest payloads (a set counts once %v old); final quiet point: %s; %d views skipped there as not connected, %d as just cut; longest a view lagged an acknowledged set at a quiet instant: %v; %d killed workers checked gone from the server and every view %v after the kill (%d skipped: a member fault overlapped, %d too late in the run); %d duplicate-member reports, each while another session of the id may have lived; %d nodes made again by a new session, none by the session that made it; %d connection losses the sessions survived, by cause %v, with no node made again and no view losing a member whose node stayed; %d sessions the client declared LOST came back (their nodes must stay, not be made again); %d sessions replaced with no fault to explain it; %d self-in-view checks; %d of %d Provider picks checked against the server",
		role, r.instants, 200*time.Millisecond, role, memberSettle, r.viewChecks, r.serverChecks, memberMargin, final, r.notConnected, r.cutSkipped, time.Duration(r.worstStaleness).Round(time.Millisecond),
		r.killsChecked, memberSettle, r.killsSkipped, r.kills-r.killsChecked-r.killsSkipped, r.dupReports, r.recreated, total, r.survived, r.lostBack, r.sessionsLost, r.selfChecks, r.picksChecked, r.picks)
}
