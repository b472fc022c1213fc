package chaos

// The counter's linearizability model, checked with porcupine (as etcd's
// robustness tests check etcd). This file has no build tag: its tests run
// in `go test ./chaos/` too, fast, and show that the checker accepts a
// correct history and rejects broken ones (a lost update, an unknown
// outcome counted twice, a read of a value never written), including the
// history of a deliberately unfenced counter on a real server.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// Counter operation kinds.
const (
	cInc = 'i' // Increment
	cCAS = 'c' // CompareAndSet(From, From+1)
	cGet = 'g' // Get
)

// Counter outcomes.
const (
	cOK       = 'o' // acknowledged: Pre (the value read, or read by Get) and Post
	cConflict = 'x' // ErrConflict: nothing written; for a CAS, Pre is the value it read
	cUnknown  = 'u' // the write may or may not have been applied (ErrUnknownOutcome, another error, or no return: killed)
)

// cIn is an operation's input; cOut its output.
type cIn struct {
	Kind byte
	From int64 // a CAS's expected value
}

type cOut struct {
	Res       byte
	Pre, Post int64
}

// never is the return time of an operation whose outcome is unknown: its
// write may land at any time after its call.
const never = math.MaxInt64

// counterModel is a counter's sequential specification. An operation of
// unknown outcome may or may not have been applied (two next states).
var counterModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{int64(0)} },
	Step: func(st, in, out any) []any {
		s, i, o := st.(int64), in.(cIn), out.(cOut)
		switch {
		case i.Kind == cGet && o.Res == cOK:
			if s == o.Pre {
				return []any{s}
			}
		case i.Kind == cGet:
			return []any{s}
		case i.Kind == cInc && o.Res == cOK:
			if s == o.Pre && o.Post == s+1 {
				return []any{s + 1}
			}
		case i.Kind == cInc && o.Res == cConflict:
			return []any{s}
		case i.Kind == cInc:
			return []any{s, s + 1}
		case i.Kind == cCAS && o.Res == cOK:
			if s == i.From {
				return []any{i.From + 1}
			}
		case i.Kind == cCAS && o.Res == cConflict && o.Pre != i.From:
			// It read another value: that read is linearized here.
			if s == o.Pre {
				return []any{s}
			}
		case i.Kind == cCAS && o.Res == cConflict:
			// It read the expected value, and another write came
			// between that read and its conditional write: nothing
			// written.
			return []any{s}
		case i.Kind == cCAS:
			if s == i.From {
				return []any{s, s + 1}
			}
			return []any{s}
		}
		return nil
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(cIn), out.(cOut)
		return fmt.Sprintf("%c(from %d) -> %c pre %d post %d", i.Kind, i.From, o.Res, o.Pre, o.Post)
	},
}

// checkCounter checks a counter history for linearizability within
// timeout.
func checkCounter(ops []porcupine.Operation, timeout time.Duration) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(counterModel.ToModel(), ops, timeout)
}

// counterBounds is the final-value invariant: acknowledged increments
// (CASes included) <= final <= those plus the ones of unknown outcome.
func counterBounds(ops []porcupine.Operation) (acked, unknown int64) {
	for _, op := range ops {
		i, o := op.Input.(cIn), op.Output.(cOut)
		if i.Kind == cGet {
			continue
		}
		switch o.Res {
		case cOK:
			acked++
		case cUnknown:
			unknown++
		}
	}
	return acked, unknown
}

// hop builds a history operation.
func hop(client int, call, ret int64, in cIn, out cOut) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

// The checker accepts correct histories, unknown outcomes applied or not,
// and rejects a lost update, an unknown increment counted twice, a stale
// read and a CAS that wins against another value.
func TestCounterModel(t *testing.T) {
	inc := cIn{Kind: cInc}
	get := cIn{Kind: cGet}
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"sequential", []porcupine.Operation{
			hop(0, 0, 1, inc, cOut{cOK, 0, 1}), hop(0, 2, 3, inc, cOut{cOK, 1, 2}),
			hop(1, 4, 5, cIn{cCAS, 2}, cOut{cOK, 2, 3}), hop(1, 6, 7, get, cOut{cOK, 3, 0}),
		}, porcupine.Ok},
		{"concurrent increments in either order", []porcupine.Operation{
			hop(0, 0, 10, inc, cOut{cOK, 1, 2}), hop(1, 1, 9, inc, cOut{cOK, 0, 1}), hop(2, 11, 12, get, cOut{cOK, 2, 0}),
		}, porcupine.Ok},
		{"unknown applied", []porcupine.Operation{
			hop(0, 0, never, inc, cOut{Res: cUnknown}), hop(1, 5, 6, inc, cOut{cOK, 1, 2}), hop(1, 7, 8, get, cOut{cOK, 2, 0}),
		}, porcupine.Ok},
		{"unknown not applied", []porcupine.Operation{
			hop(0, 0, never, inc, cOut{Res: cUnknown}), hop(1, 5, 6, inc, cOut{cOK, 0, 1}), hop(1, 7, 8, get, cOut{cOK, 1, 0}),
		}, porcupine.Ok},
		{"lost update", []porcupine.Operation{
			hop(0, 0, 10, inc, cOut{cOK, 0, 1}), hop(1, 1, 9, inc, cOut{cOK, 0, 1}), hop(2, 11, 12, get, cOut{cOK, 1, 0}),
		}, porcupine.Illegal},
		{"unknown counted twice", []porcupine.Operation{
			hop(0, 0, never, inc, cOut{Res: cUnknown}), hop(1, 5, 6, get, cOut{cOK, 2, 0}),
		}, porcupine.Illegal},
		{"stale read", []porcupine.Operation{
			hop(0, 0, 1, inc, cOut{cOK, 0, 1}), hop(1, 2, 3, get, cOut{cOK, 0, 0}),
		}, porcupine.Illegal},
		{"CAS from another value", []porcupine.Operation{
			hop(0, 0, 1, inc, cOut{cOK, 0, 1}), hop(1, 2, 3, cIn{cCAS, 0}, cOut{cOK, 0, 1}),
		}, porcupine.Illegal},
		{"CAS conflict that read a value never there", []porcupine.Operation{
			hop(0, 0, 1, inc, cOut{cOK, 0, 1}), hop(1, 2, 3, cIn{cCAS, 0}, cOut{cConflict, 5, 0}),
		}, porcupine.Illegal},
	} {
		if got := checkCounter(tc.ops, 10*time.Second); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	acked, unknown := counterBounds([]porcupine.Operation{
		hop(0, 0, 1, inc, cOut{cOK, 0, 1}), hop(0, 2, never, inc, cOut{Res: cUnknown}),
		hop(0, 3, 4, cIn{cCAS, 9}, cOut{cConflict, 1, 0}), hop(0, 5, 6, get, cOut{cOK, 1, 0}),
	})
	if acked != 1 || unknown != 1 {
		t.Errorf("bounds: acked %d unknown %d, want 1 and 1", acked, unknown)
	}
}

