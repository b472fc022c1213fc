package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// The qdepth workload (-peer-workloads qdepth, not in the default list: it
// fills the queue with tens of thousands of nodes) measures how a queue's
// consumers fare with a backlog: for each depth in -queue-depths the queue
// is topped up to that many items, then 4 consumer sessions take
// qdepthTake items (or as many as they can within qdepthLimit), ours
// (package queue) and Curator's DistributedQueue and
// SimpleDistributedQueue in turn on the same directory (the layouts are the
// same, so one backlog serves both). A side degrades at a depth where its
// rate falls below half its rate at the first depth, and fails where it
// takes nothing (a listing past the client's packet limit, jute.maxbuffer).
var queueDepths string

const (
	qdepthTake  = 500
	qdepthLimit = 20 * time.Second
	qdepthBatch = 1000 // creates or deletes per transaction when filling or emptying
)

func init() {
	flag.StringVar(&queueDepths, "queue-depths", "1000,10000,50000,70000", "peers, workload qdepth: the backlogs (items already queued) at which to measure the consumers' rate")
}

// qdepthPoint is one side's figures at one depth.
type qdepthPoint struct {
	rate, cpuUS float64
	got         int
	err         error
}

// qdepthLine is the line of s around index i.
func qdepthLine(s string, i int) string {
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		return s[start:]
	}
	return s[start : i+end]
}

// qdepthKV is a cell as a RESULT value: a number, or fails.
func qdepthKV(cell string) string {
	switch cell {
	case "-":
		return "na"
	case "0 (fails)":
		return "fails"
	}
	return cell
}

func (p qdepthPoint) cpu() string {
	if p.err != nil || p.got == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", p.cpuUS)
}

func (p qdepthPoint) cell() string {
	switch {
	case p.err != nil:
		return "fails"
	case p.got == 0:
		return "0 (fails)"
	}
	return fmt.Sprintf("%.0f", p.rate)
}

func (w *peerWork) qdepth() ([]string, bool, error) {
	if len(w.clients) < peerQueueConsumers+1 {
		return nil, false, fmt.Errorf("qdepth needs %d sessions (-sessions)", peerQueueConsumers+1)
	}
	var depths []int
	for _, s := range strings.Split(queueDepths, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < qdepthTake {
			return nil, false, fmt.Errorf("-queue-depths: %q is not a number of at least %d", s, qdepthTake)
		}
		depths = append(depths, n)
	}
	// Filling and emptying list the directory: a session of its own whose
	// packet limit no backlog here reaches.
	admin, err := recipes.Connect(w.ctx, w.b.servers, recipes.WithSessionTimeout(w.b.f.sessionTimeout), recipes.WithMaxBufferSize(64<<20))
	if err != nil {
		return nil, false, err
	}
	defer admin.Close(context.Background())
	var lines []string
	for _, kind := range []string{"dq", "simple"} {
		label := map[string]string{"dq": "DistributedQueue", "simple": "SimpleDistributedQueue"}[kind]
		dir := w.path("qdepth-"+kind, "shared")
		p := w.proc("curator")
		peerLabel := "Curator"
		if p != nil {
			peerLabel = p.label
		}
		fmt.Printf("\n-- peers qdepth %s: %d consumers (each a session) take %d items from a backlog (items/s; CPU µs per item; one run each)\n", label, peerQueueConsumers, qdepthTake)
		fmt.Printf("%-8s %12s %10s %14s %10s\n", "depth", "ours", "cpu µs", peerLabel, "cpu µs")
		var first [2]qdepthPoint
		for i, n := range depths {
			var pts [2]qdepthPoint
			for s := range 2 {
				side := (s + i) % 2 // the side that goes first alternates
				if side == 1 && p == nil {
					pts[1] = qdepthPoint{err: errors.New("no Curator")}
					continue
				}
				if err := qdepthFill(w.ctx, admin, kind, dir, n); err != nil {
					return lines, false, err
				}
				if side == 0 {
					pts[0] = w.qdepthOurs(kind, dir)
				} else {
					a, err := p.do(qdepthLimit+time.Minute, "qdrain %s %d %s %d %d", dir, qdepthTake, kind, peerQueueConsumers, qdepthLimit.Milliseconds())
					mark := len(p.stderr.String())
					pts[1] = qdepthPoint{err: err, got: a.ops}
					if err == nil && a.ops == 0 {
						pts[1].err = fmt.Errorf("took nothing in %v", qdepthLimit)
						if tail := p.stderr.String(); len(tail) >= mark {
							if i := strings.Index(tail[mark:], "out of range"); i >= 0 {
								pts[1].err = fmt.Errorf("took nothing in %v: %s", qdepthLimit, qdepthLine(tail[mark:], i))
							}
						}
					}
					if err == nil && a.seconds > 0 {
						pts[1].rate = float64(a.ops) / a.seconds
						pts[1].cpuUS = a.cpu * 1e6 / float64(max(a.ops, 1))
					}
				}
			}
			if i == 0 {
				first = pts
			}
			var flag [2]string
			for s := range 2 {
				switch {
				case pts[s].err != nil || pts[s].got == 0:
					flag[s] = " !"
				case first[s].rate > 0 && pts[s].rate < first[s].rate/2:
					flag[s] = " <"
				}
			}
			fmt.Printf("%-8d %10s%-2s %10s %12s%-2s %10s\n", n, pts[0].cell(), flag[0], pts[0].cpu(), pts[1].cell(), flag[1], pts[1].cpu())
			for s, name := range []string{"ours", "curator"} {
				if pts[s].err != nil {
					fmt.Printf("   %s at %d: %v\n", name, n, pts[s].err)
				}
			}
			lines = append(lines, fmt.Sprintf("RESULT scenario=peers workload=qdepth-%s depth=%d unit=items_per_s ours=%s cpu_us_per_item_ours=%s curator=%s cpu_us_per_item_curator=%s",
				kind, n, qdepthKV(pts[0].cell()), qdepthKV(pts[0].cpu()), qdepthKV(pts[1].cell()), qdepthKV(pts[1].cpu())))
		}
		fmt.Println("(< : below half the rate at the first depth; ! : took nothing or failed)")
		if err := qdepthEmpty(w.ctx, admin, dir); err != nil {
			return lines, false, err
		}
	}
	return lines, true, nil
}

