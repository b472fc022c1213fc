// Command barrier demonstrates package barrier and atomicval together in
// a batch job: workers, each with a ZooKeeper session of its own as
// separate processes would have,
//
//   - enter a barrier.DoubleBarrier (Curator's DistributedDoubleBarrier)
//     of -workers members, arriving one after another: nobody enters
//     before the last has arrived;
//   - wait at a barrier.Barrier (Curator's DistributedBarrier), the start
//     gate a coordinator raised, until it lowers it;
//   - take job ids from one counter in blocks (atomicval.CachedInt64,
//     Curator's CachedAtomicLong) and work on them;
//   - leave the double barrier: nobody's Leave returns before every
//     worker has finished.
//
// The verdict checks each of those, that no job id was handed out twice,
// and that nothing of the barriers is left.
//
// It connects to ZK_SERVERS ("host:port,...") or starts a local ZooKeeper,
// and ends with a verdict line. Run it with "go run ./examples/barrier".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/recipes"
)

const (
	base     = "/zkrecipes-examples/barrier"
	gatePath = base + "/start-gate"
	teamPath = base + "/team"
	idsPath  = base + "/job-ids"
)

var (
	workers = flag.Int("workers", 5, "workers (each with its own session)")
	jobs    = flag.Int("jobs", 20, "jobs each worker does")
	block   = flag.Int64("block", 8, "job ids taken from the counter at a time")
)

func main() {
	flag.Parse()
	demo.Main(2*time.Minute, run)
}

// worker is what one worker saw.
type worker struct {
	arrived, entered, started, finished, left time.Time
	ids                                       []int64
}

func run(ctx context.Context, servers []string) error {
	if *workers < 1 || *jobs < 1 || *block < 1 {
		return fmt.Errorf("-workers, -jobs and -block must be positive")
	}
	admin, err := demo.Setup(servers, base)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	defer demo.DeleteTree(admin, base)

	gate, err := barrier.New(admin, gatePath)
	if err != nil {
		return err
	}
	if err := gate.Set(ctx); err != nil {
		return err
	}
	demo.Say("the coordinator raised the start gate %s; %d workers enter the double barrier %s one after another",
		gatePath, *workers, teamPath)

	ws := make([]worker, *workers)
	errs := make(chan error, *workers)
	var wg sync.WaitGroup
	var lowered time.Time
	for i := range ws {
		c, err := demo.Connect(servers, 4*time.Second)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		team, err := barrier.NewDouble(c, teamPath, *workers)
		if err != nil {
			return err
		}
		wait, err := barrier.New(c, gatePath)
		if err != nil {
			return err
		}
		counter, err := atomicval.NewInt64(c, idsPath)
		if err != nil {
			return err
		}
		ids, err := atomicval.NewCachedInt64(counter, *block)
		if err != nil {
			return err
		}
		w := &ws[i]
		name := fmt.Sprintf("worker-%d", i+1)
		w.arrived = time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- work(ctx, name, w, team, wait, ids)
		}()
		if i < len(ws)-1 {
			if err := demo.Pause(ctx, 100*time.Millisecond); err != nil { // arrivals spread out
				return err
			}
		}
	}
	// The coordinator lowers the gate once every worker has entered (the
	// ready node exists).
	if err := waitReady(ctx, admin.Exists); err != nil {
		return err
	}
	lowered = time.Now()
	if err := gate.Remove(ctx); err != nil {
		return err
	}
	demo.Say("every worker entered; the coordinator lowered the start gate")
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		return err
	}

	var lastArrival, lastFinish time.Time
	for _, w := range ws {
		lastArrival = later(lastArrival, w.arrived)
		lastFinish = later(lastFinish, w.finished)
	}
	earlyEnter, earlyStart, earlyLeave, dups := 0, 0, 0, 0
	seen := map[int64]bool{}
	for _, w := range ws {
		if w.entered.Before(lastArrival) {
			earlyEnter++
		}
		if w.started.Before(lowered) {
			earlyStart++
		}
		if w.left.Before(lastFinish) {
			earlyLeave++
		}
		for _, id := range w.ids {
			if seen[id] {
				dups++
			}
			seen[id] = true
		}
	}
	left, _, err := admin.Children(ctx, teamPath)
	if errors.Is(err, recipes.ErrNoNode) {
		left, err = nil, nil
	}
	if err != nil {
		return err
	}
	up, err := gate.IsSet(ctx)
	if err != nil {
		return err
	}
	ok := earlyEnter == 0 && earlyStart == 0 && earlyLeave == 0 && dups == 0 &&
		len(seen) == *workers**jobs && len(left) == 0 && !up
	return demo.Verdict(ok, "%d workers: %d entered before the last arrived, %d started before the gate was lowered, %d left before the last finished; %d job ids, %d handed out twice; %d nodes left under %s, gate up: %v",
		*workers, earlyEnter, earlyStart, earlyLeave, len(seen), dups, len(left), teamPath, up)
}

// work is one worker's run.
func work(ctx context.Context, name string, w *worker, team *barrier.DoubleBarrier, gate *barrier.Barrier, ids *atomicval.CachedInt64) error {
	if err := team.Enter(ctx); err != nil {
		return fmt.Errorf("%s: enter: %w", name, err)
	}
	w.entered = time.Now()
	if err := gate.Wait(ctx); err != nil {
		return fmt.Errorf("%s: gate: %w", name, err)
	}
	w.started = time.Now()
	for range *jobs {
		id, err := ids.Next(ctx)
		if err != nil {
			return fmt.Errorf("%s: job id: %w", name, err)
		}
		w.ids = append(w.ids, id)
	}
	w.finished = time.Now()
	demo.Say("%-8s did jobs %d..%d (in blocks of %d)", name, w.ids[0], w.ids[len(w.ids)-1], *block)
	if err := team.Leave(ctx); err != nil {
		return fmt.Errorf("%s: leave: %w", name, err)
	}
	w.left = time.Now()
	return nil
}

// waitReady waits until the double barrier's ready node exists.
func waitReady(ctx context.Context, exists func(context.Context, string) (bool, *zk.Stat, error)) error {
	for {
		ok, _, err := exists(ctx, teamPath+"/"+barrier.ReadyNode)
		if err != nil || ok {
			return err
		}
		if err := demo.Pause(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
