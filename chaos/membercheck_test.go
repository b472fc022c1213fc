package chaos

// The membership checker, shared by the GroupMember and the discovery
// workers (group_test.go, discovery_test.go, nodes_test.go). This file has
// no build tag: TestMembershipChecker runs in `go test ./chaos/` and feeds
// the checker good and broken histories.
//
// A worker's log lines that the checker reads, besides "start <name>
// <seg> <session>", "state <STATE> <session>" and "stop":
//
//	mset <payload>          before a payload is set (the first: before joining)
//	msetok <payload>        the set (or the join) returned nil
//	mseterr <payload> ...   it failed
//	mview <kind> <members>  the worker's view changed: "id=payload,..." or "-"
//	mdup 1 <error>|mdup 0   the duplicate-member report began or ended
//	mpick <id> <payload>|-  what the Provider returned
//
// A payload is "<name>.<seg>.<n>": the member id is the worker's name, and
// the segment says which incarnation of the worker set it.

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mLine is one log line of a membership worker.
type mLine struct {
	ts   int64
	src  string // <name>.<seg>
	name string
	args []string
}

// mNode is a member's node as a poll of the server found it.
type mNode struct {
	payload string
	czxid   int64
	owner   int64
}

// mPoll is one read of the members' parent on the server (after a sync).
type mPoll struct {
	ts, end int64 // when the read began and ended
	ok      bool
	nodes   map[string]mNode // by member id
}

// mFault is a fault that may matter to the check: the suite's (target a
// worker's <name>.<seg> or a server) or a connection cut of a worker's
// links by the observer (kind "cut").
type mFault struct {
	kind        string
	target      string
	start, heal int64
}

// mParams are the check's bounds, in nanoseconds.
type mParams struct {
	role       string
	session    int64 // the workers' session timeout
	settle     int64 // session timeout + margin: convergence after a fault
	margin     int64 // propagation of a change to every view
	cutSettle  int64 // a viewer's convergence after a cut of its links
	step       int64 // spacing of the instants checked
	selfInView bool  // every view must hold the viewer's own id (GroupMember)
	base       int64 // the time messages are relative to
	final      int64 // the last instant checked (the quiet point at the end); 0: the first "stop"
}

// mResult is what checkMembership found.
type mResult struct {
	violations     []string
	kinds          []string // the kind of each violation (for capping)
	instants       int      // quiet instants checked
	viewChecks     int
	serverChecks   int
	notConnected   int // viewers skipped at a quiet instant: not connected
	cutSkipped     int // viewers skipped at a quiet instant: their links were just cut
	finalChecked   bool
	finalOK        bool
	kills          int
	killsChecked   int
	killsSkipped   int // a member fault overlapped the expiry
	dupReports     int
	recreated      int            // nodes made again by a new session
	survived       map[string]int // connection cuts the session survived, by cause
	lostBack       int            // sessions the client declared LOST that came back (kept nodes must stay)
	picks          int
	picksChecked   int
	sessionsLost   int // sessions replaced with no fault to explain it
	selfChecks     int
	worstStaleness int64 // longest a healthy view lagged an acknowledged set (sampled)
}

type mSess struct {
	sid              string
	begin, lastAlive int64
	first            bool
}

type mSet struct {
	call, ack int64 // ack 0: never acknowledged
	payload   string
}

type mView struct {
	ts      int64
	members map[string]string
}

type mSeg struct {
	src, name   string
	seg         int
	start, end  int64
	killedAt    int64 // 0: not killed by the suite
	stopped     bool
	sessions    []*mSess
	conn        []mConn
	cuts        [][2]int64 // connection losses the session survived
	lostBack    int        // sessions the client declared LOST that came back
	sets        []mSet
	views       map[string][]mView // by kind
	dups        [][2]int64
	dupOpen     int64
	picks       []mLine
	selfMissing []mLine
}

type mConn struct {
	ts int64
	up bool
}

// paySeg returns the segment a payload "<name>.<seg>.<n>" names.
func paySeg(p string) string {
	f := strings.Split(p, ".")
	if len(f) != 3 {
		return ""
	}
	return f[0] + "." + f[1]
}

func parseMembers(s string) map[string]string {
	out := map[string]string{}
	if s == "-" || s == "" {
		return out
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}

// formatMembers is the inverse of parseMembers, sorted by id.
func formatMembers(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(id + "=" + m[id])
	}
	return b.String()
}

