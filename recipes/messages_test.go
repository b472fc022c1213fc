package recipes_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/cleanup"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/shared"
)

var updateMessages = flag.Bool("update-messages", false, "rewrite testdata/messages.txt from this run")

// TestErrorMessages is the table of the messages users read: each row
// makes one error happen for real and the whole table is compared with
// testdata/messages.txt, so a changed message shows in review. Every
// message starts with "zkrecipes: " once and names the recipe and its path
// once. Node names, sequence numbers and addresses are replaced by
// placeholders. go test -run TestErrorMessages ./recipes/ -update-messages
// rewrites the file.
func TestErrorMessages(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	other := connect(t, zkc.Servers())
	ctx := context.Background()
	ended, cancel := context.WithCancel(ctx)
	cancel()

	type row struct {
		name string
		err  error
	}
	var rows []row
	add := func(name string, err error) { rows = append(rows, row{name, err}) }
	must := func(err error) {
		t.Helper()
		require.NoError(t, err)
	}

	// The client.
	var nilClient *recipes.Client
	_, _, err := nilClient.Get(ctx, "/a")
	add("Client.Get on a nil client", err)
	_, _, err = c.Get(ctx, "/messages/none")
	add("Client.Get of a missing node", err)
	_, err = c.Create(ctx, "relative", nil, 0)
	add("Client.Create of a relative path", err)
	_, err = c.Create(ctx, "/zookeeper/quota/x", nil, 0)
	add("Client.Create under /zookeeper", err)
	_, err = c.Multi(ctx, recipes.CheckOp("/messages", -1), recipes.DeleteOp("/messages/none", -1))
	add("Client.Multi whose op fails", err)
	_, err = c.Multi(ctx, recipes.Op{})
	add("Client.Multi of a zero Op", err)
	_, _, err = c.Get(ended, "/a")
	add("Client.Get with an ended ctx", err)
	closed, err := testutil.Dial(ctx, zkc.Servers())
	must(err)
	must(closed.Close(ctx))
	_, _, err = closed.Get(ctx, "/a")
	add("Client.Get on a closed client", err)
	_, err = testutil.Dial(ctx, []string{"127.0.0.1:1"}, recipes.WithConnectTimeout(200*time.Millisecond))
	add("Connect with nobody listening", err)

	// The mutex.
	m, err := mutex.New(c, "/messages/lock")
	must(err)
	add("Mutex.Release not held", m.Release(ctx))
	lease, err := m.Acquire(ctx)
	must(err)
	done := make(chan error, 1)
	go func() { done <- m.Release(ctx) }()
	add("Mutex.Release from another goroutine", <-done)
	m2, err := mutex.New(other, "/messages/lock")
	must(err)
	_, err = m2.TryAcquire(ctx)
	add("Mutex.TryAcquire while held", err)
	_, err = m2.Acquire(ended)
	add("Mutex.Acquire with an ended ctx", err)
	must(lease.Release(ctx))
	add("Lease.Release twice", lease.Release(ctx))
	_, err = lease.Token(ctx)
	add("Lease.Token after Release", err)
	_, err = lease.Fenced(ctx, recipes.SetOp("/messages", nil, -1))
	add("Lease.Fenced after Release", err)
	_, err = m.Holder(ctx)
	add("Mutex.Holder when nobody holds", err)
	_, err = mutex.New(c, "/")
	add("mutex.New at the root", err)

	// The read/write lock.
	rw, err := rwlock.New(c, "/messages/rw")
	must(err)
	_, err = rw.ReadLock().Acquire(ctx)
	must(err)
	_, err = rw.WriteLock().Acquire(ctx)
	add("RWLock write lock by the read lock's owner", err)
	must(rw.ReadLock().Release(ctx))
	add("RWLock read lock Release not held", rw.ReadLock().Release(ctx))

	// The semaphore.
	sem, err := semaphore.New(c, "/messages/sem", 1)
	must(err)
	sl, err := sem.Acquire(ctx)
	must(err)
	sem2, err := semaphore.New(other, "/messages/sem", 1)
	must(err)
	_, err = sem2.TryAcquire(ctx)
	add("Semaphore.TryAcquire when full", err)
	_, err = sem2.Acquire(ended)
	add("Semaphore.Acquire with an ended ctx", err)
	_, err = sem2.AcquireN(ctx, 2)
	add("Semaphore.AcquireN of more than the maximum", err)
	must(sl.Release(ctx))
	add("semaphore Lease.Release twice", sl.Release(ctx))
	smu, err := semaphore.NewMutex(c, "/messages/semmutex")
	must(err)
	add("semaphore.Mutex.Release not held", smu.Release(ctx))

	// The shared count.
	sc, err := shared.NewCount(c, "/messages/count", 1)
	must(err)
	must(sc.Start(ctx))
	must(sc.Close(ctx))
	add("SharedCount.Set after Close", sc.Set(ctx, 2))

	// The election.
	latch, err := election.NewLatch(c, "/messages/latch", "me")
	must(err)
	_, err = latch.Await(ctx)
	add("Latch.Await before Start", err)
	must(latch.Start(ctx))
	add("Latch.Start twice", latch.Start(ctx))
	must(latch.Close(ctx))
	_, err = latch.Await(ctx)
	add("Latch.Await after Close", err)
	_, err = election.CurrentLeader(ctx, c, "/messages/latch")
	add("CurrentLeader when nobody leads", err)
	sel, err := election.NewSelector(c, "/messages/selector", "me", func(context.Context, *election.Term) error { return nil })
	must(err)
	must(sel.Close(ctx))
	_, err = sel.Requeue()
	add("Selector.Requeue after Close", err)

	// The reaper.
	r, err := cleanup.New(c)
	must(err)
	must(r.Start(ctx))
	add("Reaper.Start twice", r.Start(ctx))
	must(r.Close(ctx))
	add("Reaper.AddPath after Close", r.AddPath("/messages/x"))

	// The atomic values.
	al, err := atomicval.NewInt64(c, "/messages/atomic/long")
	must(err)
	_, err = al.CompareAndSet(ctx, 0, 1)
	add("Int64.CompareAndSet of a missing node", err)
	_, err = al.Initialize(ctx, 10)
	must(err)
	_, err = al.CompareAndSet(ctx, 9, 1)
	add("Int64.CompareAndSet from another value", err)
	_, err = c.CreateWithParents(ctx, "/messages/atomic/short", []byte{1, 2, 3}, 0)
	must(err)
	as, err := atomicval.NewInt64(c, "/messages/atomic/short")
	must(err)
	_, err = as.Get(ctx)
	add("Int64.Get of 3 bytes", err)
	_, err = as.Increment(ctx)
	add("Int64.Increment of 3 bytes", err)
	scs, err := shared.NewCount(c, "/messages/atomic/short", 0)
	must(err)
	add("SharedCount.Start of 3 bytes", scs.Start(ctx))
	ai, err := atomicval.NewInt32(c, "/messages/atomic/long")
	must(err)
	_, err = ai.Add(ctx, 1)
	add("Int32.Add of 8 bytes", err)
	_, err = atomicval.NewInt64(c, "/messages/atomic/long", atomicval.WithPromotedToLock(atomicval.PromotedToLock{Path: "/messages/atomic/long/lock"}))
	add("NewInt64 with its lock below it", err)

	// The queues.
	_, err = queue.New(c, "/messages/queue", queue.WithLockPath("/messages/queue/locks"))
	add("queue.New with its lock path below it", err)
	idq, err := queue.NewID(c, "/messages/idqueue")
	must(err)
	add("IDQueue.Put with an empty id", idq.Put(ctx, "", []byte("x")))
	sq, err := queue.NewSimple(c, "/messages/simple")
	must(err)
	tctx, tcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = sq.Take(tctx)
	tcancel()
	add("SimpleQueue.Take until its ctx ends", err)
	// The cache.
	_, err = cache.New(c, "/", cache.WithMaxDepth(1))
	add("cache.New on the root", err)
	_, err = cache.New(c, "/messages/cache", cache.WithMaxDepth(-2))
	add("cache.New with a negative depth", err)
	cc, err := cache.New(c, "/messages/cache")
	must(err)
	add("Cache.WaitReady before Start", cc.WaitReady(ctx))
	must(cc.Start(ctx))
	add("Cache.Start twice", cc.Start(ctx))
	must(cc.Close(ctx))
	add("Cache.Start after Close", cc.Start(ctx))

	// Nodes and membership.
	_, err = nodes.NewPersistentNode(c, "/messages/pn", nodes.PersistentWithTTL, nil)
	add("NewPersistentNode in a TTL mode without a TTL", err)
	pn, err := nodes.NewPersistentNode(c, "/messages/pn", nodes.Ephemeral, nil)
	must(err)
	err = pn.WaitReady(ctx)
	add("PersistentNode.WaitReady before Start", err)
	must(pn.Start(ctx))
	add("PersistentNode.Start twice", pn.Start(ctx))
	err = pn.WaitReady(ctx)
	must(err)
	_, err = nodes.NewGroupMember(c, "/messages/group", "a/b", nil)
	add("NewGroupMember with a bad id", err)
	gm, err := nodes.NewGroupMember(other, "/messages", "pn", nil)
	must(err)
	must(gm.Start(ctx))
	for i := 0; gm.Err() == nil && i < 1000; i++ {
		time.Sleep(10 * time.Millisecond) // the duplicate is seen within a round trip
	}
	add("GroupMember with the id of another session's member", gm.Err())
	must(gm.Close(ctx))
	must(pn.Close(ctx))
	add("PersistentNode.SetData after Close", pn.SetData(ctx, nil))

	// Service discovery.
	disc, err := discovery.New(c, "/messages/services")
	must(err)
	_, err = disc.QueryForNames(ctx)
	add("Discovery.QueryForNames before Start", err)
	must(disc.Start(ctx))
	add("Discovery.Register with a bad id", disc.Register(ctx, &discovery.Instance{Name: "s", ID: "a/b"}))
	add("Discovery.Update of an instance not registered", disc.Update(ctx, &discovery.Instance{Name: "s", ID: "x"}))
	_, err = c.Create(ctx, "/messages/services", nil, 0)
	must(err)
	_, err = c.Create(ctx, "/messages/services/s", nil, 0)
	must(err)
	_, err = c.Create(ctx, "/messages/services/s/bad", []byte("{"), 0)
	must(err)
	_, err = disc.QueryForInstance(ctx, "s", "bad")
	add("Discovery.QueryForInstance of an unreadable node", err)
	typed, err := discovery.New(c, "/messages/services", discovery.WithPayload(discovery.Payload[struct{}]{Class: "com.example.Details"}))
	must(err)
	must(typed.Start(ctx))
	otherClass := &discovery.Instance{Name: "s", ID: "other", Payload: []byte(`{"@class":"com.example.Other"}`)}
	add("typed Discovery.Register of another payload class", typed.Register(ctx, otherClass))
	must(disc.Register(ctx, otherClass))
	_, err = typed.QueryForInstance(ctx, "s", "other")
	add("typed Discovery.QueryForInstance of another payload class", err)
	must(typed.Close(ctx))
	_, err = discovery.ParseURISpec("{x")
	add("ParseURISpec of an unclosed variable", err)
	must(disc.Close(ctx))
	add("Discovery.Register after Close", disc.Register(ctx, &discovery.Instance{Name: "s", ID: "x"}))

	// Errors after the client closed, through a recipe.
	_, err = mutex.New(closed, "/messages/lock")
	add("mutex.New on a closed client", err)
	closedLatch, err := election.NewLatch(c, "/messages/latch", "me")
	must(err)
	_, err = election.NewLatch(c, "/messages/latch", "")
	add("NewLatch with an empty id", err)
	must(c.Close(ctx))
	add("Latch.Start on a closed client", closedLatch.Start(ctx))
	_, err = m.Acquire(ctx)
	add("Mutex.Acquire on a closed client", err)

	var b strings.Builder
	for _, r := range rows {
		msg := "<nil>"
		if r.err != nil {
			msg = normalize(r.err.Error())
		}
		fmt.Fprintf(&b, "%s\n\t%s\n", r.name, msg)
		if r.err != nil {
			if n := strings.Count(r.err.Error(), "zkrecipes: "); n != 1 || !strings.HasPrefix(r.err.Error(), "zkrecipes: ") {
				t.Errorf("%s: %q: the module's prefix %d times, want once, first", r.name, r.err, n)
			}
		} else {
			t.Errorf("%s: no error", r.name)
		}
	}
	const file = "testdata/messages.txt"
	if *updateMessages {
		must(os.MkdirAll("testdata", 0o755))
		must(os.WriteFile(file, []byte(b.String()), 0o644))
		return
	}
	want, err := os.ReadFile(file)
	require.NoError(t, err, "run with -update-messages to create it")
	require.Equal(t, string(want), b.String(), "the messages changed: review, then rewrite %s with -update-messages", file)
}

var (
	reNode   = regexp.MustCompile(`_c_[0-9a-f-]{36}-`)
	reSeq    = regexp.MustCompile(`\d{10}`)
	reAddr   = regexp.MustCompile(`127\.0\.0\.1:\d+`)
	reGorout = regexp.MustCompile(`goroutine \d+`)
	reSess   = regexp.MustCompile(`session \(0x[0-9a-f]+\)`)
)

// normalize replaces what differs from run to run.
func normalize(s string) string {
	s = reNode.ReplaceAllString(s, "_c_<uuid>-")
	s = reSess.ReplaceAllString(s, "session (0x<id>)") // before reSeq: an id may hold 10 digits in a row
	s = reSeq.ReplaceAllString(s, "<seq>")
	s = reAddr.ReplaceAllString(s, "<server>")
	return reGorout.ReplaceAllString(s, "goroutine <id>")
}
