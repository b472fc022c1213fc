//go:build chaos

package chaos

// The counter workers (atomicval.Int64) and their check: every operation
// is logged at its call ("ccall <id> <kind> <from>") and at its return
// ("cret <id> <outcome> <pre> <post>"); the checker rebuilds the history,
// bounds the final value by the acknowledged increments and those of
// unknown outcome, and checks the whole history for linearizability with
// porcupine (see linear_test.go for the model).

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/cenkalti/backoff/v4"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/recipes"
)

const (
	counterOpTimeout = 10 * time.Second // each operation's ctx
	// counterCheckTimeout bounds porcupine; a history it cannot decide in
	// that time is reported as a violation (the check must say yes or no).
	counterCheckTimeout = 3 * time.Minute
)

// counterPolicy: short jittered pauses between optimistic tries, giving
// up after 5 s (a conflict then, which changes nothing).
func counterPolicy() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 2 * time.Millisecond
	b.MaxInterval = 50 * time.Millisecond
	b.MaxElapsedTime = 5 * time.Second
	b.Reset()
	return b
}

// runCounter loops on increments (60%), compare-and-sets from the last
// value it saw to that plus one (20%) and reads (20%). Stall points:
// "hold" after the call is logged (the operation then runs after a pause
// or not at all: killed), "commit" after it returned, before its outcome
// is logged (a kill leaves it unknown).
func (w *worker) runCounter() error {
	n, err := atomicval.NewInt64(w.c, counterPath, atomicval.WithRetryPolicy(counterPolicy))
	if err != nil {
		return err
	}
	var last int64
	for i := 1; w.ctx.Err() == nil; i++ {
		r := w.intN(0, 9)
		kind := byte(cInc)
		switch {
		case r >= 8:
			kind = cGet
		case r >= 6:
			kind = cCAS
		}
		id := w.seq.Add(1)
		w.log.printf("ccall %d %c %d", id, kind, last)
		w.stallPoint("hold")
		ctx, cancel := context.WithTimeout(context.Background(), counterOpTimeout)
		var res atomicval.Result[int64]
		switch {
		case kind == cInc && w.sabotage && i%10 == 0:
			// Unfenced: read, then write whatever the version.
			var v int64
			if v, err = n.Get(ctx); err == nil {
				err = n.Set(ctx, v+1)
				res = atomicval.Result[int64]{Succeeded: err == nil, PreValue: v, PostValue: v + 1}
			}
		case kind == cInc:
			res, err = n.Increment(ctx)
		case kind == cCAS:
			res, err = n.CompareAndSet(ctx, last, last+1)
		default:
			var v int64
			v, err = n.Get(ctx)
			res.PreValue = v
		}
		cancel()
		w.stallPoint("commit")
		switch {
		case err == nil:
			w.log.printf("cret %d %c %d %d", id, cOK, res.PreValue, res.PostValue)
			last = res.PostValue
			if kind == cGet {
				last = res.PreValue
			}
			w.op()
		case errors.Is(err, recipes.ErrConflict):
			w.log.printf("cret %d %c %d 0 %s", id, cConflict, res.PreValue, oneLine(err))
			if kind == cCAS {
				last = res.PreValue
			}
			w.op()
		default:
			w.log.printf("cret %d %c 0 0 %s", id, cUnknown, oneLine(err))
			if !errors.Is(err, recipes.ErrUnknownOutcome) {
				_ = w.c.WaitConnected(w.ctx)
			}
		}
		w.sleep(w.p.gapMin, w.p.gapMax)
	}
	return nil
}

// counterStats counts a history's operations by outcome.
type counterStats struct {
	counts       map[byte]int
	killed, errs int
	completed    []int64 // return times of the operations that completed (ok or conflict)
}

