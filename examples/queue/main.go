// Command queue demonstrates package queue's DistributedQueue (Curator's)
// in lock-safety mode as a job queue: a producer puts jobs, workers, each
// with a ZooKeeper session of its own as separate processes would have,
// consume them; each job is locked while a worker runs it and deleted
// only after it ran. The worker that takes the fifth job crashes in the
// middle of it (its session closes before it acknowledges), and that job
// goes to another worker.
//
// No job may be lost, and a job may run twice only when its first worker
// was told: the verdict checks that every job ran, and that every second
// run is one whose first worker's Ack failed (recipes.ErrLockLost, or its
// client closed) instead of deleting the job silently.
//
// It connects to ZK_SERVERS ("host:port,...") or starts a local ZooKeeper,
// and ends with a verdict line. Run it with "go run ./examples/queue".
package main

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/examples/internal/demo"
	"github.com/zkrecipes/zkrecipes/queue"
)

const (
	base      = "/zkrecipes-examples/queue"
	jobsPath  = base + "/jobs"
	locksPath = base + "/locks"
)

var (
	workers = flag.Int("workers", 3, "workers (each with its own session)")
	jobs    = flag.Int("jobs", 60, "jobs the producer puts")
	crashAt = flag.Int("crash-at", 5, "the job taken (counted over all workers) whose worker crashes in it (0: never)")
)

func main() {
	flag.Parse()
	demo.Main(2*time.Minute, run)
}

func run(ctx context.Context, servers []string) error {
	if *workers < 2 || *jobs < 1 || *crashAt < 0 {
		return fmt.Errorf("-workers must be at least 2, -jobs positive, -crash-at not negative")
	}
	admin, err := demo.Setup(servers, base)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	defer demo.DeleteTree(admin, base)
	demo.Say("a producer puts %d jobs in %s; %d workers consume them in lock-safety mode (locks in %s)", *jobs, jobsPath, *workers, locksPath)

	var (
		mu      sync.Mutex
		runs    = map[string][]string{} // job -> the workers that ran it
		told    = map[string]int{}      // job -> runs whose worker was told it may run again
		taken   int                     // jobs taken, by all workers
		crasher string                  // the worker that crashes
		crashed bool                    // and was told its job may run again
	)
	for i := 1; i <= *workers; i++ {
		name := fmt.Sprintf("worker-%d", i)
		c, err := demo.Connect(servers, 4*time.Second)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		worker := queue.ConsumerFunc(func(ctx context.Context, m *queue.Message) error {
			job := string(m.Data())
			mu.Lock()
			runs[job] = append(runs[job], name)
			taken++
			crash := taken == *crashAt
			if crash {
				crasher = name
			}
			mu.Unlock()
			if crash {
				// A crash in the middle of the job: the session goes,
				// and with it the job's lock.
				demo.Say("%s crashes while it runs %s", name, job)
				_ = c.Close(context.Background())
			}
			if err := m.Ack(ctx); err != nil {
				mu.Lock()
				told[job]++
				crashed = crashed || name == crasher
				mu.Unlock()
				demo.Say("%s is told %s may run again: %v", name, job, err)
			}
			return nil
		})
		q, err := queue.New(c, jobsPath, queue.WithConsumer(worker), queue.WithLockPath(locksPath))
		if err != nil {
			return err
		}
		if err := q.Start(ctx); err != nil {
			return err
		}
		defer q.Close(context.Background())
	}

	producer, err := queue.New(admin, jobsPath)
	if err != nil {
		return err
	}
	start := time.Now()
	for j := 1; j <= *jobs; j++ {
		if err := producer.Put(ctx, fmt.Appendf(nil, "job-%03d", j)); err != nil {
			return err
		}
	}
	for {
		n, err := producer.Len(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		all := len(runs) == *jobs
		mu.Unlock()
		if n == 0 && all {
			break
		}
		if err := demo.Pause(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	elapsed := time.Since(start)

	mu.Lock()
	defer mu.Unlock()
	lost, twice, untold := 0, 0, 0
	for j := 1; j <= *jobs; j++ {
		job := fmt.Sprintf("job-%03d", j)
		switch n := len(runs[job]); {
		case n == 0:
			lost++
		case n > 1:
			twice++
			if told[job] < n-1 {
				untold++
			}
			demo.Say("%s ran %d times, by %v; told: %d", job, n, runs[job], told[job])
		}
	}
	ok := lost == 0 && untold == 0 && (*crashAt == 0 || *crashAt > *jobs || crashed)
	return demo.Verdict(ok, "%d jobs in %v: %d lost, %d ran twice, %d of those without their first worker being told",
		*jobs, elapsed.Round(time.Millisecond), lost, twice, untold)
}
