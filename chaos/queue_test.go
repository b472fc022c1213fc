//go:build chaos

package chaos

// The queue workers (queue.Queue in lock-safety mode): each runs a
// producer, which logs "qput <id>" before each Put and "qputok <id>" or
// "qputerr <id> <error>" after it, and a consumer, which logs "qgot <id>
// <node>" when an item is handed to it, stops at the "hold" stall point
// (where the faults catch it holding the item's lock), acknowledges it and
// logs "qack <id> <node> <ok|lost|err> <Done closed: 0|1>". The check
// (queuecheck_test.go) reads the logs and the items left in the queue.

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
)

const (
	roleQueue     = "queue"
	queuePath     = root + "/queue"
	queueLockPath = root + "/locks/queue" // ephemeral locks: checkLeftovers walks root/locks
)

func init() {
	registerRole(roleQueue, 3, pacing{0, 0, 30 * time.Millisecond, 90 * time.Millisecond}, (*worker).runQueue)
	setupPaths = append(setupPaths, queuePath)
	roleChecks = append(roleChecks, (*harness).checkQueueRole)
}

// runQueue produces and consumes until stopped. With -sabotage, every
// 10th item's consumer deletes its own lock node by hand (a consumer that
// goes on as if it held the item when it does not), waits for another
// consumer to take the item, and logs its ack as ok whatever Ack said.
func (w *worker) runQueue() error {
	consume := w.queueConsumer(func(node string) string { return queueLockPath + "/" + path.Base(node) })
	q, err := queue.New(w.c, queuePath, queue.WithLockPath(queueLockPath), queue.WithConsumer(consume))
	if err != nil {
		return err
	}
	if err := w.retry(2*time.Minute, func() error { return q.Start(w.ctx) }); err != nil {
		if w.ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("start queue: %w", err)
	}
	prod, err := queue.New(w.c, queuePath)
	if err != nil {
		return err
	}
	w.produce("qput", prod.Put, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return q.Close(ctx)
}

// queueConsumer is the queue workers' consumer (see runQueue); lockOf
// names the lock node of an item node, which -sabotage deletes.
func (w *worker) queueConsumer(lockOf func(node string) string) queue.ConsumerFunc {
	return func(ctx context.Context, m *queue.Message) error {
		id := string(m.Data())
		w.log.printf("qgot %s %s", id, m.Node)
		w.stallPoint("hold")
		w.sleep(w.p.holdMin, w.p.holdMax)
		sabotage := w.sabotage && w.seq.Add(1)%10 == 0
		if sabotage {
			if err := w.c.Delete(context.Background(), lockOf(m.Node), -1); err == nil {
				w.sleep(300*time.Millisecond, 300*time.Millisecond)
			}
		}
		actx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := m.Ack(actx)
		cancel()
		done := 0
		if isClosed(m.Done()) && err != nil {
			done = 1 // closed before the ack failed (a successful ack closes it too)
		}
		if err == nil {
			done = 1
		}
		outcome := "ok"
		switch {
		case err == nil || sabotage:
		case errors.Is(err, recipes.ErrLockLost):
			outcome = "lost"
		default:
			outcome = "err"
		}
		w.log.printf("qack %s %s %s %d", id, m.Node, outcome, done)
		if err != nil && !sabotage {
			w.log.printf("qackerr %s %s", id, oneLine(err))
		} else {
			w.op()
		}
		return nil
	}
}

// queueLeft reads what is left queued in dir after a run: how many nodes
// hold each item (decode splits a node's data into its items; a node it
// cannot decode is a violation). A missing dir is empty (a container
// reaped). ok is false, with a violation, when it cannot be read.
func (h *harness) queueLeft(rep *report, what, dir string, decode func([]byte) ([][]byte, error)) (remaining map[string]int, ok bool) {
	remaining = map[string]int{}
	corrupt := map[string]error{}
	err := retryZK(func() error {
		clear(remaining)
		clear(corrupt)
		c, err := dial(context.Background(), h.zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		if err := c.Sync(context.Background(), dir); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		kids, _, err := c.Children(context.Background(), dir)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			data, _, err := c.Get(context.Background(), dir+"/"+k)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			items, err := decode(data)
			if err != nil {
				corrupt[k] = err
				continue
			}
			for _, it := range items {
				remaining[string(it)]++
			}
		}
		return nil
	})
	if err != nil {
		rep.violation("%s: reading the items left: %v", what, err)
		return nil, false
	}
	for k, err := range corrupt {
		rep.violation("%s: item node %s is corrupt: %v", what, k, err)
	}
	return remaining, true
}

// checkQueueRole reads the items left in the queue and checks the
// queue workers' history.
func (h *harness) checkQueueRole(rep *report, logs map[string][]event) {
	remaining, ok := h.queueLeft(rep, "queue", queuePath, queue.Decode)
	if ok {
		checkQueueLog(rep, roleQueue, remaining, logs[roleQueue])
	}
}

// checkQueueLog checks the history of role's queue workers (the lines of
// runQueue's producer and consumer) against the items left queued.
func checkQueueLog(rep *report, role string, remaining map[string]int, evs []event) {
	var lines []qLine
	for _, e := range evs {
		if strings.HasPrefix(e.name, "q") {
			lines = append(lines, qLine{ts: e.ts, src: e.src, name: e.name, args: e.args})
		}
		if e.name == "qputok" || e.name == "qack" && len(e.args) > 2 && e.args[2] == "ok" {
			rep.ops[role] = append(rep.ops[role], e.ts)
		}
	}
	r := checkQueueHistory(lines, remaining)
	for _, v := range r.violations {
		rep.violationOf(role, "%s", v)
	}
	rep.extra = append(rep.extra, fmt.Sprintf("%[1]s-items=%[2]d (delivered %[3]d, acked %[4]d, left %[5]d) %[1]s-duplicates=%[6]d (told %[7]d, killed %[8]d) %[1]s-violations=%[9]d",
		role, r.offered, r.deliveries, r.acked, r.remaining, r.dups, r.dupTold, r.dupKilled, len(r.violations)))
	rep.note("%s: %d items offered, %d more whose Put failed or never returned; %d deliveries, %d acknowledged, %d items left queued; %d nodes delivered again (%d after their consumer was told its hold was gone, %d after it was killed holding it); %d items delivered from two nodes (a Put retried after a lost reply); %d delivered items gone without an acknowledged delivery",
		role, r.offered, r.unsure, r.deliveries, r.acked, r.remaining, r.dups, r.dupTold, r.dupKilled, r.putTwice, r.goneUnsure)
}
