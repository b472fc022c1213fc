package main

// TestLayout: `zkinspect /` over one server holding every recipe twice,
// laid out by real Curator (CuratorRecipes.java's layout mode and
// CuratorDiscovery.java) under /curator and by the Go recipes under /go,
// compared with testdata/layout.golden (and layout.json.golden); beside
// them /odd, which no recipe makes, is unknown, and the summary says why.

import (
	"context"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

func TestLayout(t *testing.T) {
	zkc := testutil.CuratorServer(t) // a server of its own: / holds this tree only
	ctx := testCtx(t)
	dir := t.TempDir()
	conn := zkc.ConnectString()
	java := testutil.Curator(t, ctx, dir, "layout", conn, "/curator")
	jd, err := interop.StartCuratorDiscovery(ctx, dir, conn, "/curator/services", "orders", "java-1", "9000", "java", "4000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(jd.Kill)
	c := connectT(t, zkc)
	lay := &goLayout{t: t, c: c, ctx: ctx}
	lay.locks("/go")
	lay.values("/go")
	lay.queues("/go")
	lay.nodes("/go")
	// And a node no recipe makes: an ephemeral child named like a lock's
	// node, without a sequence.
	if _, err := c.CreateWithParents(ctx, "/odd/task-lock-1", nil, zk.FlagEphemeral); err != nil {
		t.Fatal(err)
	}
	if err := java.WaitLine(ctx, "LAYOUT"); err != nil {
		t.Fatalf("%v\n%s", err, java.Stderr())
	}
	if err := jd.WaitLine(ctx, "READY"); err != nil {
		t.Fatal(err)
	}
	out := inspectOut(t, zkc, "/")
	t.Logf("zkinspect /:\n%s", out)
	goldenBoth(t, zkc, "layout", "/")
}

// goLayout lays out the Go side; what it starts ends with the test.
type goLayout struct {
	t   *testing.T
	c   *recipes.Client
	ctx context.Context
}

func (g *goLayout) check(err error) {
	g.t.Helper()
	if err != nil {
		g.t.Fatal(err)
	}
}

// waiter runs wait on a goroutine until the test ends (its ctx is
// cancelled then, and the goroutine waited for).
func (g *goLayout) waiter(wait func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(g.ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = wait(ctx)
	}()
	g.t.Cleanup(func() { cancel(); wg.Wait() })
}

// started starts s and closes it at the end of the test.
func (g *goLayout) started(s interface {
	Start(context.Context) error
	Close(context.Context) error
}) {
	g.t.Helper()
	g.check(s.Start(g.ctx))
	g.t.Cleanup(func() { _ = s.Close(context.Background()) })
}

// locks: a mutex held and one waiting, a read lock held and a write lock
// waiting, a semaphore of 1 held and one waiting, a latch of two, a
// selector of two.
func (g *goLayout) locks(root string) {
	m, err := mutex.New(g.c, root+"/mutex")
	g.check(err)
	_, err = m.Acquire(g.ctx)
	g.check(err)
	g.waiter(func(ctx context.Context) error { _, err := m.Acquire(ctx); return err })
	rw, err := rwlock.New(g.c, root+"/rwlock")
	g.check(err)
	_, err = rw.ReadLock().Acquire(g.ctx)
	g.check(err)
	g.waiter(func(ctx context.Context) error { _, err := rw.WriteLock().Acquire(ctx); return err })
	sem, err := semaphore.New(g.c, root+"/semaphore", 1)
	g.check(err)
	_, err = sem.Acquire(g.ctx)
	g.check(err)
	g.waiter(func(ctx context.Context) error { _, err := sem.Acquire(ctx); return err })
	for i, id := range []string{"go-latch-1", "go-latch-2"} {
		l, err := election.NewLatch(g.c, root+"/latch", id)
		g.check(err)
		g.started(l)
		if i == 0 {
			_, err = l.Await(g.ctx)
			g.check(err)
		}
	}
	for _, id := range []string{"go-selector-1", "go-selector-2"} {
		s, err := election.NewSelector(g.c, root+"/selector", id, func(ctx context.Context, _ *election.Term) error {
			<-ctx.Done()
			return nil
		})
		g.check(err)
		g.started(s)
	}
	for _, p := range []string{"/mutex", "/rwlock", "/semaphore/leases", "/latch", "/selector"} {
		waitChildren(g.t, g.c, root+p, 2)
	}
}

// values: a shared count of 7, an atomic long incremented once whose
// promoted lock is held (a promotion in flight), a barrier set, a double
// barrier of 2 with one member in.
func (g *goLayout) values(root string) {
	startCount(g.t, g.c, root+"/count", 7)
	al, err := atomicval.NewInt64(g.c, root+"/atomic-long", atomicval.WithPromotedToLock(atomicval.PromotedToLock{Path: root + "/atomic-long-lock"}))
	g.check(err)
	res, err := al.Increment(g.ctx)
	g.check(err)
	if !res.Succeeded {
		g.t.Fatal("atomic long: increment did not succeed")
	}
	lock, err := mutex.New(g.c, root+"/atomic-long-lock")
	g.check(err)
	_, err = lock.Acquire(g.ctx)
	g.check(err)
	b, err := barrier.New(g.c, root+"/barrier")
	g.check(err)
	g.check(b.Set(g.ctx))
	db, err := barrier.NewDouble(g.c, root+"/double-barrier", 2)
	g.check(err)
	g.waiter(db.Enter)
	waitChildren(g.t, g.c, root+"/double-barrier", 1)
}

// queues: a queue of two items, a lock-safety queue of two whose consumer
// holds the first, a simple queue of two.
func (g *goLayout) queues(root string) {
	q, err := queue.New(g.c, root+"/queue")
	g.check(err)
	ls, err := queue.New(g.c, root+"/queue-ls", queue.WithLockPath(root+"/queue-ls-lock"),
		queue.WithConsumer(queue.ConsumerFunc(func(ctx context.Context, _ *queue.Message) error {
			<-ctx.Done()
			return ctx.Err()
		})))
	g.check(err)
	sq, err := queue.NewSimple(g.c, root+"/simple-queue")
	g.check(err)
	for _, item := range []string{"a", "b"} {
		g.check(q.Put(g.ctx, []byte(item)))
		g.check(ls.Put(g.ctx, []byte(item)))
		g.check(sq.Offer(g.ctx, []byte(item)))
	}
	g.started(ls)
	waitChildren(g.t, g.c, root+"/queue-ls-lock", 2) // the lock and its marker
}

// nodes: a persistent node, a group member, a discovery registration.
func (g *goLayout) nodes(root string) {
	pn, err := nodes.NewPersistentNode(g.c, root+"/persistent-node", nodes.Persistent, []byte("pnode"))
	g.check(err)
	g.started(pn)
	g.check(pn.WaitReady(g.ctx))
	gm, err := nodes.NewGroupMember(g.c, root+"/group", "go-member", []byte("go-member:8080"))
	g.check(err)
	g.started(gm)
	g.check(gm.WaitReady(g.ctx))
	d, err := discovery.New(g.c, root+"/services")
	g.check(err)
	g.started(d)
	g.check(d.Register(g.ctx, &discovery.Instance{Name: "orders", ID: "go-1", Address: "10.0.0.1", Port: 8080}))
}
