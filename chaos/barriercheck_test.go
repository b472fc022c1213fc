package chaos

// The double barrier's checker (see barrier_test.go for the workers).
// This file has no build tag: TestBarrierChecker runs in `go test
// ./chaos/` and shows the checker rejecting an Enter that returned with
// too few members called in and a Leave that returned before a member
// that entered had left.

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// bLine is one line of a barrier worker's log: "bcall <round>", "benter
// <round> ok <node> <session>", "benter <round> err ...", "blcall
// <round>", "bleave <round> ok|err <session> ...", "bdropped <round>".
type bLine struct {
	ts   int64
	src  string
	name string
	args []string
}

type bResult struct {
	violations                       []string
	rounds, full                     int
	enterCalls, entered, enterFailed int
	leaveCalls, left, dropped        int
	minPresent                       int
}

// checkBarrierHistory checks, round by round, that no Enter returned ok
// before qty members had called Enter in that round (a member counts for
// a round only once its node could exist), and that no Leave returned ok
// while a member whose Enter had returned ok before that Leave began had
// not yet called Leave and later left it successfully in the session it
// entered in (so its node was there at every look the leaver took: a
// member whose session expired meanwhile lost its node then, and the
// others rightly stop waiting for it). A member whose Enter returned only
// after another's Leave began may have made its node after the leaver's
// last look: it joined a group that was leaving, and passes on the ready
// node the group left (Curator's semantics). The workers hold the barrier
// for random times between Enter and Leave, so a Leave that does not
// wait meets members that entered before it began and leave after it.
func checkBarrierHistory(lines []bLine, qty int) bResult {
	r := bResult{minPresent: -1}
	bad := func(format string, args ...any) { r.violations = append(r.violations, fmt.Sprintf(format, args...)) }
	type member struct {
		call, enter, lcall, leave int64 // 0: not logged
		enterOK, leaveOK          bool
		enterSid, leaveSid        string
	}
	rounds := map[string]map[string]*member{} // round -> src -> member
	get := func(l bLine) *member {
		if rounds[l.args[0]] == nil {
			rounds[l.args[0]] = map[string]*member{}
		}
		m := rounds[l.args[0]][l.src]
		if m == nil {
			m = &member{}
			rounds[l.args[0]][l.src] = m
		}
		return m
	}
	for _, l := range lines {
		if len(l.args) < 1 {
			continue
		}
		m := get(l)
		switch l.name {
		case "bcall":
			m.call = l.ts
			r.enterCalls++
		case "benter":
			m.enter, m.enterOK = l.ts, len(l.args) > 1 && l.args[1] == "ok"
			if len(l.args) > 3 {
				m.enterSid = l.args[3]
			}
			if m.enterOK {
				r.entered++
			} else {
				r.enterFailed++
			}
		case "blcall":
			m.lcall = l.ts
			r.leaveCalls++
		case "bleave":
			m.leave, m.leaveOK = l.ts, len(l.args) > 1 && l.args[1] == "ok"
			if len(l.args) > 2 {
				m.leaveSid = l.args[2]
			}
			if m.leaveOK {
				r.left++
			}
		case "bdropped":
			r.dropped++
		}
	}
	names := make([]string, 0, len(rounds))
	for n := range rounds {
		names = append(names, n)
	}
	sort.Strings(names)
	r.rounds = len(rounds)
	for _, n := range names {
		ms := rounds[n]
		srcs := make([]string, 0, len(ms))
		for s := range ms {
			srcs = append(srcs, s)
		}
		sort.Strings(srcs)
		all := true
		for _, s := range srcs {
			m := ms[s]
			if !m.enterOK {
				all = false
				continue
			}
			present := 0
			var absent []string
			for _, o := range srcs {
				if om := ms[o]; om.call != 0 && om.call < m.enter {
					present++
				} else {
					absent = append(absent, o)
				}
			}
			if r.minPresent < 0 || present < r.minPresent {
				r.minPresent = present
			}
			if present < qty {
				bad("barrier: round %s: %s's Enter returned ok when only %d members had called Enter (memberQty %d; not yet: %s)", n, s, present, qty, strings.Join(absent, ","))
			}
			if !m.leaveOK {
				continue
			}
			for _, o := range srcs {
				om := ms[o]
				if o == s || !om.enterOK || !om.leaveOK || om.enterSid != om.leaveSid {
					continue // never in, or killed inside, or its node went with its session
				}
				// om's node was there before m's first look (om's Enter
				// had returned before m began to leave) and until after
				// m's last (om began to leave after m's Leave returned).
				if om.enter < m.lcall && om.lcall > m.leave {
					bad("barrier: round %s: %s's Leave returned ok before %s, which entered, began to leave (and then left ok)", n, s, o)
				}
			}
		}
		if all && len(srcs) > 0 {
			r.full++
		}
	}
	if r.minPresent < 0 {
		r.minPresent = 0
	}
	return r
}

