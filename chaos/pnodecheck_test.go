package chaos

// The PersistentNode checker (see pnode_test.go for the workers and the
// watcher that write the history). This file has no build tag:
// TestPNodeChecker runs in `go test ./chaos/` and shows that the checker
// accepts a good history and rejects broken ones (a node seen with data
// older than an acknowledged SetData, a node away too long after its fault
// healed or with no fault at all, data nobody set).

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pObs is one read of a worker's node by the watcher: begun at start,
// answered at end; present with the data "<seg> <n>", or absent.
type pObs struct {
	name       string
	start, end int64
	present    bool
	seg, n     int64
	owner      int64
}

// pFault is one injected fault, for the checker.
type pFault struct {
	start, heal int64
	what        string
}

// pResult is what checkPNodeHistory found.
type pResult struct {
	violations  []string
	calls       int // SetData calls
	acked       int
	failed      int
	starts      int      // PersistentNodes started
	closes      int      // closed and checked gone
	absences    int      // stretches of reads without the node (or with stale data) that ended
	absent1     []string // each, described
	longest     time.Duration
	longestWhat string
	absent      int // reads that found no node
	fresh       int // reads that found the latest acknowledged data or newer
}

type pVal struct{ seg, n int64 }

func (a pVal) less(b pVal) bool { return a.seg < b.seg || a.seg == b.seg && a.n < b.n }

func (a pVal) String() string { return fmt.Sprintf("%d %d", a.seg, a.n) }

