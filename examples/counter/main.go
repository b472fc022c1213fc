// Command counter demonstrates the atomic long of package atomicval
// (Curator's DistributedAtomicLong) as an id allocator: workers, each
// with a ZooKeeper session of its own as separate processes would have,
// take order numbers from one counter at the same time. Updaters that lose
// the optimistic tries are promoted to a lock (Curator's PromotedToLock)
// and take turns there.
//
// Every number must be handed out once: the verdict checks that the
// numbers the workers got are exactly 1..N, with no duplicate and no gap,
// and that the counter reads N.
//
// It connects to ZK_SERVERS ("host:port,...") or starts a local ZooKeeper,
// and ends with a verdict line. Run it with "go run ./examples/counter".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/recipes"
)

const (
	base     = "/zkrecipes-examples/counter"
	numPath  = base + "/order-number"
	lockPath = base + "/order-number-lock"
)

var (
	workers = flag.Int("workers", 6, "workers (each with its own session)")
	each    = flag.Int("each", 25, "order numbers each worker takes")
	tries   = flag.Int("tries", 3, "optimistic tries before an increment is promoted to the lock")
)

func main() {
	flag.Parse()
	demo.Main(2*time.Minute, run)
}

// optimistic is the policy of the optimistic tries: -tries tries, a few
// milliseconds apart.
func optimistic() backoff.BackOff {
	return backoff.WithMaxRetries(backoff.NewConstantBackOff(2*time.Millisecond), uint64(max(*tries-1, 0)))
}

func run(ctx context.Context, servers []string) error {
	if *workers < 1 || *each < 1 || *tries < 1 {
		return fmt.Errorf("-workers, -each and -tries must be positive")
	}
	admin, err := demo.Setup(servers, base)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	defer demo.DeleteTree(admin, base)
	demo.Say("%d workers take %d order numbers each from %s (%d optimistic tries, then the lock %s)",
		*workers, *each, numPath, *tries, lockPath)

	var (
		wg                          sync.WaitGroup
		mu                          sync.Mutex
		got                         []int64
		optTries, promTries, failed int
	)
	errs := make(chan error, *workers)
	for i := 1; i <= *workers; i++ {
		name := fmt.Sprintf("worker-%d", i)
		c, err := demo.Connect(servers, 4*time.Second)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		orders, err := atomicval.NewInt64(c, numPath, atomicval.WithRetryPolicy(optimistic),
			atomicval.WithPromotedToLock(atomicval.PromotedToLock{Path: lockPath, Timeout: 10 * time.Second}))
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < *each; {
				res, err := orders.Increment(ctx)
				mu.Lock()
				optTries += res.Stats.OptimisticTries
				promTries += res.Stats.PromotedTries
				if err == nil {
					got = append(got, res.PostValue)
				} else {
					failed++
				}
				mu.Unlock()
				switch {
				case err == nil:
					n++
					if res.Stats.PromotedTries > 0 && n%5 == 0 {
						demo.Say("%-9s order %4d (promoted: %d optimistic tries lost, then %d under the lock)",
							name, res.PostValue, res.Stats.OptimisticTries, res.Stats.PromotedTries)
					}
				case errors.Is(err, recipes.ErrConflict):
					// Nothing was taken: ask again.
				default:
					errs <- fmt.Errorf("%s: %w", name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		return err
	}

	reader, err := atomicval.NewInt64(admin, numPath)
	if err != nil {
		return err
	}
	final, err := reader.Get(ctx)
	if err != nil {
		return err
	}
	// A compare-and-set from a stale value changes nothing, and says so.
	res, err := reader.CompareAndSet(ctx, 0, 1)
	stale := errors.Is(err, recipes.ErrConflict) && !res.Succeeded && res.PreValue == final
	demo.Say("compare-and-set from 0: %v", err)

	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	want := int64(*workers * *each)
	dups, gaps := 0, 0
	for i, v := range got {
		if i > 0 && v == got[i-1] {
			dups++
		}
	}
	seen := map[int64]bool{}
	for _, v := range got {
		seen[v] = true
	}
	for v := int64(1); v <= want; v++ {
		if !seen[v] {
			gaps++
		}
	}
	ok := int64(len(got)) == want && dups == 0 && gaps == 0 && final == want && stale
	return demo.Verdict(ok, "%d order numbers by %d workers: %d duplicates, %d gaps, counter at %d; %d optimistic and %d promoted tries, %d calls gave up and took nothing",
		len(got), *workers, dups, gaps, final, optTries, promTries, failed)
}