// qdepthFill tops the queue at dir up to n items (Curator's layout: framed
// items for a DistributedQueue, raw for a SimpleDistributedQueue), in
// transactions of qdepthBatch creates.
func qdepthFill(ctx context.Context, c *recipes.Client, kind, dir string, n int) error {
	if _, err := c.CreateWithParents(ctx, dir, nil, 0); err != nil && !errors.Is(err, recipes.ErrNodeExists) {
		return err
	}
	kids, _, err := c.Children(ctx, dir)
	if err != nil {
		return err
	}
	prefix, data := queue.ItemPrefix, queue.Encode([][]byte{[]byte("job")})
	if kind == "simple" {
		prefix, data = queue.SimplePrefix, []byte("job")
	}
	for have := len(kids); have < n; {
		ops := make([]recipes.Op, 0, qdepthBatch)
		for ; have < n && len(ops) < qdepthBatch; have++ {
			ops = append(ops, recipes.CreateOp(path.Join(dir, prefix), data, zk.FlagSequence))
		}
		if _, err := c.Multi(ctx, ops...); err != nil {
			return fmt.Errorf("filling %s: %w", dir, err)
		}
	}
	return nil
}

// qdepthEmpty deletes the queue at dir and its items; items a late
// consumer took meanwhile are skipped.
func qdepthEmpty(ctx context.Context, c *recipes.Client, dir string) error {
	kids, _, err := c.Children(ctx, dir)
	if err != nil {
		return err
	}
	for len(kids) > 0 {
		batch := kids[:min(len(kids), qdepthBatch)]
		kids = kids[len(batch):]
		ops := make([]recipes.Op, 0, len(batch))
		for _, k := range batch {
			ops = append(ops, recipes.DeleteOp(path.Join(dir, k), -1))
		}
		if _, err := c.Multi(ctx, ops...); err != nil {
			if !errors.Is(err, recipes.ErrNoNode) {
				return fmt.Errorf("emptying %s: %w", dir, err)
			}
			// A consumer that has not yet given up (a Curator poll
			// retrying a listing that was too large) took one: one by one.
			for _, k := range batch {
				if err := c.Delete(ctx, path.Join(dir, k), -1); err != nil && !errors.Is(err, recipes.ErrNoNode) {
					return fmt.Errorf("emptying %s: %w", dir, err)
				}
			}
		}
	}
	if err := c.Delete(ctx, dir, -1); err != nil && !errors.Is(err, recipes.ErrNoNode) && !errors.Is(err, recipes.ErrNotEmpty) {
		return err
	}
	return nil
}

// qdepthOurs starts 4 consumers of package queue on the backlog at dir and
// measures the time and process CPU until qdepthTake items are taken.
func (w *peerWork) qdepthOurs(kind, dir string) qdepthPoint {
	ctx, cancel := context.WithTimeout(w.ctx, qdepthLimit)
	defer cancel()
	var (
		got  atomic.Int64
		last atomic.Int64
		all  = make(chan struct{})
		once sync.Once
		wg   sync.WaitGroup
		errs = make(chan error, peerQueueConsumers)
	)
	count := func() {
		if n := got.Add(1); n <= qdepthTake {
			last.Store(time.Now().UnixNano())
			if n == qdepthTake {
				once.Do(func() { close(all) })
			}
		}
	}
	start, cpu := time.Now(), cpuTime()
	var closers []func(context.Context) error
	if kind == "dq" {
		for i := 1; i <= peerQueueConsumers; i++ {
			q, err := queue.New(w.clients[i], dir, queue.WithConsumer(queue.ConsumerFunc(func(context.Context, *queue.Message) error {
				count()
				return nil
			})))
			if err == nil {
				err = q.Start(ctx)
			}
			if err != nil {
				errs <- err
				break
			}
			closers = append(closers, q.Close)
		}
	} else {
		for i := 1; i <= peerQueueConsumers; i++ {
			q, err := queue.NewSimple(w.clients[i], dir)
			if err != nil {
				errs <- err
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if _, err := q.Take(ctx); err != nil {
						if ctx.Err() == nil {
							errs <- err
							cancel()
						}
						return
					}
					count()
				}
			}()
		}
	}
	select {
	case <-all:
	case <-ctx.Done():
	case err := <-errs:
		cancel()
		wg.Wait()
		return qdepthPoint{err: err, got: int(got.Load())}
	}
	used := cpuTime() - cpu
	cancel()
	for _, c := range closers {
		c(context.Background())
	}
	wg.Wait()
	n := int(min(got.Load(), qdepthTake))
	end := time.Now()
	if n == qdepthTake {
		end = time.Unix(0, last.Load())
	}
	var err error
	if len(errs) > 0 {
		err = <-errs
	}
	return qdepthPoint{rate: float64(n) / end.Sub(start).Seconds(), cpuUS: cpuPerOp(used, max(n, 1)), got: n, err: err}
}
