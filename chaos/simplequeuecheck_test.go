package chaos

// The simple queue's checker (see simplequeue_test.go for the workers
// that write the history). This file has no build tag:
// TestSQueueChecker runs in `go test ./chaos/` and shows that the checker
// accepts a good history and rejects broken ones (an acknowledged item
// lost with no take to blame, an item delivered twice with no connection
// loss during its offer, an item nobody offered).

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sqResult is what checkSQueueHistory found.
type sqResult struct {
	violations   []string
	offered      int // items whose Offer returned nil
	unsure       int // items whose Offer failed or never returned
	unsureSeen   int // ... of which taken or left queued
	taken        int // deliveries (sqgot)
	remaining    int // items left queued
	lostAllowed  int // offered items neither taken nor queued, each matched to a take that may have deleted it
	creditKilled int // takes killed in flight (or holding an item not yet logged)
	creditFailed int // takes that returned an error
	creditConn   int // connection losses during takes
	creditsLeft  int // of those, not needed to explain a loss
	dups         int // items delivered (or queued) more than once, each after a connection loss during its Offer
}

// connSlack is how long after a call returned a connection-loss state
// line still counts for it: the client reports states on a goroutine of
// its own, so the line may be written just after the call saw the loss.
const connSlack = 200 * time.Millisecond

