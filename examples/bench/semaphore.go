package main

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/metric"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// ----------------------------------------------------------------- semaphore

// semMaxLeases is the maximum of the semaphore the semaphore scenario
// measures. Uncontended, the maximum does not change the work: the one
// lease node is always within it.
const semMaxLeases = 4

// semaphoreScenario is the uncontended semaphore scenario: one session
// runs Acquire+Close on one semaphore path and, in alternating chunks
// on the same session, Lock+Unlock on one mutex path, -ops times each per
// round. The figure is the semaphore's rate as a ratio to the mutex's
// measured in the same run, with the requests per acquire+release from
// Client.Stats: the internal mutex (create, children, delete) and the
// lease (create, children with a watch, delete), 6 where the mutex needs
// 3, so a ratio near 0.5 is what round trips alone predict. No target.
func (b *bench) semaphoreScenario(ctx context.Context) (string, error) {
	f := b.f
	fmt.Printf("\n== semaphore: Acquire+Close on one path (max %d), one session, %d ops per side per round, in alternating chunks of %d\n",
		semMaxLeases, f.ops, f.chunk)
	fmt.Println("   reference: the mutex's Lock+Unlock on the same session (uncontended)")

	c, err := recipes.Connect(context.Background(), b.servers, recipes.WithSessionTimeout(f.sessionTimeout))
	if err != nil {
		return "", err
	}
	defer c.Close(context.Background())
	s, err := semaphore.New(c, b.root+"/semaphore/sem", semMaxLeases, semaphore.WithData(lockData))
	if err != nil {
		return "", err
	}
	m, err := mutex.New(c, b.root+"/semaphore/mutex", mutex.WithData(lockData))
	if err != nil {
		return "", err
	}
	semLoop := func(n int) error {
		for range n {
			lease, err := s.Acquire(ctx)
			if err != nil {
				return err
			}
			if err := lease.Release(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	mutexLoop := func(n int) error {
		for range n {
			if _, err := m.Acquire(ctx); err != nil {
				return err
			}
			if err := m.Release(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	if f.warmup > 0 {
		if err := semLoop(f.warmup); err != nil {
			return "", fmt.Errorf("semaphore: %w", err)
		}
		if err := mutexLoop(f.warmup); err != nil {
			return "", fmt.Errorf("mutex: %w", err)
		}
	}

	var (
		sems, mutexes, ratios []float64
		semReq, mutexReq      metric.RequestCounts
		semOps, mutexOps      int
		semPkts, mutexPkts    pktCount
		semCPU, mutexCPU      time.Duration
	)
	tw := table("round", "semaphore ops/s", "mutex ops/s", "semaphore/mutex")
	for r := range f.rounds {
		var semTime, mutexTime time.Duration
		measure := func(loop func(int) error, n int, took, cpu *time.Duration, req *metric.RequestCounts, ops *int, pk *pktCount) error {
			before, p0 := (*engine.Client)(c).Stats(), b.packets()
			start, cpu0 := time.Now(), cpuTime()
			if err := loop(n); err != nil {
				return err
			}
			*took += time.Since(start)
			*cpu += cpuTime() - cpu0
			*req = addStats(*req, (*engine.Client)(c).Stats().Sub(before))
			*ops += n
			pk.add(p0, b.packets(), n)
			return nil
		}
		sides := []func(n int) error{
			func(n int) error {
				if err := measure(semLoop, n, &semTime, &semCPU, &semReq, &semOps, &semPkts); err != nil {
					return fmt.Errorf("semaphore: %w", err)
				}
				return nil
			},
			func(n int) error {
				if err := measure(mutexLoop, n, &mutexTime, &mutexCPU, &mutexReq, &mutexOps, &mutexPkts); err != nil {
					return fmt.Errorf("mutex: %w", err)
				}
				return nil
			},
		}
		for done, k := 0, 0; done < f.ops; k++ {
			n := min(f.chunk, f.ops-done)
			first := (r + k) % 2
			for _, side := range []func(int) error{sides[first], sides[1-first]} {
				if err := ctx.Err(); err != nil {
					return "", err
				}
				if err := side(n); err != nil {
					return "", err
				}
			}
			done += n
		}
		sr, mr := float64(f.ops)/semTime.Seconds(), float64(f.ops)/mutexTime.Seconds()
		sems, mutexes, ratios = append(sems, sr), append(mutexes, mr), append(ratios, sr/mr)
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.3f\n", r+1, sr, mr, sr/mr)
	}
	ratio := median(ratios)
	fmt.Fprintf(tw, "median\t%.0f\t%.0f\t%.3f\t(no target; 3/6 requests predict about 0.5)\n", median(sems), median(mutexes), ratio)
	tw.Flush()
	per, mper := perOp(semReq, semOps), perOp(mutexReq, mutexOps)
	fmt.Printf("semaphore, requests per Acquire+Close: %s\n", per)
	fmt.Printf("mutex, requests per Lock+Unlock: %s\n", mper)
	fmt.Printf("server packets received per op (pings included): semaphore %s, mutex %s\n", semPkts, mutexPkts)
	total := float64(f.rounds * f.ops)
	fmt.Printf("client CPU per op (this process, user+system): semaphore %.0fµs, mutex %.0fµs\n",
		float64(semCPU.Microseconds())/total, float64(mutexCPU.Microseconds())/total)

	line := fmt.Sprintf("RESULT scenario=semaphore sem_ops=%.1f mutex_ops=%.1f sem_per_mutex=%.4f rounds=%d ops=%d max_leases=%d %s watches_per_acquire=%.3f mutex_requests_per_op=%.3f server_pkts_per_op_sem=%s server_pkts_per_op_mutex=%s",
		median(sems), median(mutexes), ratio, f.rounds, f.ops, semMaxLeases, per.kv("acquire"), per.watches, mper.total(), semPkts.kv(), mutexPkts.kv())
	return line, nil
}