// TestBarrierChecker feeds the checker good and broken histories.
func TestBarrierChecker(t *testing.T) {
	ln := func(ts int64, src, name string, args ...string) bLine {
		return bLine{ts: ts, src: src, name: name, args: args}
	}
	cLeaveSid := "0x3"
	round := func(enterB, leaveC int64) []bLine {
		return []bLine{
			ln(1, "a", "bcall", "7"), ln(2, "b", "bcall", "7"), ln(3, "c", "bcall", "7"), ln(4, "d", "bcall", "7"),
			ln(5, "a", "benter", "7", "ok", "/n/a", "0x1"), ln(enterB, "b", "benter", "7", "ok", "/n/b", "0x2"), ln(6, "c", "benter", "7", "ok", "/n/c", "0x3"),
			ln(20, "d", "benter", "7", "err", "deadline"), ln(21, "d", "bdropped", "7"),
			ln(10, "a", "blcall", "7"), ln(11, "b", "blcall", "7"), ln(leaveC, "c", "blcall", "7"),
			ln(15, "a", "bleave", "7", "ok", "0x1"), ln(16, "b", "bleave", "7", "ok", "0x2"), ln(17, "c", "bleave", "7", "ok", cLeaveSid),
		}
	}
	r := checkBarrierHistory(round(6, 12), 3)
	if len(r.violations) > 0 {
		t.Fatalf("good history rejected: %v", r.violations)
	}
	if r.rounds != 1 || r.entered != 3 || r.enterFailed != 1 || r.left != 3 || r.dropped != 1 || r.minPresent != 4 {
		t.Errorf("good history counted %+v", r)
	}
	// b entered when only a and b had called (the others later).
	early := round(6, 12)
	for i := range early {
		if early[i].name == "bcall" && (early[i].src == "c" || early[i].src == "d") {
			early[i].ts = 7
		}
	}
	if r := checkBarrierHistory(early, 3); !strings.Contains(strings.Join(r.violations, ";"), "only 2 members") {
		t.Errorf("an early Enter passed: %v", r.violations)
	}
	// c began to leave after a's and b's Leave returned, and left ok.
	if r := checkBarrierHistory(round(6, 16), 3); !strings.Contains(strings.Join(r.violations, ";"), "before c") {
		t.Errorf("an early Leave passed: %v", r.violations)
	}
	// A late member entering as the group leaves holds nobody.
	late := append(round(6, 12), ln(14, "e", "bcall", "7"), ln(15, "e", "benter", "7", "ok", "/n/e", "0x5"),
		ln(16, "e", "blcall", "7"), ln(18, "e", "bleave", "7", "ok", "0x5"))
	if r := checkBarrierHistory(late, 3); len(r.violations) > 0 {
		t.Errorf("a late member held the group: %v", r.violations)
	}
	// ... unless c's session expired while it was inside (paused): its
	// node went then, and it left in a new session.
	cLeaveSid = "0x9"
	if r := checkBarrierHistory(round(6, 16), 3); len(r.violations) > 0 {
		t.Errorf("a member whose session expired inside held the others: %v", r.violations)
	}
	cLeaveSid = "0x3"
	// CI's 3.8.0 run, seed 3 (times in µs): e, a fourth member, called
	// Enter after the group had entered (the ready node was there) and
	// returned 1.4 µs before a's Leave did, which had begun before e's
	// Enter returned: e's node may have come after a's last look.
	ciLate := append(round(6, 12), ln(551, "e", "bcall", "7"), ln(558366, "e", "benter", "7", "ok", "/n/e", "0x5"),
		ln(558380, "e", "blcall", "7"), ln(565997, "e", "bleave", "7", "ok", "0x5"))
	for i := range ciLate {
		if ciLate[i].src == "a" && ciLate[i].name == "bleave" {
			ciLate[i].ts = 558367
		}
	}
	if r := checkBarrierHistory(ciLate, 3); len(r.violations) > 0 {
		t.Errorf("a member whose Enter returned after a's Leave began held a: %v", r.violations)
	}
	// ... but a member in before a began to leave, still in when a's
	// Leave returned, held a.
	inBefore := append(round(6, 12), ln(4, "e", "bcall", "7"), ln(9, "e", "benter", "7", "ok", "/n/e", "0x5"),
		ln(30, "e", "blcall", "7"), ln(31, "e", "bleave", "7", "ok", "0x5"))
	if r := checkBarrierHistory(inBefore, 3); !strings.Contains(strings.Join(r.violations, ";"), "a's Leave returned ok before e") {
		t.Errorf("a Leave that did not wait for a member in before it passed: %v", r.violations)
	}
}