// checkSQueueHistory checks a simple-queue history. lines are the
// workers' "sqoffer <id>", "sqofferok <id>", "sqoffererr <id> ...",
// "sqtake", "sqgot <id>", "sqtakeerr ..." and "state <STATE> <session>"
// lines (src "<worker>.<seg>"; any other line of the worker's, such as
// "start", marks when its segment began); remaining counts the items left
// queued, by id. It wants:
//   - nothing taken or queued that no producer offered;
//   - each item taken or queued at most once, plus once more for each
//     connection loss (SUSPENDED or LOST) during its Offer, whose create
//     may then have been made twice (Offer is at-least-once, as
//     Curator's);
//   - each item whose Offer returned nil taken or still queued, or else
//     matched, one to one, to a take that can have deleted it without
//     returning it (at-most-once): a take killed (before its worker's
//     next segment began) in flight or between its return and its log
//     line, a take that returned an error, or a
//     connection loss during a take (a delete whose reply was lost is
//     not retried: the next item is taken instead); the take must have
//     ended after the item's Offer began.
func checkSQueueHistory(lines []qLine, remaining map[string]int) sqResult {
	var r sqResult
	bad := func(format string, args ...any) { r.violations = append(r.violations, fmt.Sprintf(format, args...)) }
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].ts < lines[j].ts })
	type call struct {
		id        string
		src       string
		from, to  int64 // to: the return, or the segment's last line
		status    string
		conn      int
		returned  bool
		takeFails bool
	}
	last := map[string]int64{}       // src -> its last line
	troubles := map[string][]int64{} // src -> times of SUSPENDED and LOST
	offers := map[string]*call{}
	openOffer := map[string]*call{}
	openTake := map[string]*call{}
	var takes []*call
	delivered := map[string]int{}
	first := map[string]int64{} // src -> its first line
	for _, l := range lines {
		last[l.src] = l.ts
		if _, ok := first[l.src]; !ok {
			first[l.src] = l.ts
		}
		switch l.name {
		case "state":
			if len(l.args) > 0 && (l.args[0] == "SUSPENDED" || l.args[0] == "LOST") {
				troubles[l.src] = append(troubles[l.src], l.ts)
			}
		case "sqoffer":
			if len(l.args) < 1 {
				continue
			}
			c := &call{id: l.args[0], src: l.src, from: l.ts, status: "unknown"}
			if _, dup := offers[c.id]; dup {
				bad("squeue: item %s offered twice by the producer", c.id)
			}
			offers[c.id] = c
			openOffer[l.src] = c
		case "sqofferok", "sqoffererr":
			if c := openOffer[l.src]; c != nil && len(l.args) > 0 && c.id == l.args[0] {
				c.to, c.returned = l.ts, true
				c.status = map[bool]string{true: "ok", false: "err"}[l.name == "sqofferok"]
				delete(openOffer, l.src)
			}
		case "sqtake":
			c := &call{src: l.src, from: l.ts}
			takes = append(takes, c)
			openTake[l.src] = c
		case "sqgot", "sqtakeerr":
			c := openTake[l.src]
			if c == nil {
				continue
			}
			delete(openTake, l.src)
			c.to, c.returned = l.ts, true
			if l.name == "sqtakeerr" {
				c.takeFails = true
				continue
			}
			if len(l.args) < 1 {
				continue
			}
			c.id = l.args[0]
			r.taken++
			delivered[c.id]++
			if _, ok := offers[c.id]; !ok {
				bad("squeue: %s took item %s, which no producer offered", l.src, c.id)
			}
		}
	}
	// When the segment after src began (its worker restarted after a
	// kill), or never.
	nextSeg := func(src string) int64 {
		i := strings.LastIndex(src, ".")
		if i < 0 {
			return math.MaxInt64
		}
		seg, err := strconv.Atoi(src[i+1:])
		if err != nil {
			return math.MaxInt64
		}
		if t, ok := first[fmt.Sprintf("%s.%d", src[:i], seg+1)]; ok {
			return t
		}
		return math.MaxInt64
	}
	conn := func(c *call) int {
		to := c.to
		if !c.returned {
			to = last[c.src]
		}
		n := 0
		for _, t := range troubles[c.src] {
			if t >= c.from && t <= to+int64(connSlack) {
				n++
			}
		}
		return n
	}
	// Takes that may have deleted an item without returning it.
	type credit struct {
		end  int64
		kind string
	}
	var credits []credit
	for _, c := range takes {
		if !c.returned {
			// Killed (or stopped, its last line lost) some time before
			// the worker's next segment began.
			c.to = last[c.src]
			credits = append(credits, credit{nextSeg(c.src), "killed"})
			r.creditKilled++
		} else if c.takeFails {
			credits = append(credits, credit{c.to, "failed"})
			r.creditFailed++
		}
		for range conn(c) {
			credits = append(credits, credit{c.to, "conn"})
			r.creditConn++
		}
	}
	for id, n := range remaining {
		r.remaining += n
		if _, ok := offers[id]; !ok {
			bad("squeue: item %s is in the queue, but no producer offered it", id)
		}
	}
	ids := make([]string, 0, len(offers))
	for id := range offers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var lost []*call
	for _, id := range ids {
		c := offers[id]
		if !c.returned {
			c.to = last[c.src]
		}
		copies := delivered[id] + remaining[id]
		allowed := 1 + conn(c)
		switch {
		case copies > allowed:
			bad("squeue: item %s delivered %d times and left queued %d times, but its Offer (%s) saw %d connection losses: at most %d copies can exist",
				id, delivered[id], remaining[id], c.status, allowed-1, allowed)
		case copies > 1:
			r.dups++
		}
		if c.status != "ok" {
			r.unsure++
			if copies > 0 {
				r.unsureSeen++
			}
			continue
		}
		r.offered++
		if copies == 0 {
			lost = append(lost, c)
		}
	}
	// Match each lost item to a take that ended after its Offer began
	// (greedy by the takes' ends: each take's items are a superset of
	// those of the takes that ended before it).
	sort.Slice(credits, func(i, j int) bool { return credits[i].end < credits[j].end })
	sort.Slice(lost, func(i, j int) bool { return lost[i].from < lost[j].from })
	matched := make([]bool, len(lost))
	used := 0
	for _, cr := range credits {
		for i, c := range lost {
			if !matched[i] && c.from < cr.end {
				matched[i] = true
				used++
				break
			}
		}
	}
	r.lostAllowed = used
	r.creditsLeft = len(credits) - used
	for i, c := range lost {
		if !matched[i] {
			bad("squeue: item %s was offered (Offer returned nil) but never taken and is not in the queue, and no take that could have deleted it without returning it is left to blame: lost", c.id)
		}
	}
	return r
}

