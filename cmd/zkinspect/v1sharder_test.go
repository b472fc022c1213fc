package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// TestSemaphoreV1: a V1 semaphore of maximum 2 with two leases held and
// one acquirer waiting is a mutex to zkinspect's eye; -v1 -count 2 shows
// the first two holding and the third waiting, -v1 alone leaves the
// others undecided.
func TestSemaphoreV1(t *testing.T) {
	zkc := zkServer(t)
	ctx := testCtx(t)
	c := connectT(t, zkc)
	path := newRunRoot() + "/v1"
	s, err := semaphore.NewV1(c, path, 2)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		_, _ = s.Acquire(wctx)
	}()
	waitKids(t, c, path, 3)

	plain := inspectOut(t, zkc, path)
	if !strings.Contains(plain, kindLabels[kindMutex]) {
		t.Errorf("without -v1, not shown as a mutex:\n%s", plain)
	}
	told := inspectOut(t, zkc, "-v1", "-count", "2", path)
	for _, want := range []string{kindLabels[kindSemaphoreV1], "2 leases held (max 2), 1 waiting", v1Note} {
		if !strings.Contains(told, want) {
			t.Errorf("-v1 -count 2: no %q in\n%s", want, told)
		}
	}
	if unsure := inspectOut(t, zkc, "-v1", path); !strings.Contains(unsure, "2 holding or waiting") {
		t.Errorf("-v1 without -count: want the two after the first undecided:\n%s", unsure)
	}
}

// TestSharder: a sharder's path shows its shards with their items; a
// summary walks them (an empty shard, which holds its maker's address as
// data, is a data node there, as any empty queue node).
func TestSharder(t *testing.T) {
	zkc := zkServer(t)
	ctx := testCtx(t)
	c := connectT(t, zkc)
	root := newRunRoot()
	alloc := func(c *recipes.Client, p string) (*queue.Queue, error) { return queue.New(c, p) }
	s, err := queue.NewSharder(c, root+"/sharded", root+"/leader", alloc, queue.WithShardThreshold(2), queue.WithMaxShards(2), queue.WithShardCheckInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	q, err := s.Queue()
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range []string{"a", "b"} {
		if err := q.Put(ctx, []byte(item)); err != nil {
			t.Fatal(err)
		}
	}
	waitKids(t, c, root+"/sharded", 2) // the leader adds a shard, one being at the threshold, up to the maximum
	out := inspectOut(t, zkc, root+"/sharded")
	for _, want := range []string{kindLabels[kindSharder], "status: 2 items", "of 2 shards", roleLabels[roleShard]} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	sum := inspectOut(t, zkc, "-summary", root)
	if n := strings.Count(sum, queue.ShardPrefix); n != 2 {
		t.Errorf("the summary shows %d shards, want 2:\n%s", n, sum)
	}
}

// waitKids waits until path has n children.
func waitKids(t *testing.T, c *recipes.Client, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		kids, _, err := c.Children(context.Background(), path)
		if err == nil && len(kids) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d children (%v), want %d", path, len(kids), err, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCuratorV1AndSharder: the layouts Curator itself makes. Two
// InterProcessSemaphore (v1) holders of maximum 2, two leases each, the
// second waiting for room: with -v1 -count 2 the first two nodes hold.
// A QueueSharder (threshold 2, at most 2 shards) given 2 items: its path
// is a sharder of 2 shards holding 2 items.
func TestCuratorV1AndSharder(t *testing.T) {
	if _, err := interop.JavaClasspath(); err != nil {
		testutil.Unavailable(t, err)
	}
	zkc := testutil.Server(t) // plain even under ZK_TEST_TLS: Curator speaks plain ZooKeeper
	ctx := testCtx(t)
	dir := t.TempDir()
	conn := zkc.ConnectString()
	c := connectT(t, zkc)
	root := newRunRoot()

	v1 := root + "/curator-v1"
	first := testutil.Curator(t, ctx, dir, "semholder-v1", conn, v1, "2", "2")
	if err := first.WaitLine(ctx, "ACQUIRED"); err != nil {
		t.Fatal(err)
	}
	testutil.Curator(t, ctx, dir, "semholder-v1", conn, v1, "2", "1")
	waitKids(t, c, v1, 3)
	out := inspectOut(t, zkc, "-v1", "-count", "2", v1)
	for _, want := range []string{kindLabels[kindSemaphoreV1], "2 leases held (max 2), 1 waiting"} {
		if !strings.Contains(out, want) {
			t.Errorf("-v1 -count 2: no %q in\n%s", want, out)
		}
	}

	sharded := root + "/curator-sharder"
	sh := testutil.Curator(t, ctx, dir, "sharder", conn, sharded, root+"/curator-sharder-leader", "2", "50", "2")
	if err := sh.WaitLine(ctx, "READY"); err != nil {
		t.Fatal(err)
	}
	if err := sh.Send("PUT 2"); err != nil {
		t.Fatal(err)
	}
	if err := sh.WaitLine(ctx, "PUT 2"); err != nil {
		t.Fatal(err)
	}
	waitKids(t, c, sharded, 2)
	out = inspectOut(t, zkc, sharded)
	for _, want := range []string{kindLabels[kindSharder], "status: 2 items", "of 2 shards"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}