// A broken model (increments that do not count) rejects a correct
// history: the check depends on the model, not just on the shape of the
// history.
func TestCounterBrokenModelFails(t *testing.T) {
	broken := counterModel
	broken.Step = func(st, in, out any) []any {
		if in.(cIn).Kind == cInc {
			return counterModel.Step(st, cIn{Kind: cGet}, cOut{Res: cOK, Pre: st.(int64)})
		}
		return counterModel.Step(st, in, out)
	}
	ops := []porcupine.Operation{
		hop(0, 0, 1, cIn{Kind: cInc}, cOut{cOK, 0, 1}), hop(0, 2, 3, cIn{Kind: cGet}, cOut{cOK, 1, 0}),
	}
	if got := checkCounter(ops, 10*time.Second); got != porcupine.Ok {
		t.Fatalf("the real model: %s", got)
	}
	if got := porcupine.CheckOperationsTimeout(broken.ToModel(), ops, 10*time.Second); got != porcupine.Illegal {
		t.Fatalf("the broken model: %s, want Illegal", got)
	}
}

// An unfenced counter on a real server (read, then write without a
// version condition: a lost update when two increment at once) gives a
// history the checker rejects; atomicval.Int64 on the same workload gives
// one it accepts, and the final values tell the same.
func TestCounterUnfencedFailsCheck(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const clients, each = 4, 40
	run := func(path string, inc func(ctx context.Context, c *recipes.Client) (pre int64, err error)) ([]porcupine.Operation, int64) {
		var (
			mu  sync.Mutex
			ops []porcupine.Operation
			wg  sync.WaitGroup
		)
		start := time.Now()
		cs := make([]*recipes.Client, clients)
		for i := range cs {
			c, err := recipes.Connect(ctx, zkc.Servers())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			cs[i] = c
		}
		for i, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					call := int64(time.Since(start))
					pre, err := inc(ctx, c)
					ret := int64(time.Since(start))
					out := cOut{cOK, pre, pre + 1}
					if err != nil {
						out, ret = cOut{Res: cUnknown}, never
					}
					mu.Lock()
					ops = append(ops, hop(i, call, ret, cIn{Kind: cInc}, out))
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		n, err := atomicval.NewInt64(cs[0], path)
		if err != nil {
			t.Fatal(err)
		}
		call := int64(time.Since(start))
		final, err := n.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, hop(clients, call, int64(time.Since(start)), cIn{Kind: cGet}, cOut{Res: cOK, Pre: final}))
		return ops, final
	}

	// The broken variant: Get, then an unconditional Set.
	unfenced, final := run("/unfenced", func(ctx context.Context, c *recipes.Client) (int64, error) {
		data, _, err := c.Get(ctx, "/unfenced")
		var v int64
		switch {
		case errors.Is(err, zk.ErrNoNode):
		case err != nil:
			return 0, err
		case len(data) == 8:
			v = int64(binary.BigEndian.Uint64(data))
		}
		next := binary.BigEndian.AppendUint64(nil, uint64(v+1))
		if _, err := c.Set(ctx, "/unfenced", next, -1); errors.Is(err, zk.ErrNoNode) {
			if _, err := c.Create(ctx, "/unfenced", next, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return 0, err
			}
		} else if err != nil {
			return 0, err
		}
		return v, nil
	})
	acked, unknown := counterBounds(unfenced)
	t.Logf("unfenced: final %d after %d acknowledged increments (%d unknown)", final, acked, unknown)
	if got := checkCounter(unfenced, 30*time.Second); got != porcupine.Illegal {
		t.Errorf("the unfenced counter's history: %s, want Illegal (final %d of %d)", got, final, acked)
	}

	ops, final := run("/fenced", func(ctx context.Context, c *recipes.Client) (int64, error) {
		n, err := atomicval.NewInt64(c, "/fenced")
		if err != nil {
			return 0, err
		}
		res, err := n.Increment(ctx)
		return res.PreValue, err
	})
	acked, unknown = counterBounds(ops)
	if final < acked || final > acked+unknown {
		t.Errorf("Int64: final %d outside [%d, %d]", final, acked, acked+unknown)
	}
	if got := checkCounter(ops, 30*time.Second); got != porcupine.Ok {
		t.Errorf("Int64's history: %s, want Ok", got)
	}
}
