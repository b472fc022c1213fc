//go:build chaos

package chaos

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// event is one line of a worker's log.
type event struct {
	ts   int64
	name string
	args []string
	src  string // <worker>.<seg>
}

// readLogs reads every worker log in dir, by role, each file in order.
func readLogs(dir string) (map[string][]event, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := map[string][]event{}
	for _, file := range files {
		src := strings.TrimSuffix(filepath.Base(file), ".log")
		name, _, _ := strings.Cut(src, ".")
		role := name[:strings.LastIndex(name, "-")]
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 2 {
				continue // a line cut short by SIGKILL cannot happen (one write per line), but be lenient
			}
			ts, err := strconv.ParseInt(fs[0], 10, 64)
			if err != nil {
				continue
			}
			out[role] = append(out[role], event{ts: ts, name: fs[1], args: fs[2:], src: src})
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// report is what the checker found.
type report struct {
	violations []string
	notes      []string
	ops        map[string][]int64 // completion times of the operations, by role, sorted
	longest    unavail
	worst      map[string]unavail // by fault kind
	poststall  map[string]map[string]int
	leftovers  []string
	capped     map[string]int
	total      int // violations, counting those not listed
	server     int // of which ZooKeeper's own (replicas diverged)
	// staleSigs are, by role, the lock calls that failed with "session
	// lost" for a node made just after a new session began.
	staleSigs map[string][]staleSig
	staleSeen map[string]bool // nodes confirmed left behind by the stale-node bug
	lateDone  int             // reader violations where Done closed just after it was looked at
	counter   string          // the counter's outcome, for the summary
	extra     []string        // the registered roles' outcomes, for the summary (hooks_test.go)
}

// staleSig is a lock call that failed with "session lost" for its node
// just after the client reported a new session.
type staleSig struct {
	e    event
	sid  string // the new session
	node string
}

type unavail struct {
	d    time.Duration
	role string
	f    *fault
}

func (r *report) violation(format string, args ...any) {
	r.total++
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

// serverViolation records a violation by ZooKeeper itself, not by the
// recipes: replicas that disagree after a sync.
func (r *report) serverViolation(format string, args ...any) {
	r.server++
	r.violation("ZOOKEEPER: "+format, args...)
}

// violationOf records a violation of a kind that may come in numbers: the
// first few are kept, the rest counted (see flushCapped).
func (r *report) violationOf(kind, format string, args ...any) {
	if r.capped == nil {
		r.capped = map[string]int{}
	}
	r.capped[kind]++
	r.total++
	if r.capped[kind] <= maxPerKind {
		r.violations = append(r.violations, fmt.Sprintf(format, args...))
	}
}

const maxPerKind = 10

func (r *report) flushCapped() {
	kinds := make([]string, 0, len(r.capped))
	for k := range r.capped {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if n := r.capped[k]; n > maxPerKind {
			r.violations = append(r.violations, fmt.Sprintf("... and %d more violations of the kind %q", n-maxPerKind, k))
		}
	}
}

func (r *report) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// check reads the logs and the state left in ZooKeeper and checks every
// promise.
func (h *harness) check(admin *recipes.Client, leftovers []string) *report {
	rep := &report{ops: map[string][]int64{}, worst: map[string]unavail{}, poststall: map[string]map[string]int{}, leftovers: leftovers}
	for _, l := range leftovers {
		rep.violation("node left behind after every worker stopped: %s", l)
	}
	logs, err := readLogs(h.dir)
	if err != nil {
		rep.violation("reading the logs: %v", err)
		return rep
	}
	// Violations the workers saw themselves.
	for _, role := range roles {
		for _, e := range logs[role] {
			if e.name == "violation" {
				line := strings.Join(e.args, " ")
				rep.violationOf(role+" seen by the worker", "%s: %s", e.src, line)
				if strings.Contains(line, "after that check") {
					rep.lateDone++
				}
			}
		}
	}
	reps, err := h.replicas()
	if err != nil {
		rep.violation("connecting to each server: %v", err)
		return rep
	}
	defer func() {
		for _, c := range reps {
			c.Close(context.Background())
		}
	}()
	h.checkZnodeCounts(rep)
	h.checkRecord(rep, reps, roleMutex, recMutex, histMutex, logs[roleMutex])
	finalRW := h.checkRecord(rep, reps, roleRWWrite, recRW, histRW, logs[roleRWWrite])
	h.checkReader(rep, logs[roleRWRead], finalRW)
	h.checkSemaphore(rep, roleSem, semMax, logs[roleSem])
	h.checkLeader(rep, admin, roleSelector, leadSel, logs[roleSelector])
	h.checkLeader(rep, admin, roleLatch, leadLatch, logs[roleLatch])
	h.checkCounterRole(rep, logs[roleCounter])
	for _, c := range roleChecks {
		c(h, rep, logs)
	}
	for _, r := range roles {
		sort.Slice(rep.ops[r], func(i, j int) bool { return rep.ops[r][i] < rep.ops[r][j] })
	}
	h.checkPostStall(rep, logs)
	rep.staleSigs = staleNodeSignatures(logs)
	h.checkUnavailability(rep)
	rep.flushCapped()
	return rep
}

// retryZK runs a read on the admin client through connection problems.
func retryZK(op func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := op()
		if err == nil || !recipes.IsRetryable(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkRecord checks a record written under a lock (mutex, write lock):
// the history nodes in ZooKeeper, made in the same transaction as each
// write, are the ground truth of which writes landed (as a majority of the
// servers hold it, see groundTruth). Their values must be
// 1..N, each once (a duplicate is a lost update: two holders read the same
// value), the record must hold N at version N, every landed write must have
// been attempted with that value, and every outcome logged must agree with
// the history. It returns N.
func (h *harness) checkRecord(rep *report, reps []*recipes.Client, role, rec, hist string, evs []event) int {
	type outcome struct {
		ev       string
		val, ver int64
		src      string
	}
	attempts := map[string]int64{}
	outcomes := map[string]outcome{}
	for _, e := range evs {
		switch e.name {
		case "attempt":
			attempts[e.args[1]] = atoi(e.args[0])
		case "ok", "landed":
			outcomes[e.args[2]] = outcome{e.name, atoi(e.args[0]), atoi(e.args[1]), e.src}
			rep.ops[role] = append(rep.ops[role], e.ts)
		case "refused", "lost", "unresolved":
			outcomes[e.args[0]] = outcome{ev: e.name, src: e.src}
		}
	}
	landed, union, data, st, err := h.groundTruth(rep, reps, role, rec, hist)
	if err != nil {
		rep.violation("%s: reading the history: %v", role, err)
		return 0
	}
	finalVal, finalNonce, _ := strings.Cut(string(data), " ")

	inUnion := map[int64]bool{}
	for _, v := range union {
		inUnion[v] = true
	}
	byVal := map[int64][]string{}
	var maxVal int64
	for nonce, v := range landed {
		byVal[v] = append(byVal[v], nonce)
		maxVal = max(maxVal, v)
	}
	for v := int64(1); v <= maxVal; v++ {
		switch ns := byVal[v]; {
		case len(ns) == 0 && inUnion[v]:
			rep.server++
			rep.violationOf(role+" value lost by ZooKeeper", "ZOOKEEPER: %s: value %d is in the history of a minority of the replicas only", role, v)
		case len(ns) == 0:
			rep.violationOf(role+" skipped value", "%s: value %d skipped in the record's history", role, v)
		case len(ns) > 1:
			sort.Strings(ns)
			rep.violationOf(role+" duplicated value", "%s: value %d written %d times (a lost update: two holders at once): %v", role, v, len(ns), ns)
		}
	}
	switch {
	case atoi(finalVal) != maxVal || (maxVal > 0 && (len(byVal[maxVal]) == 0 || byVal[maxVal][0] != finalNonce)):
		rep.violation("%s: the record is %q at version %d, but the last write in its history has value %d (%v)", role, data, st.Version, maxVal, byVal[maxVal])
	case int64(st.Version) == int64(len(union)) && len(union) != len(landed):
		// Counted above: entries a minority of the replicas has.
	case int64(st.Version) != int64(len(landed)):
		rep.violation("%s: the record is at version %d, but %d writes landed", role, st.Version, len(landed))
	}
	for nonce, v := range landed {
		a, ok := attempts[nonce]
		switch {
		case !ok:
			rep.violationOf(role+" value with no attempt", "%s: value %d landed (%s) with no attempt logged", role, v, nonce)
		case a != v:
			rep.violationOf(role+" value not attempted", "%s: %s landed value %d but attempted %d", role, nonce, v, a)
		}
	}
	counts := map[string]int{}
	versionOff, firstOff := 0, ""
	for nonce, o := range outcomes {
		counts[o.ev]++
		v, in := landed[nonce]
		switch o.ev {
		case "ok", "landed":
			if _, inAny := union[nonce]; !in && inAny {
				rep.server++
				rep.violationOf(role+" value lost by ZooKeeper", "ZOOKEEPER: %s: %s (%s value %d) is in the history of a minority of the replicas only", role, nonce, o.ev, o.val)
			} else if !in || v != o.val {
				rep.violationOf(role+" outcome contradicts history", "%s: %s reported %s value %d, but the history has %v", role, nonce, o.ev, o.val, map[bool]string{true: strconv.FormatInt(v, 10), false: "nothing"}[in])
			}
			if o.ver >= 0 && o.ver != o.val {
				// Implied by a duplicated or skipped value before it.
				versionOff++
				if versionOff == 1 {
					firstOff = fmt.Sprintf("%s wrote value %d as version %d", nonce, o.val, o.ver)
				}
			}
		case "refused", "lost":
			if in {
				rep.violationOf(role+" outcome contradicts history", "%s: %s was reported %s, but it landed as value %d", role, nonce, o.ev, v)
			}
		}
	}
	if versionOff > 0 && rep.capped[role+" duplicated value"]+rep.capped[role+" skipped value"] == 0 {
		rep.violation("%s: %d acknowledged writes gave the record a version other than their value (each write adds one to both), e.g. %s", role, versionOff, firstOff)
	}
	noOutcome, noOutcomeLanded := 0, 0
	for nonce := range attempts {
		if o, ok := outcomes[nonce]; ok && o.ev != "unresolved" {
			continue
		}
		noOutcome++
		if _, in := landed[nonce]; in {
			noOutcomeLanded++
		}
	}
	rep.note("%s: %d writes landed (record %q, version %d); outcomes: %d ok, %d landed after an ambiguous reply, %d refused by the fence, %d lost after an ambiguous reply, %d unresolved; %d attempts without an outcome (killed), %d of which landed",
		role, len(landed), data, st.Version, counts["ok"], counts["landed"], counts["refused"], counts["lost"], counts["unresolved"], noOutcome, noOutcomeLanded)
	return int(maxVal)
}

// checkReader: both reads under a read lock are synced, so a reader never
// sees the record go backwards, nor beyond its final value.
func (h *harness) checkReader(rep *report, evs []event, final int) {
	changed := 0
	for _, e := range evs {
		if e.name != "read" {
			continue
		}
		v1, v2, open := atoi(e.args[0]), atoi(e.args[1]), e.args[2] == "1"
		rep.ops[roleRWRead] = append(rep.ops[roleRWRead], e.ts)
		if v2 < v1 || v2 > int64(final) {
			rep.violation("rwread: %s read %d then %d (final value %d)", e.src, v1, v2, final)
		}
		if v1 != v2 {
			changed++
			if open {
				// Also logged as a violation by the worker.
				continue
			}
		}
	}
	rep.note("rwread: %d reads; %d saw the record change, each time after the lease's Done had closed", len(rep.ops[roleRWRead]), changed)
}

// checkSemaphore: the workers count the gauge entries of live leases; more
// than the maximum is logged as a violation by the worker.
func (h *harness) checkSemaphore(rep *report, role string, limit int, evs []event) {
	maxLive, maxRaw, gone := 0, 0, 0
	dist := map[int64]int{}
	counts := map[string]int{}
	for _, e := range evs {
		counts[e.name]++
		if e.name != "gauge" {
			continue
		}
		live, raw := atoi(e.args[0]), atoi(e.args[1])
		rep.ops[role] = append(rep.ops[role], e.ts)
		dist[live]++
		maxLive, maxRaw = max(maxLive, int(live)), max(maxRaw, int(raw))
		if raw > live {
			gone++
		}
	}
	rep.note("%s: %d holds counted; live holders seen at once: %v (max %d, limit %d); %d counts listed an entry whose lease was gone by the time it was checked (at most %d entries listed); fenced creates refused %d, ambiguous %d; fenced deletes ok %d, refused %d, failed %d",
		role, len(rep.ops[role]), dist, maxLive, limit, gone, maxRaw, counts["refused"], counts["createerr"], counts["delok"], counts["delrefused"], counts["delerr"])
}

// checkLeader orders every acknowledged heartbeat by the version it gave
// the leader record: the tokens (the leaders' node czxids) must never go
// backwards, so two terms never interleave, and within a term the
// heartbeats keep their order.
func (h *harness) checkLeader(rep *report, admin *recipes.Client, role, rec string, evs []event) {
	type hb struct {
		ts, tok, ver, cnt int64
		src               string
	}
	var hbs []hb
	counts := map[string]int{}
	terms := map[int64]string{}
	for _, e := range evs {
		counts[e.name]++
		if e.name != "hb" {
			continue
		}
		b := hb{e.ts, atoi(e.args[0]), atoi(e.args[1]), atoi(e.args[2]), e.src}
		hbs = append(hbs, b)
		rep.ops[role] = append(rep.ops[role], e.ts)
		if other, ok := terms[b.tok]; ok && other != b.src {
			rep.violation("%s: token %d used by %s and %s", role, b.tok, other, b.src)
		}
		terms[b.tok] = b.src
	}
	sort.Slice(hbs, func(i, j int) bool { return hbs[i].ver < hbs[j].ver })
	for i := 1; i < len(hbs); i++ {
		a, b := hbs[i-1], hbs[i]
		switch {
		case a.ver == b.ver:
			rep.violation("%s: two heartbeats acknowledged as version %d (%s, %s)", role, b.ver, a.src, b.src)
		case b.tok < a.tok:
			rep.violationOf(role+" token backwards", "%s: token went backwards at version %d: %d (%s) after %d (%s): two terms interleaved", role, b.ver, b.tok, b.src, a.tok, a.src)
		case b.tok == a.tok && b.cnt <= a.cnt:
			rep.violationOf(role+" heartbeats out of order", "%s: heartbeats of term %d out of order at version %d", role, b.tok, b.ver)
		}
	}
	var st *zk.Stat
	if err := retryZK(func() (err error) { _, st, err = admin.Get(context.Background(), rec); return err }); err != nil {
		rep.violation("%s: read %s: %v", role, rec, err)
	} else if n := len(hbs); n > 0 && int64(st.Version) < hbs[n-1].ver {
		rep.violation("%s: the leader record is at version %d, below the acknowledged %d", role, st.Version, hbs[n-1].ver)
	}
	rep.note("%s: %d heartbeats acknowledged in %d terms (tokens in order); %d refused by the fence, %d failed on the connection",
		role, len(hbs), len(terms), counts["hbrefused"], counts["hberr"])
}

// checkPostStall looks at what a holder did right after a stall the harness
// held it in: after a SIGSTOP or a black-hole past the session timeout its
// session has expired, so its next fenced write must not pass.
func (h *harness) checkPostStall(rep *report, logs map[string][]event) {
	byStall := map[string]*fault{}
	for _, f := range h.faults {
		if f.stallID != "" {
			byStall[f.stallID] = f
		}
	}
	for _, role := range roles {
		last := map[string]string{} // src -> stall id
		for _, e := range logs[role] {
			switch e.name {
			case "resumed":
				last[e.src] = e.args[0]
			case "poststall":
				f := byStall[last[e.src]]
				if f == nil {
					continue
				}
				if rep.poststall[f.kind] == nil {
					rep.poststall[f.kind] = map[string]int{}
				}
				out := role + ":" + e.args[0]
				rep.poststall[f.kind][out]++
				if f.kind == fPauseHolder || f.kind == fBlackhole {
					switch e.args[0] {
					case "ok", "landed", "hb", "delok":
						rep.violation("%s held by fault #%d (%s) for %.3fs, past its %v session, then wrote through its fence (%s)",
							e.src, f.n, f.kind, f.heal.Sub(f.start).Seconds(), workerSession, e.args[0])
					}
				}
			}
		}
	}
	for _, k := range []string{fPauseHolder, fBlackhole} {
		rep.note("first operation of the holder after %s: %v", k, rep.poststall[k])
	}
}

// outageAfter returns a fault that stopped the whole service (a quorum
// paused, the ensemble restarted, the leader killed, a member replaced
// through reconfiguration, the leader perhaps) and began after f
// healed, before next (a role's next completed operation, UnixNano) and
// within the bound: the role's time to recover from f is then not f's to
// answer for (a role paced at several hundred milliseconds may have had
// no turn between the two), and that fault's own turn measures it from
// its heal. Nil when none did.
func outageAfter(faults []*fault, f *fault, next int64) *fault {
	for _, g := range faults {
		switch g.kind {
		case fQuorumPause, fRestartAll, fLeaderKill, fReconfigReplace:
		default:
			continue
		}
		if g != f && !g.start.Before(f.heal) && g.start.UnixNano() < next && g.start.Sub(f.heal) < unavailBound {
			return g
		}
	}
	return nil
}

// checkUnavailability measures, for every fault and every role, the time
// from the heal to the next completed operation (from a later fault's
// heal when one stopped the whole service first: outageAfter).
func (h *harness) checkUnavailability(rep *report) {
	for _, f := range h.faults {
		for _, r := range roles {
			ts := rep.ops[r]
			heal := f.heal.UnixNano()
			i := sort.Search(len(ts), func(i int) bool { return ts[i] >= heal })
			if i == len(ts) {
				rep.violation("%s never completed an operation after fault #%d (%s %s) healed%s", r, f.n, f.kind, f.target, rep.why(r, f, recoveryWait))
				continue
			}
			if g := outageAfter(h.faults, f, ts[i]); g != nil {
				continue // judged from g's heal, by g's own turn
			}
			u := unavail{time.Duration(ts[i] - heal), r, f}
			if u.d > unavailBound {
				rep.violation("%s unavailable for %v after fault #%d (%s %s) healed (bound %v)%s", r, u.d.Round(time.Millisecond), f.n, f.kind, f.target, unavailBound, rep.why(r, f, u.d))
			}
			if u.d > rep.longest.d {
				rep.longest = u
			}
			if u.d > rep.worst[f.kind].d || rep.worst[f.kind].f == nil {
				rep.worst[f.kind] = u
			}
		}
	}
	for _, k := range faultKinds {
		if u, ok := rep.worst[k.name]; ok {
			rep.note("longest unavailability after %s healed: %v (%s, fault #%d %s)", k.name, u.d.Round(time.Millisecond), u.role, u.f.n, u.f.target)
		}
	}
}

func (r *report) summary(h *harness, faulting, total time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CHAOS SUMMARY server=%s seed=%d tls=%v faults-for=%v total=%v ops:", h.zkc.Version(), h.seed, h.zkc.TLS(), faulting.Round(time.Second), total.Round(time.Second))
	for _, role := range roles {
		fmt.Fprintf(&b, " %s=%d", role, len(r.ops[role]))
	}
	byKind := map[string]int{}
	for _, f := range h.faults {
		byKind[f.kind]++
	}
	fmt.Fprintf(&b, " faults=%d", len(h.faults))
	sep := " ("
	var off []string
	for _, k := range faultKinds {
		if !h.enabled[k.name] {
			off = append(off, k.name)
			continue
		}
		fmt.Fprintf(&b, "%s%s=%d", sep, k.name, byKind[k.name])
		sep = " "
	}
	b.WriteString(")")
	if len(off) > 0 {
		fmt.Fprintf(&b, " not-injected=%s", strings.Join(off, ","))
	}
	if r.counter != "" {
		fmt.Fprintf(&b, " %s", r.counter)
	}
	for _, x := range r.extra {
		fmt.Fprintf(&b, " %s", x)
	}
	fmt.Fprintf(&b, " violations=%d", r.total)
	if r.server > 0 {
		fmt.Fprintf(&b, " (%d of them by ZooKeeper itself: replicas diverged)", r.server)
	}
	if n := len(r.staleSeen); n > 0 {
		fmt.Fprintf(&b, " stale-node-bug-nodes=%d", n)
	}
	if r.lateDone > 0 {
		fmt.Fprintf(&b, " late-Done=%d", r.lateDone)
	}
	if n := len(h.problemList()); n > 0 {
		fmt.Fprintf(&b, " problems=%d", n)
	}
	if u := r.longest; u.f != nil {
		fmt.Fprintf(&b, " longest-unavailability=%v (%s after fault #%d %s %s; bound %v)", u.d.Round(time.Millisecond), u.role, u.f.n, u.f.kind, u.f.target, unavailBound)
	}
	return b.String()
}

// replicas connects one client to each server alone, so that each
// replica's own copy of the data can be read.
func (h *harness) replicas() ([]*recipes.Client, error) {
	var out []*recipes.Client
	for _, addr := range h.slotServers() {
		c, err := dial(context.Background(), []string{addr}, recipes.WithSessionTimeout(4*time.Second))
		if err != nil {
			for _, o := range out {
				o.Close(context.Background())
			}
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// readHistory syncs one replica and lists a record's history there:
// nonce -> value, with the record's data and stat.
func readHistory(c *recipes.Client, rec, hist string) (map[string]int64, []byte, *zk.Stat, error) {
	landed := map[string]int64{}
	if err := retryZK(func() error { return c.Sync(context.Background(), hist) }); err != nil {
		return nil, nil, nil, err
	}
	var dirs []string
	if err := retryZK(func() (err error) { dirs, _, err = c.Children(context.Background(), hist); return err }); err != nil {
		return nil, nil, nil, err
	}
	for _, d := range dirs {
		var kids []string
		if err := retryZK(func() (err error) { kids, _, err = c.Children(context.Background(), hist+"/"+d); return err }); err != nil {
			return nil, nil, nil, err
		}
		for _, k := range kids {
			n, v, _ := strings.Cut(k, "-")
			landed[d+"."+n] = atoi(v)
		}
	}
	var data []byte
	var st *zk.Stat
	if err := retryZK(func() (err error) { data, st, err = c.Get(context.Background(), rec); return err }); err != nil {
		return nil, nil, nil, err
	}
	return landed, data, st, nil
}

// groundTruth reads a record and its history from every replica. They
// must agree: a replica that lacks entries the others have lost committed
// transactions (a ZooKeeper server bug, reported as such). The entries a
// majority holds are the ground truth (landed), with the record as the
// first replica that has all of them shows it; union has the entries of
// any replica.
func (h *harness) groundTruth(rep *report, reps []*recipes.Client, role, rec, hist string) (landed, union map[string]int64, _ []byte, _ *zk.Stat, _ error) {
	views := make([]map[string]int64, len(reps))
	datas := make([][]byte, len(reps))
	stats := make([]*zk.Stat, len(reps))
	votes := map[string]int{}
	for i, c := range reps {
		l, d, st, err := readHistory(c, rec, hist)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("zk%d: %w", i+1, err)
		}
		views[i], datas[i], stats[i] = l, d, st
		for n := range l {
			votes[n]++
		}
	}
	landed, union = map[string]int64{}, map[string]int64{}
	for n, v := range votes {
		for _, l := range views {
			if val, ok := l[n]; ok {
				union[n] = val
				if 2*v > len(reps) {
					landed[n] = val
				}
				break
			}
		}
	}
	best := -1
	for i, l := range views {
		var missing, extra []string
		for n := range landed {
			if _, ok := l[n]; !ok {
				missing = append(missing, n)
			}
		}
		for n := range l {
			if _, ok := landed[n]; !ok {
				extra = append(extra, n)
			}
		}
		if len(missing) == 0 && len(extra) == 0 {
			if best < 0 {
				best = i
			} else if string(datas[i]) != string(datas[best]) || stats[i].Version != stats[best].Version {
				rep.serverViolation("%s: replicas disagree on %s: %q version %d on zk%d, %q version %d on zk%d", role, rec, datas[i], stats[i].Version, i+1, datas[best], stats[best].Version, best+1)
			}
			continue
		}
		sort.Strings(missing)
		sort.Strings(extra)
		rep.serverViolation("%s: replica zk%d disagrees with the majority of the ensemble after a sync: it lacks %d committed history entries [%s] and has %d others [%s] (the server lost committed transactions); record there: %q version %d",
			role, i+1, len(missing), firstFew(missing, landed), len(extra), firstFew(extra, l), datas[i], stats[i].Version)
	}
	if best < 0 {
		best = 0
	}
	return landed, union, datas[best], stats[best], nil
}

// firstFew names up to 8 history entries with their values.
func firstFew(nonces []string, vals map[string]int64) string {
	var b strings.Builder
	for i, n := range nonces {
		if i == 8 {
			fmt.Fprintf(&b, " ...")
			break
		}
		fmt.Fprintf(&b, " %s=%d", n, vals[n])
	}
	return strings.TrimSpace(b.String())
}

// checkZnodeCounts compares the number of znodes on each server once the
// workers are gone: the replicas must converge to the same tree.
func (h *harness) checkZnodeCounts(rep *report) {
	var counts []int
	same := waitFor(10*time.Second, func() bool {
		counts = counts[:0]
		for _, i := range h.slots {
			n, err := h.zkc.ZnodeCount(i)
			if err != nil {
				n = -1
			}
			counts = append(counts, n)
		}
		for _, n := range counts {
			if n != counts[0] || n < 0 {
				return false
			}
		}
		return true
	})
	if !same {
		rep.serverViolation("the servers hold different numbers of znodes 10s after the workers stopped: %v (replicas diverged)", counts)
		return
	}
	rep.note("znodes on each server at the end: %v", counts)
}

// staleNodeSignatures finds, in every worker's log, the lock and acquire
// calls that failed with "session lost: waiting for <node>" less than
// 500 ms after the client reported RECONNECTED with a session other than
// the one before. That is legitimate when the node was made in the old
// session (it went with it); it is the stale-node bug when the node was
// made in the new session by a create issued before it, and the library,
// believing it went with the old session, leaves it behind. why tells the
// two apart with the nodes diagnose saw.
func staleNodeSignatures(logs map[string][]event) map[string][]staleSig {
	out := map[string][]staleSig{}
	for _, role := range roles {
		sid := map[string]string{}  // src -> current session
		newAt := map[string]int64{} // src -> when a new session was reported
		for _, e := range logs[role] {
			switch {
			case e.name == "start" && len(e.args) == 3:
				sid[e.src] = e.args[2]
			case e.name == "state" && len(e.args) == 2:
				if e.args[0] == "RECONNECTED" && sid[e.src] != "" && e.args[1] != sid[e.src] {
					newAt[e.src] = e.ts
				}
				sid[e.src] = e.args[1]
			case e.name == "lockerr" || e.name == "acquireerr":
				line := strings.Join(e.args, " ")
				if t, ok := newAt[e.src]; ok && e.ts-t < int64(500*time.Millisecond) && strings.Contains(line, "session lost: waiting for") {
					out[role] = append(out[role], staleSig{e, sid[e.src], e.args[len(e.args)-1]})
				}
			}
		}
	}
	return out
}

// lockGroup lists the roles that contend on the same recipe path as role.
func lockGroup(role string) []string {
	if role == roleRWWrite || role == roleRWRead {
		return []string{roleRWWrite, roleRWRead}
	}
	return []string{role}
}

// why explains, where the logs or the servers can, a stretch of
// unavailability of role after fault f that lasted d.
func (r *report) why(role string, f *fault, d time.Duration) string {
	var b strings.Builder
	to := f.heal.Add(d).UnixNano()
	var sigs []string
	for _, g := range lockGroup(role) {
		for _, s := range r.staleSigs[g] {
			// Confirmed only if the node was still there when the
			// recipe was found stuck, owned by the new session. It may
			// have been left by an earlier fault: a stale node blocks
			// the queue only once the holders of that time are gone.
			if s.e.ts <= to && f.seen[s.node] == s.sid {
				sigs = append(sigs, fmt.Sprintf("%s %s (session %s)", s.e.src, s.node, s.sid))
				if r.staleSeen == nil {
					r.staleSeen = map[string]bool{}
				}
				r.staleSeen[s.node] = true
			}
		}
	}
	if len(sigs) > 0 {
		fmt.Fprintf(&b, "; %d lock calls (at this fault or before) failed with \"session lost\" just after a new session began, yet their nodes were alive in that new session when the recipe was found stuck (the stale-node bug): %s", len(sigs), strings.Join(sigs, ", "))
	}
	if f.diverged {
		b.WriteString("; the servers disagreed on the lock paths then (ZooKeeper's replicas diverged)")
	}
	return b.String()
}
