package main

// An operator's report: zkinspect on a root holding one of each recipe
// (discovery, a group, queues and a queue's lock directory, a mutex, a
// barrier, a shared count) listed the discovery services as groups,
// counted unreadable instances as instances, did not know a queue's lock
// directory, said "unknown" for a group member's library and called every
// data node a barrier that is up. TestMixedRoot lays that tree out with
// the library's own recipes and checks each is classified and counted.

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/queue"
)

// TestMixedRoot: under one root, a discovery base path with two services
// (billing with an instance node that does not read as one), a group of
// two members, a lock-safety queue of three items whose consumer holds
// the first (its lock directory beside it), a simple queue of two items,
// a held mutex, a barrier that is up and a shared count.
func TestMixedRoot(t *testing.T) {
	root := newRunRoot() + "/app"
	zkc := zkServer(t)
	ctx := testCtx(t)
	c := connectT(t, zkc)

	d, err := discovery.New(c, root+"/services")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(context.Background()) })
	for _, in := range []*discovery.Instance{
		{Name: "orders", ID: "o-1", Address: "10.0.0.1", Port: 8080},
		{Name: "billing", ID: "b-1", Address: "10.0.0.3", Port: 9090},
	} {
		if err := d.Register(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Create(ctx, root+"/services/billing/broken", []byte("{"), 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Delete(context.Background(), root+"/services/billing/broken", -1) })

	for _, id := range []string{"api-1", "api-2"} {
		g, err := nodes.NewGroupMember(c, root+"/group", id, []byte(id+":8080"))
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close(context.Background()) })
		if err := g.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}

	holding, release := make(chan string, 1), make(chan struct{})
	q, err := queue.New(c, root+"/jobs", queue.WithLockPath(root+"/jobs-lock"),
		queue.WithConsumer(queue.ConsumerFunc(func(ctx context.Context, m *queue.Message) error {
			holding <- string(m.Data())
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := q.Put(ctx, fmt.Appendf(nil, "job %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close(context.Background()) })
	t.Cleanup(func() { close(release) })
	if got := <-holding; got != "job 0" {
		t.Fatalf("the consumer holds %q, want job 0", got)
	}

	sq, err := queue.NewSimple(c, root+"/simple")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := sq.Offer(ctx, fmt.Appendf(nil, "cmd %d", i)); err != nil {
			t.Fatal(err)
		}
	}

	m, err := mutex.New(c, root+"/mutex", mutex.WithData([]byte("holder")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Release(context.Background()) })

	b, err := barrier.New(c, root+"/gate")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Set(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Remove(context.Background()) })
	startCount(t, c, root+"/count", 7)

	out := inspectOut(t, zkc, root)
	t.Logf("zkinspect %s:\n%s", root, out)
	wantLines(t, root, out, [][]string{
		{root + ": ", "2 data nodes"},
		{root + "/count ", "counter", "int 7"},
		{root + "/gate ", "barrier", "up?"},
		{root + "/services/orders ", "service", "instances", " 1 "},
		{root + "/services/billing ", "service", "instances, 1 unreadable", " 1 "},
		{root + "/group ", "group", "members", " 2 "},
		{root + "/jobs ", "queue", " 3 "},
		{root + "/jobs-lock ", "queue-lock", "locked", " 1 "},
		{root + "/simple ", "simple-queue", " 2 "},
		{root + "/mutex ", "mutex", "held", " 1 "},
	}, " empty ", " unknown ", "not listed")

	var rep Report
	if err := json.Unmarshal([]byte(inspectOut(t, zkc, "-json", root)), &rep); err != nil {
		t.Fatal(err)
	}
	type line struct {
		kind                string
		holders, unreadable int
	}
	got := map[string]line{}
	for _, l := range rep.Locks {
		got[l.Path] = line{l.Kind, l.Holders, l.Unreadable}
	}
	want := map[string]line{
		root + "/services/orders":  {kindService, 1, 0},
		root + "/services/billing": {kindService, 1, 1},
		root + "/group":            {kindGroup, 2, 0},
		root + "/jobs":             {kindQueue, 0, 0},
		root + "/jobs-lock":        {kindQueueLock, 1, 0},
		root + "/simple":           {kindSimpleQueue, 0, 0},
		root + "/mutex":            {kindMutex, 1, 0},
		root + "/count":            {kindCounter, 0, 0},
		root + "/gate":             {kindBarrier, 0, 0},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("-json %s: locks\n got %v\nwant %v", root, got, want)
	}
	if rep.DataNodes != 2 {
		t.Errorf("-json %s: %d data nodes, want 2 (gate, count)", root, rep.DataNodes)
	}

	out = inspectOut(t, zkc, root+"/services")
	t.Logf("zkinspect %s:\n%s", root+"/services", out)
	wantLines(t, root+"/services", out, [][]string{
		{root + "/services: service discovery base path (curator-x-discovery), 2 services, 2 instances, 1 unreadable"},
		{"service orders (" + root + "/services/orders): 1 instance"},
		{"service billing (" + root + "/services/billing): 1 instance, 1 unreadable"},
		{"broken", "unreadable: "},
	}, "1 instances", "3 instances")
	out = inspectOut(t, zkc, root+"/group")
	t.Logf("zkinspect %s:\n%s", root+"/group", out)
	wantLines(t, root+"/group", out, [][]string{
		{"MEMBER", "api-1", "curator-compatible (Curator or zkrecipes)", `"api-1:8080"`},
		{"MEMBER", "api-2", "curator-compatible (Curator or zkrecipes)", `"api-2:8080"`},
	}, "unknown")
	out = inspectOut(t, zkc, root+"/jobs-lock")
	t.Logf("zkinspect %s:\n%s", root+"/jobs-lock", out)
	wantLines(t, root+"/jobs-lock", out, [][]string{
		{root + "/jobs-lock: a queue's lock directory"}, {"status: 1 item locked by a consumer"},
		{"HOLDS", "queue-0000000000", "curator-compatible"},
	}, "unknown")
	out = inspectOut(t, zkc, root+"/gate")
	t.Logf("zkinspect %s:\n%s", root+"/gate", out)
	wantLines(t, root+"/gate", out, [][]string{{"could be a DistributedBarrier"}}, "as a DistributedBarrier: up")
	for _, p := range []string{"/count", "/mutex", "/jobs", "/simple"} {
		out = inspectOut(t, zkc, root+p)
		wantLines(t, root+p, out, nil, "DistributedBarrier")
	}
}
