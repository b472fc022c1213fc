package queue_test

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// exampleServers returns the address of a server started for this test
// package, at its first call; TestMain stops it.
var exampleServers = testutil.ExampleServers

// Example hands jobs to a worker in lock-safety mode: a job is deleted
// only once the worker has run it, and Ack tells the worker whether it
// alone did.
func Example() {
	ctx := context.Background()
	c, err := recipes.Connect(ctx, exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)

	ran := make(chan string)
	worker := queue.ConsumerFunc(func(ctx context.Context, m *queue.Message) error {
		job := string(m.Data())
		// ... run the job, stopping if m.Done() closes ...
		if err := m.Ack(ctx); err != nil {
			return err // the lock was lost: the job may run elsewhere too
		}
		ran <- job
		return nil
	})
	jobs, err := queue.New(c, "/jobs/queue", queue.WithConsumer(worker), queue.WithLockPath("/jobs/locks"))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := jobs.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer jobs.Close(ctx)
	for _, job := range []string{"resize image 1", "resize image 2"} {
		if err := jobs.Put(ctx, []byte(job)); err != nil { // a producer, in any process
			fmt.Println(err)
			return
		}
	}
	fmt.Println(<-ran)
	fmt.Println(<-ran)
	// Output:
	// resize image 1
	// resize image 2
}

// ExampleSimpleQueue offers and takes raw items, as Curator's
// SimpleDistributedQueue and ZooKeeper's contrib queue do.
func ExampleSimpleQueue() {
	ctx := context.Background()
	c, err := recipes.Connect(ctx, exampleServers())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)
	q, err := queue.NewSimple(c, "/commands")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := q.Offer(ctx, []byte("reload")); err != nil {
		fmt.Println(err)
		return
	}
	cmd, err := q.Take(ctx) // waits for an item; a ctx deadline bounds it
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(cmd))
	// Output: reload
}

// ExampleSharder spreads puts over several queues (Curator's
// QueueSharder): each shard is a Queue made by the Allocator, here with
// a consumer, and the leader of the sharders adds a shard when one holds
// the threshold's worth of items.
func ExampleSharder() {
	ctx := context.Background()
	c, err := recipes.Connect(ctx, exampleServers()) // e.g. []string{"127.0.0.1:2181"}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(ctx)

	done := make(chan string)
	worker := queue.ConsumerFunc(func(ctx context.Context, m *queue.Message) error {
		done <- string(m.Data())
		return nil
	})
	shard := func(c *recipes.Client, path string) (*queue.Queue, error) {
		return queue.New(c, path, queue.WithConsumer(worker))
	}
	s, err := queue.NewSharder(c, "/reports/shards", "/reports/shard-leader", shard,
		queue.WithShardThreshold(5000), queue.WithMaxShards(4))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := s.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close(ctx)
	fmt.Println("shards:", s.ShardCount())
	q, err := s.Queue() // a shard under the threshold, at random
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := q.Put(ctx, []byte("report 42")); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-done)
	// Output:
	// shards: 1
	// report 42
}