// checkPNodeHistory checks the watcher's reads of each worker's node
// against the worker's log (lines: "pstart <seg> <n> <cycle>", "pset
// <seg> <n>", "psetok <seg> <n>", "pseterr <seg> <n> ...", "pclosed
// <cycle> <owner>"; src "<worker>.<seg>"):
//   - a node read is never older than the worker's last SetData
//     acknowledged before the read began (values ordered by segment, then
//     n), and holds data the worker set (called before the read answered);
//   - a stretch of reads that find no node, or stale data (an absence)
//     is never older than bound, counted from its start or from the
//     latest heal of the faults begun by then, whichever is later: a
//     node taken by a fault is back within bound of the heal, and one
//     that goes otherwise (a killed worker's node with its session, or
//     the gap between a Close and the next Start) within bound of going;
//     it is judged at its end (the first read that finds the latest
//     data, or the last read) and just before each fault begun during it.
//     Times in the messages are relative to origin (0: the first read).
func checkPNodeHistory(lines []qLine, obs []pObs, faults []pFault, bound time.Duration, origin int64) pResult {
	var r pResult
	bad := func(format string, args ...any) { r.violations = append(r.violations, fmt.Sprintf(format, args...)) }
	type ack struct {
		ts int64
		v  pVal
	}
	acks := map[string][]ack{}
	called := map[string]map[pVal]int64{} // worker -> value -> first call
	call := func(name string, ts int64, v pVal) {
		if called[name] == nil {
			called[name] = map[pVal]int64{}
		}
		if t, ok := called[name][v]; !ok || ts < t {
			called[name][v] = ts
		}
	}
	for _, l := range lines {
		name := l.src
		if i := strings.LastIndex(name, "."); i > 0 {
			name = name[:i]
		}
		val := func() (pVal, bool) {
			if len(l.args) < 2 {
				return pVal{}, false
			}
			s, err1 := strconv.ParseInt(l.args[0], 10, 64)
			n, err2 := strconv.ParseInt(l.args[1], 10, 64)
			return pVal{s, n}, err1 == nil && err2 == nil
		}
		switch l.name {
		case "pstart":
			if v, ok := val(); ok {
				r.starts++
				call(name, l.ts, v)
			}
		case "pset":
			if v, ok := val(); ok {
				r.calls++
				call(name, l.ts, v)
			}
		case "psetok":
			if v, ok := val(); ok {
				r.acked++
				acks[name] = append(acks[name], ack{l.ts, v})
			}
		case "pseterr":
			r.failed++
		case "pclosed":
			r.closes++
		}
	}
	// The latest acknowledged value before t (the acks of one worker
	// come in order, but take the maximum all the same).
	lastAck := func(name string, t int64) (pVal, bool) {
		as := acks[name]
		i := sort.Search(len(as), func(i int) bool { return as[i].ts >= t })
		var best pVal
		for _, a := range as[:i] {
			if best.less(a.v) {
				best = a.v
			}
		}
		return best, i > 0
	}
	for _, as := range acks {
		sort.Slice(as, func(i, j int) bool { return as[i].ts < as[j].ts })
	}
	sort.Slice(faults, func(i, j int) bool { return faults[i].start < faults[j].start })
	// The faults an absence from..end may be blamed on: begun by its end
	// and at most bound before its start, healed at most bound before its
	// start (an ephemeral node of a killed worker goes a session timeout
	// after the kill); the earliest first.
	faultStarts := func(from, end int64) []int64 {
		var out []int64
		for _, f := range faults {
			if f.start > from && f.start < end {
				out = append(out, f.start)
			}
		}
		return out
	}
	causes := func(from, end int64) []pFault {
		var out []pFault
		for _, f := range faults {
			if f.start <= end && f.start >= from-int64(bound) && f.heal >= from-int64(bound) {
				out = append(out, f)
			}
		}
		return out
	}
	byName := map[string][]pObs{}
	t0 := origin
	for _, o := range obs {
		byName[o.name] = append(byName[o.name], o)
		if origin == 0 && (t0 == 0 || o.start < t0) {
			t0 = o.start
		}
	}
	rel := func(t int64) string { return fmt.Sprintf("+%.3fs", float64(t-t0)/1e9) }
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		os := byName[name]
		sort.Slice(os, func(i, j int) bool { return os[i].start < os[j].start })
		var (
			open   bool
			from   int64
			reason string
		)
		judge := func(end int64, still bool) {
			// At its end, and just before each fault that began during
			// it, the absence may be no older than bound, counted from
			// its start or from the latest heal of the faults begun by
			// then, whichever is later (a fault still going on is not
			// over).
			worst, at := time.Duration(0), end
			for _, t := range append(faultStarts(from, end), end) {
				base := from
				for _, f := range faults {
					if f.start < t || t == end && f.start <= t {
						base = max(base, f.heal)
					}
				}
				if d := time.Duration(t - base); d > worst {
					worst, at = d, t
				}
			}
			cs := causes(from, end)
			if worst > bound {
				verb := "came back at " + rel(end)
				if still {
					verb = "was still away at the watcher's last read, " + rel(end)
				}
				blame := "no fault began within " + bound.String() + " before it"
				if len(cs) > 0 {
					blame = "the first fault to blame: " + cs[0].what
				}
				bad("pnode: %s's node %s from %s and %s: at %s it had been away %v since it went or since the heal of the faults begun by then (%s; bound %v)",
					name, reason, rel(from), verb, rel(at), worst.Round(time.Millisecond), blame, bound)
			}
			if !still {
				r.absences++
				own := time.Duration(end - from)
				desc := fmt.Sprintf("%s at %s for %v", name, rel(from), own.Round(time.Millisecond))
				// Named when the absence began before the fault healed or
				// the fault was on this worker (a kill: its node goes a
				// session timeout later); else a Close-to-Start gap, say.
				var cause *pFault
				for i, f := range cs {
					if from <= f.heal || strings.Contains(f.what, " "+name+".") {
						cause = &cs[i]
						break
					}
				}
				if cause != nil {
					if d := time.Duration(end - cause.heal); d >= 0 {
						desc += fmt.Sprintf(", back %v after fault %s healed", d.Round(time.Millisecond), cause.what)
					} else {
						desc += ", during fault " + cause.what
					}
				}
				r.absent1 = append(r.absent1, desc)
				if own > r.longest {
					r.longest, r.longestWhat = own, desc
				}
			}
		}
		for _, o := range os {
			want, anyAck := lastAck(name, o.start)
			good := o.present
			if o.present {
				v := pVal{o.seg, o.n}
				if t, ok := called[name][v]; !ok || t > o.end {
					bad("pnode: %s's node read at %s holds %q, which the worker had not set", name, rel(o.start), v)
				}
				if anyAck && v.less(want) {
					good = false
					bad("pnode: %s's node read at %s holds %q, older than the SetData of %q acknowledged before the read", name, rel(o.start), v, want)
				}
			} else {
				r.absent++
			}
			if good {
				r.fresh++
			}
			switch {
			case !good && !open:
				open, from = true, o.start
				reason = "was gone"
				if o.present {
					reason = "held stale data"
				}
			case good && open:
				open = false
				judge(o.end, false)
			}
		}
		if open {
			judge(os[len(os)-1].end, true)
		}
	}
	return r
}

