package chaos

// The queue's checker (see queue_test.go for the workers that write the
// history). This file has no build tag: TestQueueChecker runs in
// `go test ./chaos/` and shows that the checker accepts a good history and
// rejects broken ones (an offered item lost, a node delivered again after
// its first consumer acknowledged it, or after a failed ack whose consumer
// was not told, unless the later consumer was the one told).

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// qLine is one line of a queue worker's log: "qput <id>", "qputok <id>",
// "qputerr <id> ...", "qgot <id> <node>", "qack <id> <node> <outcome>
// <done>" (outcome ok, lost or err; done 1 when Message.Done was closed at
// the ack), in time order across the workers. src is the worker's log
// segment (<name>.<seg>).
type qLine struct {
	ts   int64
	src  string
	name string
	args []string
}

// qResult is what checkQueueHistory found.
type qResult struct {
	violations []string
	offered    int // items whose Offer (Put) returned nil
	unsure     int // items whose Put failed or did not return (may be queued)
	deliveries int
	acked      int // deliveries whose ack succeeded
	dups       int // deliveries of a node delivered before
	dupTold    int // ... after its last consumer was told its hold was gone (ErrLockLost, Done closed)
	dupKilled  int // ... after its last consumer was killed holding it
	putTwice   int // items delivered from two nodes (a Put retried after a lost reply)
	remaining  int // items still queued at the end
	goneUnsure int // offered items delivered but never acked, and gone from the queue
}

// checkQueueHistory checks a queue history: every offered item was
// delivered at least once or is still queued (remaining: the items left,
// by id); a node delivered again was last delivered to a consumer that was
// killed holding it or was told its hold was gone (its ack returned
// ErrLockLost, or failed with Done closed), or the delivery again was to a
// consumer then told so (its lock went while its process was stopped);
// never two consumers that were both not told; no item is delivered that
// nobody put.
func checkQueueHistory(lines []qLine, remaining map[string]int) qResult {
	var r qResult
	bad := func(format string, args ...any) { r.violations = append(r.violations, fmt.Sprintf(format, args...)) }
	put := map[string]string{} // id -> "call", "ok" or "err"
	type delivery struct {
		src, id, node, outcome string // outcome "" until acked
		done                   bool
	}
	var dups [][2]*delivery // (the delivery before, the duplicate)
	byNode := map[string][]*delivery{}
	open := map[string]*delivery{} // src+node -> the delivery in hand
	nodesOf := map[string]map[string]bool{}
	acked := map[string]bool{}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].ts < lines[j].ts })
	for _, l := range lines {
		switch l.name {
		case "qput":
			if len(l.args) >= 1 {
				put[l.args[0]] = "call"
			}
		case "qputok":
			if len(l.args) >= 1 {
				put[l.args[0]] = "ok"
			}
		case "qputerr":
			if len(l.args) >= 1 && put[l.args[0]] != "ok" {
				put[l.args[0]] = "err"
			}
		case "qgot":
			if len(l.args) < 2 {
				continue
			}
			id, node := l.args[0], l.args[1]
			r.deliveries++
			if _, ok := put[id]; !ok {
				bad("queue: %s was delivered %s (node %s), which no producer put", l.src, id, node)
			}
			if nodesOf[id] == nil {
				nodesOf[id] = map[string]bool{}
			}
			nodesOf[id][node] = true
			d := &delivery{src: l.src, id: id, node: node}
			if prev := byNode[node]; len(prev) > 0 {
				r.dups++
				dups = append(dups, [2]*delivery{prev[len(prev)-1], d})
			}
			byNode[node] = append(byNode[node], d)
			open[l.src+" "+node] = d
		case "qack":
			if len(l.args) < 4 {
				continue
			}
			id, node, outcome := l.args[0], l.args[1], l.args[2]
			d := open[l.src+" "+node]
			if d == nil {
				bad("queue: %s acked node %s (item %s) it was never delivered", l.src, node, id)
				continue
			}
			delete(open, l.src+" "+node)
			d.outcome, d.done = outcome, l.args[3] == "1"
			if outcome == "ok" {
				r.acked++
				acked[id] = true
			}
		}
	}
	// Judge each duplicate by how the delivery before it ended (its
	// consumer may learn it lost its hold after the other took the item).
	for _, dp := range dups {
		p, d := dp[0], dp[1]
		switch {
		case p.outcome == "":
			r.dupKilled++ // its consumer was killed holding it
		case p.outcome == "lost", p.outcome == "err" && p.done:
			r.dupTold++
		case d.outcome == "lost", d.outcome == "err" && d.done:
			// The later consumer is the one told: it took the item's
			// lock before the other, then its process stopped (a pause
			// past the session timeout) before the item reached its
			// consumer; the lock went with the session, the other took
			// and acked the item, and this one, resumed, handed over
			// what it held and learnt at its ack that the hold was gone
			// (chaos-all, seed 1: a Sharder's queue under pause-holder).
			r.dupTold++
		default:
			bad("queue: node %s (item %s) delivered to %s after %s's delivery of it ended %q (Done closed: %v): a second delivery its first consumer was not told about",
				d.node, d.id, d.src, p.src, p.outcome, p.done)
		}
	}
	// Two consumers whose acks of one node both succeeded.
	for node, ds := range byNode {
		oks := 0
		for _, d := range ds {
			if d.outcome == "ok" {
				oks++
			}
		}
		if oks > 1 {
			bad("queue: node %s (item %s) acknowledged by %d consumers", node, ds[0].id, oks)
		}
	}
	ids := make([]string, 0, len(put))
	for id := range put {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for id, n := range remaining {
		r.remaining += n
		if _, ok := put[id]; !ok {
			bad("queue: item %s is in the queue, but no producer put it", id)
		}
	}
	for _, id := range ids {
		if len(nodesOf[id]) > 1 {
			r.putTwice++
		}
		if put[id] != "ok" {
			r.unsure++
			continue
		}
		r.offered++
		delivered := len(nodesOf[id]) > 0
		if !delivered && remaining[id] == 0 {
			bad("queue: item %s was offered (Put returned nil) but never delivered and is not in the queue: lost", id)
		}
		if delivered && !acked[id] && remaining[id] == 0 {
			r.goneUnsure++
		}
	}
	return r
}

