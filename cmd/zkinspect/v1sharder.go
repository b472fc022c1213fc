package main

// Two layouts other recipes share names with: semaphore.V1 (Curator's
// InterProcessSemaphore), whose lease nodes are a mutex's (_c_<uuid>-lock-
// <seq> directly under the path), so that only -v1 tells it from one; and
// queue.Sharder (Curator's QueueSharder), a node whose children are
// shards named queue-<uuid>, each a work queue.

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes/queue"
)

const (
	kindSemaphoreV1 = "semaphore-v1" // lock- nodes under a path -v1 named a V1 semaphore
	kindSharder     = "sharder"      // shards queue-<uuid>: a QueueSharder
	roleShard       = "shard"        // a sharder's shard
)

// v1Note says what -v1 does, and why it must be told.
const v1Note = "shown as a semaphore v1 (InterProcessSemaphore) because -v1 said so: its lease nodes are named and ordered as a mutex's, and a lease holds when fewer than the maximum nodes sort ahead of it"

// sharderShards reports whether kids are a sharder's shards: persistent
// nodes, every one named queue-<uuid> (queue.ShardPrefix and a UUID).
func sharderShards(kids []child) bool {
	for _, k := range kids {
		rest, ok := strings.CutPrefix(k.name, queue.ShardPrefix)
		if k.st == nil || k.ephemeral() || !ok {
			return false
		}
		if _, err := uuid.Parse(rest); err != nil || len(rest) != 36 {
			return false
		}
	}
	return len(kids) > 0
}

// readV1 makes the queue of a V1 semaphore's lease nodes (classified as a
// mutex's): with -count, the first maximum of them hold and the others
// wait; without, the first holds and the others hold or wait.
func readV1(ctx context.Context, r *reader, cfg config, q *Queue, cl *class) (*Queue, error) {
	q.Kind = kindSemaphoreV1
	q.Nodes = r.nodes(kindMutex, cl.queue)
	limit := -1
	if cfg.count != "" {
		n, err := readMax(ctx, r, cfg.count)
		if err != nil {
			return nil, err
		}
		q.MaxLeases, limit = &n, n
	}
	for i := range q.Nodes {
		switch {
		case limit >= 0 && i < limit, limit < 0 && i == 0:
			q.Nodes[i].Role = roleHolder
		case limit >= 0:
			q.Nodes[i].Role = roleWaiter
		default:
			q.Nodes[i].Role = roleUnknown
		}
	}
	q.Notes = append(q.Notes, v1Note)
	if limit < 0 {
		q.Notes = append(q.Notes, "the maximum is unknown: give -count <SharedCount path> or -count <n>")
	}
	tally(q, q.Nodes)
	return q, nil
}

// readSharder lists a sharder's shards with their item counts.
func readSharder(r *reader, q *Queue, cl *class) *Queue {
	q.Nodes = r.nodes(kindSharder, cl.queue)
	total := 0
	counts := make([]string, 0, len(cl.queue))
	for _, k := range cl.queue {
		n := int(k.st.NumChildren)
		total += n
		counts = append(counts, fmt.Sprintf("%s %d", k.name, n))
	}
	for i := range q.Nodes {
		q.Nodes[i].Role, q.Nodes[i].Library = roleShard, libCurator
	}
	q.Depth = &total
	q.Notes = append(q.Notes,
		fmt.Sprintf("a queue sharder (QueueSharder) of %d shards, each a work queue (zkinspect %s/<shard> shows its items): %s", len(cl.queue), q.Path, strings.Join(counts, ", ")),
		"the sharders' leader latch is at a path of its own (NewSharder's leaderPath); the items count the nodes of each shard")
	return q
}