// killKind is the suite's SIGKILL of a worker (fKillHolder, which this
// untagged file cannot name).
const killKind = "kill-holder"

func isMemberFault(kind string) bool { return strings.HasPrefix(kind, "zk-") }

// targetName is the worker a fault's target names ("" for a server).
func targetName(target string) string {
	name, _, _ := strings.Cut(target, ".")
	return name
}

// checkMembership checks a membership history (see the file comment and
// group_test.go): at every quiet instant (no fault on a server or on one of
// the role's workers, nor a new session, within settle; every worker up for
// settle), every connected view and the server hold exactly the live
// members, each with a payload set at most margin before or later; a
// killed worker's node is gone from the server and every view settle after
// the kill; a duplicate-member report only while another session of that
// id may live; no node made again in the session that made it (re-
// registration churn) and no view losing a member whose node stayed; no
// Provider pick of a member whose node has been gone for margin.
func checkMembership(p mParams, lines []mLine, polls []mPoll, faults []mFault) mResult {
	r := mResult{survived: map[string]int{}}
	bad := func(kind, format string, args ...any) {
		r.violations = append(r.violations, p.role+": "+fmt.Sprintf(format, args...))
		r.kinds = append(r.kinds, kind)
	}
	rel := func(ts int64) string { return fmt.Sprintf("+%.3fs", float64(ts-p.base)/1e9) }
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].ts < lines[j].ts })
	sort.Slice(polls, func(i, j int) bool { return polls[i].ts < polls[j].ts })

	// Segments.
	segs := map[string]*mSeg{}
	var order []*mSeg
	for _, l := range lines {
		s := segs[l.src]
		if s == nil {
			name, segStr, _ := strings.Cut(l.src, ".")
			n, _ := strconv.Atoi(segStr)
			s = &mSeg{src: l.src, name: name, seg: n, start: l.ts, views: map[string][]mView{}}
			segs[l.src] = s
			order = append(order, s)
		}
		s.end = l.ts
		cur := func() *mSess {
			if n := len(s.sessions); n > 0 && s.sessions[n-1].lastAlive == 0 {
				return s.sessions[n-1]
			}
			return nil
		}
		switch l.name {
		case "start":
			if len(l.args) >= 3 {
				s.sessions = append(s.sessions, &mSess{sid: l.args[2], begin: l.ts, first: true})
				s.conn = append(s.conn, mConn{l.ts, true})
			}
		case "state":
			if len(l.args) < 2 {
				continue
			}
			st, sid := l.args[0], l.args[1]
			c := cur()
			switch st {
			case "SUSPENDED":
				s.conn = append(s.conn, mConn{l.ts, false})
				s.cuts = append(s.cuts, [2]int64{l.ts, 0})
			case "LOST":
				s.conn = append(s.conn, mConn{l.ts, false})
				if c != nil {
					c.lastAlive = l.ts
				}
				if n := len(s.cuts); n > 0 && s.cuts[n-1][1] == 0 {
					s.cuts = s.cuts[:n-1] // not survived
				}
			case "CONNECTED", "RECONNECTED", "READ_ONLY":
				s.conn = append(s.conn, mConn{l.ts, true})
				if c != nil && c.sid == sid {
					if n := len(s.cuts); n > 0 && s.cuts[n-1][1] == 0 {
						s.cuts[n-1][1] = l.ts
					}
					continue
				}
				if n := len(s.sessions); c == nil && n > 0 && s.sessions[n-1].sid == sid {
					// The session the client declared LOST came back.
					s.sessions[n-1].lastAlive = 0
					s.lostBack++
					continue
				}
				if c != nil {
					c.lastAlive = l.ts
				}
				if n := len(s.cuts); n > 0 && s.cuts[n-1][1] == 0 {
					s.cuts = s.cuts[:n-1]
				}
				s.sessions = append(s.sessions, &mSess{sid: sid, begin: l.ts})
			}
		case "stop":
			s.stopped = true
		case "mset":
			if len(l.args) >= 1 {
				s.sets = append(s.sets, mSet{call: l.ts, payload: l.args[0]})
			}
		case "msetok":
			if len(l.args) >= 1 {
				for i := len(s.sets) - 1; i >= 0; i-- {
					if s.sets[i].payload == l.args[0] {
						s.sets[i].ack = l.ts
						break
					}
				}
			}
		case "mview":
			if len(l.args) >= 2 {
				m := parseMembers(l.args[1])
				s.views[l.args[0]] = append(s.views[l.args[0]], mView{l.ts, m})
				if p.selfInView {
					r.selfChecks++
					if _, ok := m[s.name]; !ok {
						s.selfMissing = append(s.selfMissing, l)
					}
				}
			}
		case "mdup":
			if len(l.args) >= 1 {
				switch {
				case l.args[0] == "1" && s.dupOpen == 0:
					s.dupOpen = l.ts
				case l.args[0] == "0" && s.dupOpen != 0:
					s.dups = append(s.dups, [2]int64{s.dupOpen, l.ts})
					s.dupOpen = 0
				}
			}
		case "mpick":
			s.picks = append(s.picks, l)
		}
	}
	// Ends: a segment the suite killed ends at the kill; one that ended
	// otherwise without "stop" (restarted after a hang or a crash) is
	// taken to live until its successor started.
	for _, f := range faults {
		if s := segs[f.target]; s != nil && f.kind == killKind {
			s.killedAt, s.end = f.start, f.start
		}
	}
	byName := map[string][]*mSeg{}
	for _, s := range order {
		byName[s.name] = append(byName[s.name], s)
	}
	names := make([]string, 0, len(byName))
	for n, ss := range byName {
		names = append(names, n)
		sort.Slice(ss, func(i, j int) bool { return ss[i].seg < ss[j].seg })
		for i, s := range ss {
			if s.killedAt == 0 && !s.stopped && i+1 < len(ss) {
				s.end = ss[i+1].start
			}
		}
	}
	sort.Strings(names)
	for _, s := range order {
		if n := len(s.sessions); n > 0 && s.sessions[n-1].lastAlive == 0 {
			s.sessions[n-1].lastAlive = s.end
		}
		if s.dupOpen != 0 {
			s.dups = append(s.dups, [2]int64{s.dupOpen, s.end})
		}
		if n := len(s.cuts); n > 0 && s.cuts[n-1][1] == 0 {
			s.cuts = s.cuts[:n-1]
		}
	}

	final := p.final
	if final == 0 {
		for _, s := range order {
			if s.stopped && (final == 0 || s.end < final) {
				final = s.end
			}
		}
	}

	// Predicates.
	liveAt := func(name string, t int64) *mSeg {
		for _, s := range byName[name] {
			if s.start <= t && t <= s.end && (s.killedAt == 0 || t < s.killedAt) {
				return s
			}
		}
		return nil
	}
	memberFault := func(from, to int64) *mFault {
		for i := range faults {
			f := &faults[i]
			if isMemberFault(f.kind) && f.start <= to && f.heal >= from {
				return f
			}
		}
		return nil
	}
	roleFault := func(from, to int64, name string) *mFault {
		for i := range faults {
			f := &faults[i]
			if f.kind == "cut" || isMemberFault(f.kind) {
				continue
			}
			tn := targetName(f.target)
			if name != "" && tn != name || name == "" && !slices.Contains(names, tn) {
				continue
			}
			if f.start <= to && f.heal >= from {
				return f
			}
		}
		return nil
	}
	newSession := func(s *mSeg, from, to int64) bool {
		for _, ss := range s.sessions {
			if !ss.first && ss.begin >= from && ss.begin <= to {
				return true
			}
		}
		return false
	}
	connectedAt := func(s *mSeg, t int64) bool {
		up := false
		for _, c := range s.conn {
			if c.ts > t {
				break
			}
			up = c.up
		}
		return up
	}
	quiet := func(t int64) bool {
		if memberFault(t-p.settle, t) != nil || roleFault(t-p.settle, t, "") != nil {
			return false
		}
		for _, n := range names {
			s := liveAt(n, t)
			if s == nil || s.start > t-p.settle || newSession(s, t-p.settle, t) {
				return false
			}
		}
		return true
	}
	// healthy: a viewer that can be expected to be up to date at t (the
	// caller looks at the member faults).
	healthy := func(s *mSeg, t int64) (ok, connected bool) {
		if s.start > t-p.settle || roleFault(t-p.settle, t, s.name) != nil || newSession(s, t-p.settle, t) {
			return false, true
		}
		for _, f := range faults {
			if f.kind == "cut" && f.target == s.src && f.start <= t && f.start >= t-p.cutSettle {
				return false, true
			}
		}
		if !connectedAt(s, t) {
			return false, false
		}
		return true, true
	}
	// allowed: the payloads a view may show for member name at t.
	allowed := func(name string, t int64) map[string]bool {
		s := liveAt(name, t)
		if s == nil {
			return nil
		}
		from := 0
		for i, st := range s.sets {
			if st.ack != 0 && st.ack <= t-p.margin {
				from = i
			}
		}
		out := map[string]bool{}
		for _, st := range s.sets[from:] {
			if st.call <= t {
				out[st.payload] = true
			}
		}
		return out
	}
	viewAt := func(vs []mView, t int64) (mView, bool) {
		i := sort.Search(len(vs), func(i int) bool { return vs[i].ts > t })
		if i == 0 {
			return mView{}, false
		}
		return vs[i-1], true
	}
	diff := func(got map[string]string, want map[string]map[string]bool) string {
		var d []string
		for id, pay := range got {
			a, ok := want[id]
			switch {
			case !ok:
				d = append(d, fmt.Sprintf("extra %s=%s", id, pay))
			case !a[pay]:
				var al []string
				for x := range a {
					al = append(al, x)
				}
				sort.Strings(al)
				d = append(d, fmt.Sprintf("%s=%s, want one of %v", id, pay, al))
			}
		}
		for id := range want {
			if _, ok := got[id]; !ok {
				d = append(d, "missing "+id)
			}
		}
		sort.Strings(d)
		return strings.Join(d, "; ")
	}
	pollAt := func(from, to int64) *mPoll { // the last ok poll within [from, to]
		var out *mPoll
		for i := range polls {
			q := &polls[i]
			if q.ok && q.ts >= from && q.end <= to {
				out = q
			}
		}
		return out
	}
	firstPoll := func(from, to int64) *mPoll { // the first ok poll within [from, to]
		for i := range polls {
			if q := &polls[i]; q.ok && q.ts >= from && q.end <= to {
				return q
			}
		}
		return nil
	}
	serverView := func(q *mPoll) map[string]string {
		m := map[string]string{}
		for id, n := range q.nodes {
			m[id] = n.payload
		}
		return m
	}

	// Self in view.
	for _, s := range order {
		for i, l := range s.selfMissing {
			if i < 3 {
				bad("self", "%s's view at %s does not hold its own id %s: %s", s.src, rel(l.ts), s.name, strings.Join(l.args, " "))
			}
		}
		if n := len(s.selfMissing); n > 3 {
			bad("self", "%s: %d more views without its own id", s.src, n-3)
		}
	}

	// Quiet instants.
	var t0 int64
	for _, n := range names {
		t0 = max(t0, byName[n][0].start+p.settle)
	}
	var instants []int64
	for t := t0; t < final; t += p.step {
		instants = append(instants, t)
	}
	if final > 0 {
		instants = append(instants, final)
	}
	for _, t := range instants {
		isFinal := t == final
		if !quiet(t) {
			continue
		}
		r.instants++
		if isFinal {
			r.finalChecked, r.finalOK = true, true
		}
		want := map[string]map[string]bool{}
		for _, n := range names {
			want[n] = allowed(n, t)
		}
		mismatch := false
		for _, n := range names {
			s := liveAt(n, t)
			if ok, connected := healthy(s, t); !ok {
				if !connected {
					r.notConnected++
				} else {
					r.cutSkipped++
				}
				continue
			}
			kinds := make([]string, 0, len(s.views))
			for k := range s.views {
				kinds = append(kinds, k)
			}
			sort.Strings(kinds)
			for _, k := range kinds {
				r.viewChecks++
				v, ok := viewAt(s.views[k], t)
				if !ok {
					mismatch = true
					bad("convergence", "at %s (quiet) %s had no %s view yet", rel(t), s.src, k)
					continue
				}
				if d := diff(v.members, want); d != "" {
					mismatch = true
					bad("convergence", "at %s (quiet%s) %s's %s view [%s] (since %s) is not the live members: %s",
						rel(t), map[bool]string{true: ", the final check"}[isFinal], s.src, k, formatMembers(v.members), rel(v.ts), d)
				}
				// How long has this view lagged an acknowledged set?
				for _, m := range names {
					ms := liveAt(m, t)
					j := slices.IndexFunc(ms.sets, func(x mSet) bool { return x.payload == v.members[m] })
					if j < 0 {
						continue
					}
					for _, st := range ms.sets[j+1:] {
						if st.ack != 0 && st.ack <= t {
							r.worstStaleness = max(r.worstStaleness, t-st.ack)
							break
						}
					}
				}
			}
		}
		if q := pollAt(t-time.Second.Nanoseconds(), t); q != nil {
			r.serverChecks++
			w := map[string]map[string]bool{}
			for _, n := range names {
				w[n] = allowed(n, q.end)
			}
			if d := diff(serverView(q), w); d != "" {
				mismatch = true
				bad("convergence", "at %s (quiet) the server's members [%s] (read at %s) are not the live members: %s", rel(t), formatMembers(serverView(q)), rel(q.ts), d)
			}
		}
		if isFinal && mismatch {
			r.finalOK = false
		}
	}

	// Killed workers.
	for _, s := range order {
		if s.killedAt == 0 {
			continue
		}
		r.kills++
		t := s.killedAt + p.settle
		if t > final {
			continue
		}
		if memberFault(s.killedAt, t) != nil {
			r.killsSkipped++
			continue
		}
		r.killsChecked++
		if q := firstPoll(t, t+time.Second.Nanoseconds()); q != nil {
			if n, ok := q.nodes[s.name]; ok && paySeg(n.payload) == s.src {
				bad("kill", "%s was killed at %s, but its node (payload %s) was still on the server at %s", s.src, rel(s.killedAt), n.payload, rel(q.ts))
			}
		}
		for _, n := range names {
			v := liveAt(n, t)
			if v == nil || v == s {
				continue
			}
			if ok, _ := healthy(v, t); !ok {
				continue
			}
			for k, vs := range v.views {
				if vw, ok := viewAt(vs, t); ok {
					if pay, in := vw.members[s.name]; in && paySeg(pay) == s.src {
						bad("kill", "%s was killed at %s, but %s's %s view still held it (%s) at %s", s.src, rel(s.killedAt), v.src, k, pay, rel(t))
					}
				}
			}
		}
	}

	// Duplicate-member reports.
	for _, s := range order {
		for _, d := range s.dups {
			r.dupReports++
			var own *mSess
			for _, ss := range s.sessions {
				if ss.begin <= d[0] {
					own = ss
				}
			}
			legit := false
			for _, o := range byName[s.name] {
				for _, ss := range o.sessions {
					// A session lives on the server up to its timeout
					// after its last sign of life, and a new leader
					// gives every session a fresh timeout: after a
					// member fault, up to the timeout after its heal.
					alive := ss.lastAlive
					for _, f := range faults {
						if isMemberFault(f.kind) && f.start <= d[1] && f.heal >= ss.lastAlive-p.session {
							alive = max(alive, f.heal)
						}
					}
					if ss != own && ss.begin <= d[1] && d[1] <= alive+p.settle+p.margin {
						legit = true
					}
				}
			}
			if !legit {
				bad("duplicate", "%s reported a duplicate member from %s to %s, but no other session of %s could have lived then", s.src, rel(d[0]), rel(d[1]), s.name)
			}
		}
	}

	// Churn on the server: a node made again by the session that made it.
	type seen struct {
		czxid, owner int64
		at           int64
	}
	last := map[string]seen{}
	for _, q := range polls {
		if !q.ok {
			continue
		}
		for id, n := range q.nodes {
			prev, had := last[id]
			if had && n.czxid != prev.czxid {
				if n.owner == prev.owner && n.owner != 0 {
					bad("churn", "%s's node was made again (czxid %#x, read at %s; before: %#x, read at %s) by the session that made it (%#x): deleted and re-created without losing the session",
						id, n.czxid, rel(q.ts), prev.czxid, rel(prev.at), n.owner)
				} else {
					r.recreated++
				}
			}
			last[id] = seen{n.czxid, n.owner, q.ts}
		}
	}
	// Churn in the views: a member gone from a view and back while its
	// node stayed (the same czxid in every read around the gap).
	for _, s := range order {
		for k, vs := range s.views {
			present := map[string]bool{}
			gapFrom := map[string]int64{}
			for _, v := range vs {
				for id := range present {
					if _, in := v.members[id]; !in && gapFrom[id] == 0 {
						gapFrom[id] = v.ts
					}
				}
				for id := range v.members {
					if g0 := gapFrom[id]; g0 != 0 {
						gapFrom[id] = 0
						var reads []*mPoll
						for i := range polls {
							if q := &polls[i]; q.ok && q.ts >= g0-p.settle && q.ts <= v.ts+time.Second.Nanoseconds() {
								reads = append(reads, q)
							}
						}
						stayed := len(reads) > 0 && reads[0].end <= g0 && reads[len(reads)-1].ts >= v.ts
						var cz int64
						for i, q := range reads {
							n, in := q.nodes[id]
							if !in || i > 0 && n.czxid != cz {
								stayed = false
								break
							}
							cz = n.czxid
						}
						if stayed {
							bad("churn", "%s vanished from %s's %s view at %s and came back at %s while its node stayed (czxid %#x in every read from %s to %s)",
								id, s.src, k, rel(g0), rel(v.ts), cz, rel(reads[0].ts), rel(reads[len(reads)-1].ts))
						}
					}
					present[id] = true
				}
			}
		}
	}
	// Connection cuts the sessions survived, by cause.
	for _, s := range order {
		r.lostBack += s.lostBack
		for _, c := range s.cuts {
			cause := "other"
			for _, f := range faults {
				if f.kind == "cut" && f.target == s.src && f.start <= c[0] && f.start >= c[0]-time.Second.Nanoseconds() {
					cause = "own-cut"
					break
				}
			}
			if cause == "other" {
				for _, f := range faults {
					if f.kind != "cut" && f.start <= c[0] && c[0] <= f.heal+time.Second.Nanoseconds() && (isMemberFault(f.kind) || targetName(f.target) == s.name) {
						cause = f.kind
						break
					}
				}
			}
			r.survived[cause]++
		}
		for _, ss := range s.sessions {
			if ss.first {
				continue
			}
			explained := memberFault(ss.begin-p.settle, ss.begin) != nil || roleFault(ss.begin-p.settle, ss.begin, s.name) != nil
			if !explained {
				r.sessionsLost++
			}
		}
	}

	// Provider picks.
	for _, s := range order {
		for _, l := range s.picks {
			if len(l.args) < 2 {
				continue
			}
			r.picks++
			t := l.ts
			if ok, _ := healthy(s, t); !ok || memberFault(t-p.settle, t) != nil {
				continue
			}
			// Gone: in no read from margin before the pick to just after
			// it (a node made just before the pick is in the read after).
			var reads []*mPoll
			for i := range polls {
				if q := &polls[i]; q.ok && q.ts >= t-p.margin && q.ts <= t+time.Second.Nanoseconds() {
					reads = append(reads, q)
				}
			}
			if len(reads) < 2 || reads[0].ts > t-p.margin+500*time.Millisecond.Nanoseconds() || reads[len(reads)-1].ts < t {
				continue
			}
			r.picksChecked++
			gone := true
			for _, q := range reads {
				if n, in := q.nodes[l.args[0]]; in && paySeg(n.payload) == paySeg(l.args[1]) {
					gone = false
					break
				}
			}
			if gone {
				bad("pick", "%s's Provider returned %s (%s) at %s, whose node had been gone for %v (every read from %s)",
					s.src, l.args[0], l.args[1], rel(t), time.Duration(p.margin), rel(reads[0].ts))
			}
		}
	}
	return r
}