// TestPNodeChecker feeds the checker good and broken histories.
func TestPNodeChecker(t *testing.T) {
	ln := func(ts int64, src, name string, args ...string) qLine {
		return qLine{ts: ts, src: src, name: name, args: args}
	}
	ms := int64(time.Millisecond)
	at := func(name string, t int64, present bool, seg, n int64) pObs {
		return pObs{name: name, start: t * ms, end: t*ms + ms, present: present, seg: seg, n: n}
	}
	logs := []qLine{
		ln(0, "p-1.1", "pstart", "1", "1", "1"),
		ln(100*ms, "p-1.1", "pset", "1", "2"), ln(110*ms, "p-1.1", "psetok", "1", "2"),
		ln(200*ms, "p-1.1", "pset", "1", "3"), // killed: no outcome
		ln(3000*ms, "p-1.2", "pstart", "2", "1", "1"),
		ln(3200*ms, "p-1.2", "pset", "2", "2"), ln(3300*ms, "p-1.2", "psetok", "2", "2"),
		ln(3400*ms, "p-1.2", "pclosed", "1", "0"),
	}
	faults := []pFault{{start: 250 * ms, heal: 250 * ms, what: "#1 kill-holder p-1.1"}}
	good := []pObs{
		at("p-1", 50, true, 1, 1),
		at("p-1", 150, true, 1, 2),
		at("p-1", 260, true, 1, 3),   // landed before the kill
		at("p-1", 2400, false, 0, 0), // the old session expired
		at("p-1", 3100, true, 2, 1),  // the new process's node
		at("p-1", 3350, true, 2, 2),
	}
	bound := 4 * time.Second
	r := checkPNodeHistory(logs, good, faults, bound, 0)
	if len(r.violations) > 0 {
		t.Fatalf("good history rejected: %v", r.violations)
	}
	if r.acked != 2 || r.calls != 3 || r.starts != 2 || r.closes != 1 || r.absences != 1 || r.absent != 1 || r.fresh != 5 {
		t.Errorf("good history counted %+v", r)
	}
	for _, tc := range []struct {
		name   string
		obs    []pObs
		faults []pFault
		want   string
	}{
		{"stale data", []pObs{at("p-1", 150, true, 1, 2), at("p-1", 160, true, 1, 1), at("p-1", 170, true, 1, 2)}, faults, "older than"},
		{"data nobody set", []pObs{at("p-1", 150, true, 1, 7)}, faults, "had not set"},
		{"data read before it was set", []pObs{at("p-1", 50, true, 1, 2)}, faults, "had not set"},
		{"back too late after it went", []pObs{at("p-1", 150, true, 1, 2), at("p-1", 2400, false, 0, 0), at("p-1", 6500, true, 2, 2)}, faults, "came back"},
		{"back too late after the heal", []pObs{at("p-1", 150, true, 1, 2), at("p-1", 2400, false, 0, 0), at("p-1", 8000, true, 2, 2)},
			[]pFault{{start: 2000 * ms, heal: 3900 * ms, what: "#1 pause-holder p-1.1"}}, "the first fault to blame: #1"},
		{"back in time after the heal", []pObs{at("p-1", 150, true, 1, 2), at("p-1", 2400, false, 0, 0), at("p-1", 7800, true, 2, 2)},
			[]pFault{{start: 2000 * ms, heal: 3900 * ms, what: "#1 pause-holder p-1.1"}}, ""},
		{"away with no fault", []pObs{at("p-1", 150, true, 1, 2), at("p-1", 2400, false, 0, 0), at("p-1", 6500, true, 2, 2)}, nil, "no fault began"},
		{"away long before a fault", []pObs{at("p-1", 150, true, 1, 2), at("p-1", 2400, false, 0, 0), at("p-1", 9000, true, 2, 2)},
			[]pFault{{start: 8000 * ms, heal: 8500 * ms, what: "#2 late"}}, "at +7.850s it had been away 5.6s"},
		{"never back", []pObs{at("p-1", 150, true, 1, 2), at("p-1", 2400, false, 0, 0), at("p-1", 6500, false, 0, 0)}, nil, "still away"},
		{"back in time", []pObs{at("p-1", 150, true, 1, 2), at("p-1", 2400, false, 0, 0), at("p-1", 4000, true, 2, 2)}, faults, ""},
	} {
		r := checkPNodeHistory(logs, tc.obs, tc.faults, bound, 0)
		got := strings.Join(r.violations, "; ")
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: violations %q, want %q", tc.name, got, tc.want)
		}
	}
}
