//go:build chaos

package chaos

// The queue.Sharder workers (Curator's QueueSharder): each runs a Sharder
// of lock-safety queues under sharderPath, consuming from every shard with
// the queue workers' consumer and producing through Sharder.Queue with
// their producer (the same log lines, under its own role). A shard is full
// at sharderThreshold items and the sharders' leader checks every
// sharderCheck, so the backlogs a fault leaves make shards, up to
// sharderMax. The check reads the items left in every shard and holds the
// history to the queue workers' rules: no item lost, none delivered again
// beyond what those rules allow.

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
)

const (
	roleSharder      = "sharder"
	sharderPath      = root + "/sharder"
	sharderLocks     = root + "/locks/sharder"     // one lock path per shard: sequence numbers repeat across shards
	sharderLeader    = root + "/locks/sharderlead" // the sharders' leader latch
	sharderThreshold = 4
	sharderMax       = 4
	sharderCheck     = 500 * time.Millisecond
)

func init() {
	registerRole(roleSharder, 2, pacing{0, 0, 30 * time.Millisecond, 90 * time.Millisecond}, (*worker).runSharder)
	setupPaths = append(setupPaths, sharderPath)
	roleChecks = append(roleChecks, (*harness).checkSharderRole)
}

// runSharder consumes from every shard and produces through the sharder
// until stopped.
func (w *worker) runSharder() error {
	lockPath := func(shard string) string { return sharderLocks + "/" + path.Base(shard) }
	consume := w.queueConsumer(func(node string) string { return lockPath(path.Dir(node)) + "/" + path.Base(node) })
	alloc := func(c *recipes.Client, p string) (*queue.Queue, error) {
		return queue.New(c, p, queue.WithLockPath(lockPath(p)), queue.WithConsumer(consume))
	}
	s, err := queue.NewSharder(w.c, sharderPath, sharderLeader, alloc, queue.WithSharderID(w.name),
		queue.WithShardThreshold(sharderThreshold), queue.WithMaxShards(sharderMax), queue.WithShardCheckInterval(sharderCheck))
	if err != nil {
		return err
	}
	if err := w.retry(2*time.Minute, func() error { return s.Start(w.ctx) }); err != nil {
		if w.ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("start sharder: %w", err)
	}
	w.produce("qput", func(ctx context.Context, data []byte) error {
		q, err := s.Queue()
		if err != nil {
			return err
		}
		return q.Put(ctx, data)
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return s.Close(ctx)
}

// checkSharderRole reads the items left in every shard and checks the
// sharder workers' history as the queue workers' is.
func (h *harness) checkSharderRole(rep *report, logs map[string][]event) {
	var shards []string
	err := retryZK(func() error {
		c, err := dial(context.Background(), h.zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		shards, _, err = c.Children(context.Background(), sharderPath)
		if errors.Is(err, zk.ErrNoNode) {
			shards, err = nil, nil
		}
		return err
	})
	if err != nil {
		rep.violation("sharder: listing the shards: %v", err)
		return
	}
	remaining := map[string]int{}
	for _, sh := range shards {
		left, ok := h.queueLeft(rep, "sharder", sharderPath+"/"+sh, queue.Decode)
		if !ok {
			return
		}
		for id, n := range left {
			remaining[id] += n
		}
	}
	rep.note("sharder: %d shards at the end (threshold %d, at most %d)", len(shards), sharderThreshold, sharderMax)
	checkQueueLog(rep, roleSharder, remaining, logs[roleSharder])
}