// TestMembershipChecker feeds the checker good and broken histories.
func TestMembershipChecker(t *testing.T) {
	const s = int64(time.Second)
	p := mParams{role: "group", session: 2 * s, settle: 4 * s, margin: 2 * s, cutSettle: s, step: s / 5, selfInView: true, final: 30 * s}
	ln := func(ts int64, src, name string, args ...string) mLine {
		return mLine{ts: ts, src: src, name: name, args: args}
	}
	// Three members, each joined at 0-1 s, updating at 10 s; a-1 is
	// killed at 15 s and restarted at once (a-1.2 waits for the old
	// session, reporting a duplicate meanwhile).
	base := func() []mLine {
		var l []mLine
		for i, n := range []string{"a-1", "a-2", "a-3"} {
			src := n + ".1"
			ts := int64(i) * s / 10
			l = append(l, ln(ts, src, "start", n, "1", fmt.Sprintf("0x%d", i+1)), ln(ts+1, src, "mset", src+".0"), ln(ts+s, src, "msetok", src+".0"),
				ln(10*s, src, "mset", src+".1"), ln(10*s+s/10, src, "msetok", src+".1"))
		}
		all0 := "a-1=a-1.1.0,a-2=a-2.1.0,a-3=a-3.1.0"
		all1 := "a-1=a-1.1.1,a-2=a-2.1.1,a-3=a-3.1.1"
		two := "a-2=a-2.1.1,a-3=a-3.1.1"
		all2 := "a-1=a-1.2.0,a-2=a-2.1.1,a-3=a-3.1.1"
		for _, src := range []string{"a-2.1", "a-3.1"} {
			l = append(l, ln(2*s, src, "mview", "members", all0), ln(10*s+s/5, src, "mview", "members", all1),
				ln(17*s, src, "mview", "members", two), ln(18*s, src, "mview", "members", all2))
		}
		l = append(l, ln(2*s, "a-1.1", "mview", "members", all0), ln(10*s+s/5, "a-1.1", "mview", "members", all1))
		l = append(l, ln(15*s+s/5, "a-1.2", "start", "a-1", "2", "0x9"), ln(15*s+s/5+1, "a-1.2", "mset", "a-1.2.0"),
			ln(15*s+s/2, "a-1.2", "mdup", "1", "zkrecipes: duplicate"), ln(15*s+s/2+1, "a-1.2", "mview", "members", "a-1=a-1.2.0,a-2=a-2.1.1,a-3=a-3.1.1"),
			ln(17*s+s/2, "a-1.2", "mdup", "0"), ln(17*s+s/2+1, "a-1.2", "msetok", "a-1.2.0"))
		for _, src := range []string{"a-1.2", "a-2.1", "a-3.1"} {
			l = append(l, ln(31*s, src, "stop"))
		}
		return l
	}
	faults := []mFault{{kind: killKind, target: "a-1.1", start: 15 * s, heal: 15 * s}}
	node := func(pay string, cz, owner int64) mNode { return mNode{payload: pay, czxid: cz, owner: owner} }
	pollsFor := func() []mPoll {
		var ps []mPoll
		for ts := int64(0); ts < 31*s; ts += s / 4 {
			suffix := "0"
			if ts >= 10*s+s/10 {
				suffix = "1"
			}
			nodes := map[string]mNode{
				"a-2": node("a-2.1."+suffix, 2, 2), "a-3": node("a-3.1."+suffix, 3, 3),
			}
			switch {
			case ts < 2*s:
				nodes = map[string]mNode{}
			case ts < 16*s+s/2:
				nodes["a-1"] = node("a-1.1."+suffix, 1, 1)
			case ts >= 17*s+s/2:
				nodes["a-1"] = node("a-1.2.0", 9, 9)
			}
			ps = append(ps, mPoll{ts: ts, end: ts + s/100, ok: true, nodes: nodes})
		}
		return ps
	}
	r := checkMembership(p, base(), pollsFor(), faults)
	if len(r.violations) > 0 {
		t.Fatalf("good history rejected: %v", r.violations)
	}
	if r.instants == 0 || !r.finalChecked || !r.finalOK || r.killsChecked != 1 || r.dupReports != 1 || r.recreated != 1 {
		t.Fatalf("good history counted %+v", r)
	}

	for _, tc := range []struct {
		name   string
		change func(l []mLine, ps []mPoll) ([]mLine, []mPoll)
		want   string
	}{
		{"self missing", func(l []mLine, ps []mPoll) ([]mLine, []mPoll) {
			return append(l, ln(11*s, "a-2.1", "mview", "members", "a-1=a-1.1.1,a-3=a-3.1.1")), ps
		}, "does not hold its own id"},
		{"stale payload at a quiet point", func(l []mLine, ps []mPoll) ([]mLine, []mPoll) {
			return append(l, ln(11*s, "a-3.1", "mview", "members", "a-1=a-1.1.0,a-2=a-2.1.1,a-3=a-3.1.1")), ps
		}, "want one of"},
		{"a live member missing at the end", func(l []mLine, ps []mPoll) ([]mLine, []mPoll) {
			return append(l, ln(25*s, "a-3.1", "mview", "members", "a-1=a-1.2.0,a-3=a-3.1.1")), ps
		}, "the final check"},
		{"server missing a member", func(l []mLine, ps []mPoll) ([]mLine, []mPoll) {
			for i := range ps {
				if ps[i].ts > 25*s {
					delete(ps[i].nodes, "a-2")
				}
			}
			return l, ps
		}, "the server's members"},
		{"killed member still in a view", func(l []mLine, ps []mPoll) ([]mLine, []mPoll) {
			out := l[:0]
			for _, x := range l {
				if x.ts < 17*s || x.src != "a-2.1" || x.name != "mview" {
					out = append(out, x)
				}
			}
			return out, ps
		}, "was killed at"},
		{"killed member's node still there", func(l []mLine, ps []mPoll) ([]mLine, []mPoll) {
			for i := range ps {
				if ps[i].ts >= 16*s+s/2 && ps[i].ts < 19*s+s/2 {
					ps[i].nodes["a-1"] = node("a-1.1.1", 1, 1)
				}
			}
			return l, ps
		}, "still on the server"},
		{"duplicate report with no other session", func(l []mLine, ps []mPoll) ([]mLine, []mPoll) {
			return append(l, ln(25*s, "a-2.1", "mdup", "1", "x"), ln(26*s, "a-2.1", "mdup", "0")), ps
		}, "duplicate member"},
		{"node re-made in the same session", func(l []mLine, ps []mPoll) ([]mLine, []mPoll) {
			for i := range ps {
				if ps[i].ts >= 22*s {
					ps[i].nodes["a-3"] = node("a-3.1.1", 33, 3)
				}
			}
			return l, ps
		}, "by the session that made it"},
		{"view churn while the node stayed", func(l []mLine, ps []mPoll) ([]mLine, []mPoll) {
			return append(l, ln(22*s, "a-2.1", "mview", "members", "a-1=a-1.2.0,a-2=a-2.1.1"),
				ln(22*s+s/10, "a-2.1", "mview", "members", "a-1=a-1.2.0,a-2=a-2.1.1,a-3=a-3.1.1")), ps
		}, "vanished from"},
		{"provider returns a gone instance", func(l []mLine, ps []mPoll) ([]mLine, []mPoll) {
			return append(l, ln(24*s, "a-2.1", "mpick", "a-1", "a-1.1.1")), ps
		}, "Provider returned"},
	} {
		l, ps := tc.change(base(), pollsFor())
		r := checkMembership(p, l, ps, faults)
		got := strings.Join(r.violations, "; ")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: violations %q, want %q", tc.name, got, tc.want)
		}
	}
	// A provider pick of a live instance, one of an instance made just
	// before (after the last read), and a survived cut, pass.
	ps := pollsFor()
	for i := range ps {
		if ps[i].ts > 10*s && ps[i].ts < 13*s+s/3 {
			delete(ps[i].nodes, "a-3")
		}
	}
	l := append(base(), ln(24*s, "a-2.1", "mpick", "a-1", "a-1.2.0"), ln(13*s+s/4, "a-2.1", "mpick", "a-3", "a-3.1.1"),
		ln(26*s, "a-2.1", "state", "SUSPENDED", "0x2"), ln(26*s+s/2, "a-2.1", "state", "LOST", "0x2"), ln(26*s+s*3/4, "a-2.1", "state", "RECONNECTED", "0x2"),
		ln(20*s, "a-3.1", "state", "SUSPENDED", "0x3"), ln(20*s+s/10, "a-3.1", "state", "RECONNECTED", "0x3"))
	r = checkMembership(p, l, ps, append(faults, mFault{kind: "cut", target: "a-3.1", start: 20*s - s/100, heal: 20*s - s/100}))
	if r.picksChecked != 2 || r.survived["own-cut"] != 1 || r.lostBack != 1 || r.sessionsLost != 0 || strings.Contains(strings.Join(r.violations, "; "), "Provider") {
		t.Errorf("pick and cut: %v %+v", r.violations, r)
	}
}
