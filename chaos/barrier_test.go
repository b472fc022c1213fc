//go:build chaos

package chaos

// The double-barrier workers (barrier.DoubleBarrier): barrierWorkers
// processes, one session each, meet in rounds of barrierRound, each round
// on a fresh path <barrierPath>/r<n> (n from the clock, the same for
// every worker on the machine), memberQty barrierQty. A worker logs
// "bcall <n>" before Enter and "benter <n> ok <node> <session>" or
// "benter <n> err ..." after it; then stops at the "hold" stall point
// (where the faults catch it inside the barrier); then "blcall <n>" before
// Leave and "bleave <n> ok|err <session> ..." after it. After a
// failed Enter (its ctx ends with the round, or the session went) it
// checks that no member node of its session is left in the round
// ("bdropped <n>", or a violation). The check (barriercheck_test.go)
// reads the logs.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/barrier"
)

const (
	roleBarrier    = "barrier"
	barrierPath    = root + "/locks/barrier" // ephemeral members: checkLeftovers walks root/locks
	barrierWorkers = 4
	barrierQty     = 3
	barrierRound   = 1500 * time.Millisecond // a new round starts every barrierRound
	barrierEnterBy = time.Second             // Enter's ctx ends this long after the round starts
	barrierLeaveBy = 6 * time.Second         // Leave's ctx (a member paused past its session holds the others until it expires)
)

func init() {
	// Holds of 0-30 ms: members leave at different times, so a Leave
	// that did not wait for the others would return before a member
	// that entered before it began had called Leave (the check).
	registerRole(roleBarrier, barrierWorkers, pacing{0, 30 * time.Millisecond, 0, 50 * time.Millisecond}, (*worker).runBarrier)
	roleChecks = append(roleChecks, (*harness).checkBarrierRole)
}

// runBarrier enters and leaves one round after another until stopped.
func (w *worker) runBarrier() error {
	last := int64(-1)
	for w.ctx.Err() == nil {
		// The next round that starts after now (never the same twice).
		n := time.Now().UnixNano()/int64(barrierRound) + 1
		if n <= last {
			n = last + 1
		}
		last = n
		start := time.Unix(0, n*int64(barrierRound))
		w.sleep(time.Until(start), time.Until(start))
		w.sleep(0, w.p.gapMax) // arrive in any order
		if w.ctx.Err() != nil {
			break
		}
		w.barrierRound(n, start)
	}
	return nil
}

func (w *worker) barrierRound(n int64, start time.Time) {
	dir := fmt.Sprintf("%s/r%d", barrierPath, n)
	d, err := barrier.NewDouble(w.c, dir, barrierQty)
	if err != nil {
		w.log.printf("violation barrier: NewDouble: %v", err)
		return
	}
	w.log.printf("bcall %d", n)
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(barrierEnterBy))
	err = d.Enter(ctx)
	cancel()
	if err != nil {
		w.log.printf("benter %d err %s", n, oneLine(err))
		w.checkDropped(n, dir)
		return
	}
	w.log.printf("benter %d ok %s %#x", n, d.Node(), w.c.SessionID())
	w.op()
	w.stallPoint("hold")
	w.sleep(w.p.holdMin, w.p.holdMax)
	w.log.printf("blcall %d", n)
	ctx, cancel = context.WithTimeout(context.Background(), barrierLeaveBy)
	err = d.Leave(ctx)
	cancel()
	if err != nil {
		w.log.printf("bleave %d err %#x %s", n, w.c.SessionID(), oneLine(err))
		return
	}
	w.log.printf("bleave %d ok %#x", n, w.c.SessionID())
	w.op()
}

// checkDropped waits until no member node of this session is left in the
// round after a failed Enter (the barrier deletes its node before Enter
// returns, or, when the connection is down, as soon as it can).
func (w *worker) checkDropped(n int64, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ours []string
	for {
		if err := w.c.WaitConnected(ctx); err != nil {
			w.log.printf("bdropunknown %d %s", n, oneLine(err))
			return
		}
		sid := w.c.SessionID()
		ours = ours[:0]
		kids, _, err := w.c.Children(ctx, dir)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			for _, k := range kids {
				ok, st, xerr := w.c.Exists(ctx, dir+"/"+k)
				if xerr != nil {
					err = xerr
					break
				}
				if ok && st.EphemeralOwner == sid {
					ours = append(ours, k)
				}
			}
			if err == nil || errors.Is(err, zk.ErrNoNode) {
				if len(ours) == 0 {
					w.log.printf("bdropped %d", n)
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			if len(ours) > 0 {
				w.log.printf("violation barrier: round %d: member node(s) %v of this session (%#x) still there 10s after Enter failed", n, ours, sid)
			} else {
				w.log.printf("bdropunknown %d %v", n, err)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkBarrierRole checks the barrier workers' history.
func (h *harness) checkBarrierRole(rep *report, logs map[string][]event) {
	var lines []bLine
	for _, e := range logs[roleBarrier] {
		switch e.name {
		case "bcall", "benter", "blcall", "bleave", "bdropped":
			lines = append(lines, bLine{ts: e.ts, src: e.src, name: e.name, args: e.args})
		}
		if (e.name == "benter" || e.name == "bleave") && len(e.args) > 1 && e.args[1] == "ok" {
			rep.ops[roleBarrier] = append(rep.ops[roleBarrier], e.ts)
		}
	}
	r := checkBarrierHistory(lines, barrierQty)
	for _, v := range r.violations {
		rep.violationOf("barrier", "%s", v)
	}
	rep.extra = append(rep.extra, fmt.Sprintf("barrier-rounds=%d (full %d) barrier-enters=%d/%d barrier-leaves=%d/%d barrier-timeouts=%d barrier-violations=%d",
		r.rounds, r.full, r.entered, r.enterCalls, r.left, r.leaveCalls, r.enterFailed, len(r.violations)))
	rep.note("barrier: %d rounds (%d in which every member that called Enter entered; %d workers), %d of %d Enter calls returned ok and %d failed (%d checked to have left no node), %d of %d Leave calls returned ok; fewest members called in when an Enter returned: %d (memberQty %d)",
		r.rounds, r.full, barrierWorkers, r.entered, r.enterCalls, r.enterFailed, r.dropped, r.left, r.leaveCalls, r.minPresent, barrierQty)
}
