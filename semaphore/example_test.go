package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/shared"
)

// exampleServers starts one server, shared by the examples of this
// package, at its first call; TestMain stops it.
var exampleServers = sync.OnceValue(testutil.ExampleServers)

// ExampleSemaphore takes two leases of a two-lease semaphore, shows that a
// third is not to be had, does a fenced write and returns the leases.
func ExampleSemaphore() {
	ctx := context.Background()
	c, err := recipes.Connect(context.Background(), exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())

	s, err := semaphore.New(c, "/semaphores/exports", 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	leases, err := s.AcquireN(ctx, 2) // two, all or nothing (Acquire takes one)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("holding:", len(leases))

	_, err = s.TryAcquire(ctx)
	fmt.Println("a third at once:", errors.Is(err, recipes.ErrNotAcquired))
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(tctx) // a timed acquire is a context with a deadline
	fmt.Println("a third within 100ms:", errors.Is(err, context.DeadlineExceeded))

	// A write the server applies only while the lease is still held.
	token, _ := leases[0].Token(ctx) // strictly increases across leases
	_, err = leases[0].Fenced(ctx, recipes.CreateOp("/exports-batch", []byte(fmt.Sprint(token)), 0))
	fmt.Println("fenced write:", err)

	select {
	case <-leases[0].Done():
		fmt.Println("the lease may be gone: stop working")
	default:
		fmt.Println("lease held")
	}
	fmt.Println("returned:", semaphore.ReleaseAll(ctx, leases))
	// Output:
	// holding: 2
	// a third at once: true
	// a third within 100ms: true
	// fenced write: <nil>
	// lease held
	// returned: <nil>
}

// ExampleSemaphore_Acquire bounds the number of workers doing something at
// once: eight goroutines (they could be in as many processes), never more
// than three at work.
func ExampleSemaphore_Acquire() {
	ctx := context.Background()
	c, err := recipes.Connect(context.Background(), exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())

	s, err := semaphore.New(c, "/semaphores/crawlers", 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	var (
		busy, most atomic.Int32
		wg         sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease, err := s.Acquire(ctx) // one lease
			if err != nil {
				fmt.Println(err)
				return
			}
			defer lease.Release(ctx) // Close returns the lease, from any goroutine

			n := busy.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(10 * time.Millisecond) // the work
			busy.Add(-1)
		}()
	}
	wg.Wait()
	fmt.Println("at most 3 at work:", most.Load() <= 3)
	// Output:
	// at most 3 at work: true
}

// ExampleNewWithCount takes the semaphore's maximum from a shared.Count,
// which any process can change: here from 1 to 2.
func ExampleNewWithCount() {
	ctx := context.Background()
	c, err := recipes.Connect(context.Background(), exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())

	// The node holds Curator's format: 4 bytes, big-endian. The seed is
	// written only if the node does not exist yet.
	count, err := shared.NewCount(c, "/config/report-slots", 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := count.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer count.Close(ctx)
	s, err := semaphore.NewWithCount(c, "/semaphores/reports", count)
	if err != nil {
		fmt.Println(err)
		return
	}
	first, err := s.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = s.TryAcquire(ctx)
	fmt.Println("max", s.MaxLeases(), "- a second lease:", errors.Is(err, recipes.ErrNotAcquired))

	// CompareAndSet succeeds only from the current version: of several
	// processes raising the count from the same value, one wins.
	prev := count.GetVersioned()
	fmt.Println("raised:", count.CompareAndSet(ctx, prev, prev.Value+1))
	err = count.CompareAndSet(ctx, prev, prev.Value+1) // prev is stale now
	fmt.Println("raised from a stale version:", errors.Is(err, recipes.ErrConflict))

	second, err := s.TryAcquire(ctx)
	fmt.Println("max", s.MaxLeases(), "- a second lease:", err)
	fmt.Println("returned:", semaphore.ReleaseAll(ctx, []*semaphore.Lease{first, second}))
	// Output:
	// max 1 - a second lease: true
	// raised: <nil>
	// raised from a stale version: true
	// max 2 - a second lease: <nil>
	// returned: <nil>
}

// ExampleMutex is a lock with one lease. Unlike mutex.Mutex it is not
// reentrant and has no owner: any goroutine can release it.
func ExampleMutex() {
	ctx := context.Background()
	c, err := recipes.Connect(context.Background(), exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())

	m, err := semaphore.NewMutex(c, "/locks/nightly-job")
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := m.Acquire(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("held:", m.IsHeld(ctx))
	_, err = m.TryAcquire(ctx) // the same goroutine too must wait
	fmt.Println("again:", errors.Is(err, recipes.ErrNotAcquired))

	done := make(chan error)
	go func() { done <- m.Release(ctx) }() // released by another goroutine
	fmt.Println("unlock:", <-done)
	fmt.Println("held:", m.IsHeld(ctx))
	// Output:
	// held: true
	// again: true
	// unlock: <nil>
	// held: false
}

// ExampleV1 shares a semaphore with Java services that still use
// Curator's deprecated InterProcessSemaphore: the leases are its
// _c_<uuid>-lock-<seq> nodes right under the path, and a lease has the
// same Done, Token and Fenced as Semaphore's.
func ExampleV1() {
	ctx := context.Background()
	c, err := recipes.Connect(context.Background(), exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())

	s, err := semaphore.NewV1(c, "/semaphores/legacy-reports", 2) // the Java services' maximum
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := s.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("lease node under the path:", strings.HasPrefix(lease.Node(), "/semaphores/legacy-reports/_c_"))
	token, _ := lease.Token(ctx)
	_, err = lease.Fenced(ctx, recipes.CreateOp("/legacy-reports-run", []byte(fmt.Sprint(token)), 0))
	fmt.Println("fenced write:", err)
	ps, _ := s.Participants(ctx)
	fmt.Println("participants:", len(ps), "holding:", ps[0].Holds)
	fmt.Println("returned:", lease.Release(ctx))
	// Output:
	// lease node under the path: true
	// fenced write: <nil>
	// participants: 1 holding: true
	// returned: <nil>
}