// TestSQueueChecker feeds the checker good and broken histories.
func TestSQueueChecker(t *testing.T) {
	ln := func(ts int64, src, name string, args ...string) qLine {
		return qLine{ts: ts, src: src, name: name, args: args}
	}
	ms := int64(time.Millisecond)
	good := []qLine{
		ln(1*ms, "p.1", "sqoffer", "a"), ln(2*ms, "p.1", "sqofferok", "a"),
		ln(3*ms, "p.1", "sqoffer", "b"), ln(4*ms, "p.1", "sqofferok", "b"),
		ln(5*ms, "p.1", "sqoffer", "c"), ln(6*ms, "p.1", "sqofferok", "c"),
		// d: a connection loss during its offer, taken twice.
		ln(7*ms, "p.1", "sqoffer", "d"), ln(8*ms, "p.1", "state", "SUSPENDED", "0x1"),
		ln(9*ms, "p.1", "state", "RECONNECTED", "0x1"), ln(10*ms, "p.1", "sqofferok", "d"),
		// e: its offer failed, and it is still queued.
		ln(11*ms, "p.1", "sqoffer", "e"), ln(12*ms, "p.1", "sqoffererr", "e", "connection"),
		ln(13*ms, "p.1", "sqoffer", "f"), ln(14*ms, "p.1", "sqofferok", "f"),
		// a taken; b lost to c2's first segment, killed holding it unlogged.
		ln(20*ms, "c1.1", "sqtake"), ln(21*ms, "c1.1", "sqgot", "a"),
		ln(22*ms, "c2.1", "sqtake"), ln(23*ms, "c2.1", "stalled", "1", "hold"),
		// c taken; d taken twice.
		ln(30*ms, "c2.2", "sqtake"), ln(31*ms, "c2.2", "sqgot", "c"),
		ln(32*ms, "c2.2", "sqtake"), ln(33*ms, "c2.2", "sqgot", "d"),
		ln(34*ms, "c1.1", "sqtake"), ln(35*ms, "c1.1", "sqgot", "d"),
		ln(36*ms, "c1.1", "sqtake"), ln(37*ms, "c1.1", "sqtakeerr", "context canceled"),
		ln(38*ms, "c2.2", "sqtake"), ln(39*ms, "c2.2", "sqtakeerr", "context canceled"),
	}
	remaining := map[string]int{"e": 1, "f": 1}
	r := checkSQueueHistory(append([]qLine(nil), good...), remaining)
	if len(r.violations) > 0 {
		t.Fatalf("good history rejected: %v", r.violations)
	}
	if r.offered != 5 || r.unsure != 1 || r.unsureSeen != 1 || r.taken != 4 || r.remaining != 2 || r.lostAllowed != 1 || r.dups != 1 ||
		r.creditKilled != 1 || r.creditFailed != 2 || r.creditsLeft != 2 {
		t.Errorf("good history counted %+v", r)
	}
	offer := func(id string, ts int64) []qLine {
		return []qLine{ln(ts*ms, "p.1", "sqoffer", id), ln(ts*ms+ms, "p.1", "sqofferok", id)}
	}
	cat := func(parts ...[]qLine) []qLine {
		var out []qLine
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		lines     []qLine
		remaining map[string]int
		want      string
	}{
		{"lost with no take to blame", cat(offer("a", 1), offer("b", 3), []qLine{ln(10*ms, "c1.1", "sqtake"), ln(11*ms, "c1.1", "sqgot", "a")}), nil, "lost"},
		{"lost before its offer began", cat([]qLine{ln(1*ms, "c1.1", "sqtake"), ln(2*ms, "c1.1", "sqtakeerr", "x")}, offer("a", 5)), nil, "lost"},
		{"still queued is not lost", offer("a", 1), map[string]int{"a": 1}, ""},
		{"delivered twice", cat(offer("a", 1), []qLine{ln(10*ms, "c1.1", "sqtake"), ln(11*ms, "c1.1", "sqgot", "a"),
			ln(12*ms, "c2.2", "sqtake"), ln(13*ms, "c2.2", "sqgot", "a")}), nil, "delivered 2 times"},
		{"taken and queued", cat(offer("a", 1), []qLine{ln(10*ms, "c1.1", "sqtake"), ln(11*ms, "c1.1", "sqgot", "a")}), map[string]int{"a": 1}, "at most 1"},
		{"an unknown offer twice", cat([]qLine{ln(1*ms, "p.2", "sqoffer", "a")}, []qLine{ln(10*ms, "c1.1", "sqtake"), ln(11*ms, "c1.1", "sqgot", "a"),
			ln(12*ms, "c2.2", "sqtake"), ln(13*ms, "c2.2", "sqgot", "a")}), nil, "delivered 2 times"},
		{"a connection loss elsewhere", cat(offer("a", 1), []qLine{ln(5*ms, "c1.1", "state", "SUSPENDED", "0x1"), ln(10*ms, "c1.1", "sqtake"), ln(11*ms, "c1.1", "sqgot", "a"),
			ln(12*ms, "c2.2", "sqtake"), ln(13*ms, "c2.2", "sqgot", "a")}), nil, "delivered 2 times"},
		{"never offered", []qLine{ln(10*ms, "c1.1", "sqtake"), ln(11*ms, "c1.1", "sqgot", "z")}, nil, "no producer"},
		{"queued, never offered", nil, map[string]int{"z": 1}, "no producer"},
	} {
		r := checkSQueueHistory(tc.lines, tc.remaining)
		got := strings.Join(r.violations, "; ")
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: violations %q, want %q", tc.name, got, tc.want)
		}
	}
}