// counterHistory rebuilds the counters' history from their logs; an
// operation with no return (its worker was killed) or an unknown outcome
// returns never.
func counterHistory(evs []event) ([]porcupine.Operation, counterStats, []string) {
	type pending struct {
		call int64
		in   cIn
		src  string
	}
	calls := map[string]pending{} // src/id
	var ops []porcupine.Operation
	var bad []string
	clients := map[string]int{}
	client := func(src string) int {
		if c, ok := clients[src]; ok {
			return c
		}
		clients[src] = len(clients)
		return clients[src]
	}
	st := counterStats{counts: map[byte]int{}}
	for _, e := range evs {
		switch e.name {
		case "ccall":
			if len(e.args) < 3 {
				continue
			}
			calls[e.src+"/"+e.args[0]] = pending{e.ts, cIn{Kind: e.args[1][0], From: atoi(e.args[2])}, e.src}
		case "cret":
			if len(e.args) < 4 {
				continue
			}
			key := e.src + "/" + e.args[0]
			p, ok := calls[key]
			if !ok {
				bad = append(bad, fmt.Sprintf("counter: %s returned operation %s never called", e.src, e.args[0]))
				continue
			}
			delete(calls, key)
			out := cOut{Res: e.args[1][0], Pre: atoi(e.args[2]), Post: atoi(e.args[3])}
			ret := e.ts
			if out.Res == cUnknown {
				ret = never
				if p.in.Kind == cGet {
					st.errs++
					continue // a read that failed tells nothing
				}
			} else {
				st.completed = append(st.completed, e.ts)
			}
			st.counts[out.Res]++
			ops = append(ops, porcupine.Operation{ClientId: client(p.src), Input: p.in, Call: p.call, Output: out, Return: ret})
		}
	}
	for _, p := range calls { // no return: the worker was killed
		if p.in.Kind == cGet {
			continue
		}
		st.killed++
		ops = append(ops, porcupine.Operation{ClientId: client(p.src), Input: p.in, Call: p.call, Output: cOut{Res: cUnknown}, Return: never})
	}
	return ops, st, bad
}

// checkCounterRole rebuilds the counters' history from the logs, reads
// the final value, and checks the bounds and linearizability.
func (h *harness) checkCounterRole(rep *report, evs []event) {
	ops, st, bad := counterHistory(evs)
	for _, b := range bad {
		rep.violation("%s", b)
	}
	rep.ops[roleCounter] = append(rep.ops[roleCounter], st.completed...)
	counts, killed, errs := st.counts, st.killed, st.errs
	nclients := 0
	for _, op := range ops {
		nclients = max(nclients, op.ClientId+1)
	}
	var final int64
	call := time.Now().UnixNano()
	err := retryZK(func() error {
		c, err := dial(context.Background(), h.zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		if err := c.Sync(context.Background(), counterPath); err != nil {
			return err
		}
		n, err := atomicval.NewInt64(c, counterPath)
		if err != nil {
			return err
		}
		final, err = n.Get(context.Background())
		return err
	})
	if err != nil {
		rep.violation("counter: reading the final value: %v", err)
		return
	}
	ops = append(ops, porcupine.Operation{ClientId: nclients, Input: cIn{Kind: cGet}, Call: call,
		Output: cOut{Res: cOK, Pre: final}, Return: time.Now().UnixNano()})
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })

	acked, unknown := counterBounds(ops)
	if final < acked {
		rep.violation("counter: final value %d below the %d acknowledged increments (an acknowledged increment lost)", final, acked)
	}
	if final > acked+unknown {
		rep.violation("counter: final value %d above the %d acknowledged increments plus %d of unknown outcome (an increment applied twice, or one never made)", final, acked, unknown)
	}
	began := time.Now()
	res := checkCounter(ops, counterCheckTimeout)
	took := time.Since(began)
	if res != porcupine.Ok {
		rep.violation("counter: the history of %d operations is %s for linearizability (porcupine, %v)", len(ops), res, took.Round(time.Millisecond))
	}
	rep.counter = fmt.Sprintf("counter=%d (acked %d + %d of %d unknown) linearizable=%s", final, acked, final-acked, unknown, res)
	rep.note("counter: %d operations (%d ok, %d conflict, %d unknown of which %d killed before returning, %d failed reads), final %d in [%d, %d]; porcupine: %s in %v",
		len(ops), counts[cOK], counts[cConflict], counts[cUnknown]+killed, killed, errs, final, acked, acked+unknown, res, took.Round(time.Millisecond))
}

// The counter's path, made by TestChaos with 8 zero bytes.
const counterPath = root + "/counter"
