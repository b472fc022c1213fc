// Command semaphore demonstrates the counting semaphore of package
// semaphore as a rate limiter: a pool of workers, each with a ZooKeeper
// session of its own as separate processes would have, calls a fragile
// "service" that must never see more than a few calls at once.
//
// The limit lives in ZooKeeper, in a shared.Count, so an operator can
// change it while the workers run: it starts at -max and is raised by one
// halfway through, and a waiting worker gets in at once. The service
// counts the calls in flight and remembers the most it saw; the verdict
// says whether that ever went over the limit.
//
// With -v1 the workers use semaphore.V1, Curator's deprecated
// InterProcessSemaphore, as Java services that still run it do: the same
// limit, another layout (see package semaphore).
//
// It connects to ZK_SERVERS ("host:port,...") or starts a local ZooKeeper,
// runs for -duration and ends with a verdict line. Run it with
// "go run ./examples/semaphore".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/shared"
)

const (
	base      = "/zkrecipes-examples/semaphore"
	semPath   = base + "/service"
	limitPath = base + "/service-limit"
)

var (
	duration = flag.Duration("duration", 6*time.Second, "how long the workers run")
	workers  = flag.Int("workers", 6, "workers (each with its own session)")
	maxCalls = flag.Int("max", 2, "calls allowed at once at the start (raised by one halfway)")
	v1       = flag.Bool("v1", false, "use semaphore.V1 (Curator's InterProcessSemaphore) instead of semaphore.Semaphore")
)

// acquirer is what the workers need of a semaphore: Semaphore and V1 both
// hand out the same Lease.
type acquirer interface {
	Acquire(ctx context.Context) (*semaphore.Lease, error)
}

// newSemaphore makes a worker's semaphore, of the kind -v1 asks for.
func newSemaphore(c *recipes.Client, count *shared.Count, name string) (acquirer, error) {
	if *v1 {
		return semaphore.NewV1WithCount(c, semPath, count, semaphore.WithData([]byte(name)))
	}
	return semaphore.NewWithCount(c, semPath, count, semaphore.WithData([]byte(name)))
}

func main() {
	flag.Parse()
	demo.Main(*duration+time.Minute, run)
}

// service is the fragile thing the semaphore protects.
type service struct {
	inFlight atomic.Int64
	calls    atomic.Int64
	limit    atomic.Int64 // what the operator allows now
	peak     atomic.Int64
	over     atomic.Int64 // calls that found more in flight than allowed
}

func (s *service) call(name string) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	s.calls.Add(1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	limit := s.limit.Load()
	bar := strings.Repeat("#", int(n)) + strings.Repeat(".", max(int(limit-n), 0))
	if n > limit {
		s.over.Add(1)
		demo.Say("%-9s calls the service  [%s] %d in flight: OVER the limit of %d", name, bar, n, limit)
	} else {
		demo.Say("%-9s calls the service  [%s] %d/%d in flight", name, bar, n, limit)
	}
	time.Sleep(time.Duration(150+rand.IntN(200)) * time.Millisecond) // the call's work
}

func run(ctx context.Context, servers []string) error {
	if *workers < 1 || *maxCalls < 1 {
		return fmt.Errorf("-workers and -max must be positive")
	}
	admin, err := demo.Setup(servers, base)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	defer demo.DeleteTree(admin, base)

	svc := &service{}
	svc.limit.Store(int64(*maxCalls))
	limit, err := shared.NewCount(admin, limitPath, *maxCalls)
	if err != nil {
		return err
	}
	if err := limit.Start(ctx); err != nil {
		return err
	}
	defer limit.Close(ctx)
	demo.Say("%d workers call a service through the semaphore %s; the limit (%s) is %d", *workers, semPath, limitPath, *maxCalls)

	runCtx, stop := context.WithTimeout(ctx, *duration)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, *workers+1)
	for i := 1; i <= *workers; i++ {
		name := fmt.Sprintf("worker-%d", i)
		c, err := demo.Connect(servers, 4*time.Second)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		count, err := shared.NewCount(c, limitPath, *maxCalls)
		if err != nil {
			return err
		}
		if err := count.Start(ctx); err != nil {
			return err
		}
		defer count.Close(ctx)
		sem, err := newSemaphore(c, count, name)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				lease, err := sem.Acquire(runCtx)
				if err != nil {
					if runCtx.Err() == nil {
						errs <- fmt.Errorf("%s: %w", name, err)
						stop()
					}
					return
				}
				svc.call(name)
				if err := lease.Release(context.Background()); err != nil {
					errs <- fmt.Errorf("%s: %w", name, err)
					stop()
					return
				}
				time.Sleep(20 * time.Millisecond) // demo pacing: think a little before the next call
			}
		}()
	}

	// Halfway, the operator raises the limit. The service is told first:
	// no worker can get in under the new limit before the count changes.
	raised := *maxCalls + 1
	if err := demo.Pause(runCtx, *duration/2); err == nil {
		svc.limit.Store(int64(raised))
		if err := limit.Set(runCtx, raised); err != nil && runCtx.Err() == nil {
			errs <- fmt.Errorf("raise the limit: %w", err)
			stop()
		} else {
			demo.Say("operator: raises the limit to %d", raised)
		}
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
	ok := svc.over.Load() == 0 && svc.calls.Load() > 0 && svc.peak.Load() <= int64(raised)
	return demo.Verdict(ok, "%d calls by %d workers under a limit of %d, then %d: %d calls found it exceeded; at most %d at once",
		svc.calls.Load(), *workers, *maxCalls, raised, svc.over.Load(), svc.peak.Load())
}