// TestQueueChecker feeds the checker good and broken histories.
func TestQueueChecker(t *testing.T) {
	ln := func(ts int64, src, name string, args ...string) qLine {
		return qLine{ts: ts, src: src, name: name, args: args}
	}
	good := []qLine{
		ln(1, "p.1", "qput", "a"), ln(2, "p.1", "qputok", "a"),
		ln(3, "p.1", "qput", "b"), ln(4, "p.1", "qputok", "b"),
		ln(5, "p.1", "qput", "c"), ln(6, "p.1", "qputok", "c"),
		ln(7, "p.1", "qput", "d"), ln(8, "p.1", "qputerr", "d", "connection"),
		// a: consumed once.
		ln(10, "c1.1", "qgot", "a", "/q/qn-1"), ln(11, "c1.1", "qack", "a", "/q/qn-1", "ok", "1"),
		// b: the first consumer's session expired: told (lost), then redelivered.
		ln(12, "c1.1", "qgot", "b", "/q/qn-2"), ln(20, "c2.1", "qgot", "b", "/q/qn-2"),
		ln(21, "c2.1", "qack", "b", "/q/qn-2", "ok", "1"), ln(22, "c1.1", "qack", "b", "/q/qn-2", "lost", "1"),
		// c: the first consumer was killed holding it.
		ln(13, "c3.1", "qgot", "c", "/q/qn-3"), ln(30, "c2.1", "qgot", "c", "/q/qn-3"),
		ln(31, "c2.1", "qack", "c", "/q/qn-3", "ok", "1"),
		// d: its put failed, yet it landed twice (a retried create).
		ln(40, "c1.1", "qgot", "d", "/q/qn-4"), ln(41, "c1.1", "qack", "d", "/q/qn-4", "ok", "1"),
		ln(42, "c1.1", "qgot", "d", "/q/qn-5"), ln(43, "c1.1", "qack", "d", "/q/qn-5", "ok", "1"),
	}
	r := checkQueueHistory(append([]qLine(nil), good...), map[string]int{})
	if len(r.violations) > 0 {
		t.Fatalf("good history rejected: %v", r.violations)
	}
	if r.offered != 3 || r.unsure != 1 || r.dups != 2 || r.dupTold != 1 || r.dupKilled != 1 || r.putTwice != 1 || r.acked != 5 {
		t.Errorf("good history counted %+v", r)
	}
	for _, tc := range []struct {
		name      string
		lines     []qLine
		remaining map[string]int
		want      string
	}{
		{"lost item", []qLine{ln(1, "p.1", "qput", "a"), ln(2, "p.1", "qputok", "a")}, nil, "lost"},
		{"still queued is not lost", []qLine{ln(1, "p.1", "qput", "a"), ln(2, "p.1", "qputok", "a")}, map[string]int{"a": 1}, ""},
		{"redelivered after an ok ack", []qLine{ln(1, "p.1", "qput", "a"), ln(2, "p.1", "qputok", "a"),
			ln(3, "c1.1", "qgot", "a", "/q/qn-1"), ln(4, "c1.1", "qack", "a", "/q/qn-1", "ok", "1"),
			ln(5, "c2.1", "qgot", "a", "/q/qn-1"), ln(6, "c2.1", "qack", "a", "/q/qn-1", "ok", "1")}, nil, "not told"},
		{"redelivered after a failed ack, Done open", []qLine{ln(1, "p.1", "qput", "a"), ln(2, "p.1", "qputok", "a"),
			ln(3, "c1.1", "qgot", "a", "/q/qn-1"), ln(4, "c1.1", "qack", "a", "/q/qn-1", "err", "0"),
			ln(5, "c2.1", "qgot", "a", "/q/qn-1"), ln(6, "c2.1", "qack", "a", "/q/qn-1", "ok", "1")}, nil, "not told"},
		{"the later consumer told, its lock gone while it was stopped", []qLine{ln(1, "p.1", "qput", "a"), ln(2, "p.1", "qputok", "a"),
			ln(3, "c1.1", "qgot", "a", "/q/qn-1"), ln(4, "c1.1", "qack", "a", "/q/qn-1", "ok", "1"),
			ln(5, "c2.1", "qgot", "a", "/q/qn-1"), ln(6, "c2.1", "qack", "a", "/q/qn-1", "lost", "1")}, nil, ""},
		{"the later consumer's ack failed, Done open", []qLine{ln(1, "p.1", "qput", "a"), ln(2, "p.1", "qputok", "a"),
			ln(3, "c1.1", "qgot", "a", "/q/qn-1"), ln(4, "c1.1", "qack", "a", "/q/qn-1", "ok", "1"),
			ln(5, "c2.1", "qgot", "a", "/q/qn-1"), ln(6, "c2.1", "qack", "a", "/q/qn-1", "err", "0")}, nil, "not told"},
		{"two successful acks", []qLine{ln(1, "p.1", "qput", "a"), ln(2, "p.1", "qputok", "a"),
			ln(3, "c1.1", "qgot", "a", "/q/qn-1"), ln(5, "c2.1", "qgot", "a", "/q/qn-1"),
			ln(6, "c2.1", "qack", "a", "/q/qn-1", "ok", "1"), ln(7, "c1.1", "qack", "a", "/q/qn-1", "ok", "1")}, nil, "acknowledged by 2"},
		{"never put", []qLine{ln(3, "c1.1", "qgot", "z", "/q/qn-1"), ln(4, "c1.1", "qack", "z", "/q/qn-1", "ok", "1")}, nil, "no producer"},
	} {
		r := checkQueueHistory(tc.lines, tc.remaining)
		got := strings.Join(r.violations, "; ")
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: violations %q, want %q", tc.name, got, tc.want)
		}
	}
}
