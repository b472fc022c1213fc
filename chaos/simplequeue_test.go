//go:build chaos

package chaos

// The simple-queue workers (queue.SimpleQueue, Curator's
// SimpleDistributedQueue: at-most-once, an item is deleted before Take
// returns it). The first worker produces: it logs "sqoffer <id>" before
// each Offer and "sqofferok <id>" or "sqoffererr <id> <error>" after it,
// stopping at the "hold" stall point in between for one stall in three
// asked for (a kill there leaves an offer whose outcome is unknown). The
// others consume: they log "sqtake" before each Take and "sqgot <id>" or
// "sqtakeerr <error>" after it, stopping at the "hold" stall point in
// between (a kill there loses the item taken: the loss at-most-once
// allows). The queue's directory is
// left to Offer, which makes it as a container the server reaps when it
// is empty (CURATOR-308). The check (simplequeuecheck_test.go) reads the
// logs and the items left.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/queue"
)

const (
	roleSQueue = "squeue"
	squeuePath = root + "/squeue"
)

func init() {
	registerRole(roleSQueue, 3, pacing{0, 0, 60 * time.Millisecond, 140 * time.Millisecond}, (*worker).runSQueue)
	roleChecks = append(roleChecks, (*harness).checkSQueueRole)
}

// runSQueue produces (the first worker) or consumes (the others) until
// stopped. With -sabotage, a consumer offers every 10th item it takes
// again, unlogged (an item delivered twice).
func (w *worker) runSQueue() error {
	q, err := queue.NewSimple(w.c, squeuePath)
	if err != nil {
		return err
	}
	if w.name == roleSQueue+"-1" {
		w.produce("sqoffer", q.Offer, func() { w.stallThird("hold") })
		return nil
	}
	for w.ctx.Err() == nil {
		w.log.printf("sqtake")
		data, err := q.Take(w.ctx)
		if err != nil {
			w.log.printf("sqtakeerr %s", oneLine(err))
			if w.ctx.Err() == nil {
				w.sleep(50*time.Millisecond, 100*time.Millisecond)
			}
			continue
		}
		w.stallPoint("hold")
		if w.sabotage && w.seq.Add(1)%10 == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = q.Offer(ctx, data)
			cancel()
		}
		w.log.printf("sqgot %s", data)
		w.op()
		w.sleep(w.p.gapMin/3, w.p.gapMax/3)
	}
	return nil
}

// stallThird is stallPoint for the stalls asked for with an id divisible
// by 3 only. The producer reaches its stall point as soon as its Offer
// returns, before a consumer has taken the item, so it would win every
// stall: this leaves two in three to the consumers.
func (w *worker) stallThird(mode string) bool {
	w.stallMu.Lock()
	id := w.stallID
	w.stallMu.Unlock()
	if n, err := strconv.Atoi(id); err != nil || n%3 != 0 {
		return false
	}
	return w.stallPoint(mode)
}

// checkSQueueRole reads the items left in the simple queue and checks the
// workers' history.
func (h *harness) checkSQueueRole(rep *report, logs map[string][]event) {
	remaining, ok := h.queueLeft(rep, "squeue", squeuePath, func(data []byte) ([][]byte, error) { return [][]byte{data}, nil })
	if !ok {
		return
	}
	var lines []qLine
	for _, e := range logs[roleSQueue] {
		if strings.HasPrefix(e.name, "sq") || e.name == "state" || e.name == "start" {
			lines = append(lines, qLine{ts: e.ts, src: e.src, name: e.name, args: e.args})
		}
		if e.name == "sqofferok" || e.name == "sqgot" {
			rep.ops[roleSQueue] = append(rep.ops[roleSQueue], e.ts)
		}
	}
	r := checkSQueueHistory(lines, remaining)
	for _, v := range r.violations {
		rep.violationOf("squeue", "%s", v)
	}
	rep.extra = append(rep.extra, fmt.Sprintf("squeue-items=%d (taken %d, left %d, lost to a consumer killed or failing mid-take %d) squeue-unsure=%d squeue-duplicates=%d squeue-violations=%d",
		r.offered, r.taken, r.remaining, r.lostAllowed, r.unsure, r.dups, len(r.violations)))
	rep.note("squeue: %d items offered (Offer returned nil), %d more whose Offer failed or never returned (%d of those were taken or are queued); %d takes, %d items left queued; %d acknowledged items lost, each to a Take that deleted it and never returned it (at-most-once: %d takes were killed in flight or before logging, %d failed, %d lost their connection meanwhile; %d such takes lost nothing); %d items delivered twice after a connection loss during their Offer (a create retried: offers are at-least-once)",
		r.offered, r.unsure, r.unsureSeen, r.taken, r.remaining, r.lostAllowed, r.creditKilled, r.creditFailed, r.creditConn, r.creditsLeft, r.dups)
}
