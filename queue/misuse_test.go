package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// family is what the four queues of the DistributedQueue family share,
// for the rows that try each of them.
type family interface {
	Start(context.Context) error
	Close(context.Context) error
	Len(context.Context) (int, error)
	Path() string
}

// newFamily makes the four queues at path<kind>, each with opts.
func newFamily(t *testing.T, c *recipes.Client, path string, opts ...queue.Option) map[string]family {
	t.Helper()
	q, err1 := queue.New(c, path+"q", opts...)
	id, err2 := queue.NewID(c, path+"id", opts...)
	pq, err3 := queue.NewPriority(c, path+"p", opts...)
	dq, err4 := queue.NewDelay(c, path+"d", opts...)
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return map[string]family{"Queue": q, "IDQueue": id, "PriorityQueue": pq, "DelayQueue": dq}
}

// put puts one item on any queue of the family.
func put(ctx context.Context, f family, item []byte) error {
	switch q := f.(type) {
	case *queue.Queue:
		return q.Put(ctx, item)
	case *queue.IDQueue:
		return q.Put(ctx, "id", item)
	case *queue.PriorityQueue:
		return q.Put(ctx, 1, item)
	case *queue.DelayQueue:
		return q.Put(ctx, time.Now(), item)
	}
	panic("not a queue")
}

// TestMisuse calls every method of every type of package queue on a nil
// pointer and a zero value, with bad arguments and options, before Start,
// after Close, twice and on a closed client, and checks that each returns
// an error matching the right sentinel (the same "not made" error from
// every method of a nil or zero queue), never panics and never hangs.
func TestMisuse(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ns := recipes.WithNamespace(testutil.Namespace(t))
	c := connect(t, zkc.Servers(), ns)
	ctx := context.Background()
	var nilCtx context.Context
	invalidArg := []error{recipes.ErrInvalidArgument}
	var cases testutil.MisuseTable
	add := cases.Add
	addNotMade(&cases)
	addConstructors(&cases, c)

	q, err := queue.New(c, "/m/q")
	if err != nil {
		t.Fatal(err)
	}
	id, err := queue.NewID(c, "/m/id")
	if err != nil {
		t.Fatal(err)
	}
	dq, err := queue.NewDelay(c, "/m/d")
	if err != nil {
		t.Fatal(err)
	}
	pq, err := queue.NewPriority(c, "/m/p")
	if err != nil {
		t.Fatal(err)
	}
	sq, err := queue.NewSimple(c, "/m/s")
	if err != nil {
		t.Fatal(err)
	}
	add("bad arguments", nil, testutil.MisuseEach(invalidArg, []testutil.MisuseSub{
		{Name: "Queue.PutMulti(no items)", Call: func() error { return q.PutMulti(ctx, nil) }},
		{Name: "IDQueue.Put(empty id)", Call: func() error { return id.Put(ctx, "", nil) }},
		{Name: "IDQueue.PutMulti(no items)", Call: func() error { return id.PutMulti(ctx, "a", nil) }},
		{Name: "IDQueue.Remove(empty id)", Call: func() error { _, err := id.Remove(ctx, ""); return err }},
		{Name: "PriorityQueue.PutMulti(no items)", Call: func() error { return pq.PutMulti(ctx, 1, nil) }},
		{Name: "DelayQueue.Put(zero time)", Call: func() error { return dq.Put(ctx, time.Time{}, nil) }},
		{Name: "DelayQueue.PutMulti(no items)", Call: func() error { return dq.PutMulti(ctx, time.Now(), nil) }},
	}))
	add("nil ctx", nil, testutil.MisuseEach(invalidArg, []testutil.MisuseSub{
		{Name: "Queue.Start", Call: func() error { return q.Start(nilCtx) }},
		{Name: "Queue.Close", Call: func() error { return q.Close(nilCtx) }},
		{Name: "Queue.Put", Call: func() error { return q.Put(nilCtx, nil) }},
		{Name: "Queue.Len", Call: func() error { _, err := q.Len(nilCtx); return err }},
		{Name: "IDQueue.Put", Call: func() error { return id.Put(nilCtx, "a", nil) }},
		{Name: "IDQueue.Remove", Call: func() error { _, err := id.Remove(nilCtx, "a"); return err }},
		{Name: "PriorityQueue.Put", Call: func() error { return pq.Put(nilCtx, 1, nil) }},
		{Name: "DelayQueue.Put", Call: func() error { return dq.Put(nilCtx, time.Now(), nil) }},
		{Name: "SimpleQueue.Offer", Call: func() error { return sq.Offer(nilCtx, nil) }},
		{Name: "SimpleQueue.Take", Call: func() error { _, err := sq.Take(nilCtx); return err }},
		{Name: "SimpleQueue.Poll", Call: func() error { _, _, err := sq.Poll(nilCtx); return err }},
		{Name: "SimpleQueue.Peek", Call: func() error { _, _, err := sq.Peek(nilCtx); return err }},
		{Name: "SimpleQueue.Len", Call: func() error { _, err := sq.Len(nilCtx); return err }},
	}))
	add("Decode(nil)", []error{recipes.ErrCorrupt}, func() error { _, err := queue.Decode(nil); return err })
	add("IDQueue.Remove of no item", nil, func() error { _, err := id.Remove(ctx, "none"); return err })
	add("SimpleQueue.Poll of an empty queue", nil, func() error { _, _, err := sq.Poll(ctx); return err })

	addLifecycle(&cases, newFamily(t, c, "/life/"), "")
	addLifecycle(&cases, newFamily(t, c, "/consumer/", queue.WithConsumer(queue.ConsumerFunc(
		func(context.Context, *queue.Message) error { return nil }))), " (consumer)")
	for name, f := range newFamily(t, c, "/never/") {
		add(name+": Close before Start", nil, func() error { return f.Close(ctx) })
		add(name+": Start after Close (never started)", []error{recipes.ErrClosed}, func() error { return f.Start(ctx) })
	}
	addMessages(t, &cases, c)
	addClosedClient(t, &cases, zkc.Servers(), ns)
	testutil.RunMisuse(t, cases)
}

// addLifecycle adds Start twice, Close twice, Start after Close and the
// calls after Close for each queue of fam.
func addLifecycle(cases *testutil.MisuseTable, fam map[string]family, note string) {
	ctx := context.Background()
	add := cases.Add
	for name, f := range fam {
		name += note
		add(name+": Start twice", []error{recipes.ErrAlreadyStarted}, func() error {
			if err := f.Start(ctx); err != nil {
				return err
			}
			return f.Start(ctx)
		})
		add(name+": Close twice", nil, func() error {
			if err := f.Close(ctx); err != nil {
				return err
			}
			return f.Close(ctx)
		})
		add(name+": Start after Close", []error{recipes.ErrClosed}, func() error { return f.Start(ctx) })
		// A producer needs no Start: a Put after Close is not refused.
		cases.Tolerate(name+": Put after Close", []error{recipes.ErrClosed}, func() error { return put(ctx, f, []byte("x")) })
		cases.Tolerate(name+": Len after Close", []error{recipes.ErrClosed}, func() error { _, err := f.Len(ctx); return err })
		add(name+": Path after Close", nil, func() error { _ = f.Path(); return nil })
	}
}

// addConstructors adds the rows of bad constructor arguments and options.
func addConstructors(cases *testutil.MisuseTable, c *recipes.Client) {
	add := cases.Add
	type ctor func(*recipes.Client, string, ...queue.Option) error
	ctors := map[string]ctor{
		"New": func(c *recipes.Client, p string, o ...queue.Option) error {
			_, err := queue.New(c, p, o...)
			return err
		},
		"NewID": func(c *recipes.Client, p string, o ...queue.Option) error {
			_, err := queue.NewID(c, p, o...)
			return err
		},
		"NewPriority": func(c *recipes.Client, p string, o ...queue.Option) error {
			_, err := queue.NewPriority(c, p, o...)
			return err
		},
		"NewDelay": func(c *recipes.Client, p string, o ...queue.Option) error {
			_, err := queue.NewDelay(c, p, o...)
			return err
		},
		"NewSimple": func(c *recipes.Client, p string, o ...queue.Option) error {
			_, err := queue.NewSimple(c, p)
			return err
		},
	}
	for name, mk := range ctors {
		add(name+"(nil client)", []error{recipes.ErrNilClient}, func() error { return mk(nil, "/m/q") })
		add(name+"(relative path)", []error{recipes.ErrInvalidPath}, func() error { return mk(c, "m/q") })
		add(name+"(empty path)", []error{recipes.ErrInvalidPath}, func() error { return mk(c, "") })
		if name == "NewSimple" {
			continue
		}
		add(name+"(bad options)", nil, testutil.MisuseEach([]error{recipes.ErrInvalidArgument, recipes.ErrInvalidPath}, []testutil.MisuseSub{
			{Name: "nil Option", Call: func() error { return mk(c, "/m/q", nil) }},
			{Name: "WithConsumer(nil)", Call: func() error { return mk(c, "/m/q", queue.WithConsumer(nil)) }},
			{Name: "WithConsumer(ConsumerFunc(nil))", Call: func() error { return mk(c, "/m/q", queue.WithConsumer(queue.ConsumerFunc(nil))) }},
			{Name: "WithErrorMode(9)", Call: func() error { return mk(c, "/m/q", queue.WithErrorMode(9)) }},
			{Name: "WithMaxItems(0)", Call: func() error { return mk(c, "/m/q", queue.WithMaxItems(0)) }},
			{Name: "WithLogger(nil)", Call: func() error { return mk(c, "/m/q", queue.WithLogger(nil)) }},
			{Name: "WithUnreadable(nil)", Call: func() error { return mk(c, "/m/q", queue.WithUnreadable(nil)) }},
			{Name: "WithLockPath(empty)", Call: func() error { return mk(c, "/m/q", queue.WithLockPath("")) }},
			{Name: "WithLockPath(relative)", Call: func() error { return mk(c, "/m/q", queue.WithLockPath("locks")) }},
			{Name: "WithMaxShards(2), a Sharder's", Call: func() error { return mk(c, "/m/q", queue.WithMaxShards(2)) }},
		}))
		add(name+"(lock path the queue's)", []error{recipes.ErrInvalidPath}, func() error { return mk(c, "/m/q", queue.WithLockPath("/m/q")) })
		add(name+"(lock path under the queue)", []error{recipes.ErrInvalidPath}, func() error { return mk(c, "/m/q", queue.WithLockPath("/m/q/locks")) })
	}
}

// addMessages adds the rows of the Messages a queue hands its consumer,
// in normal mode and in lock-safety mode, once consumed.
func addMessages(t *testing.T, cases *testutil.MisuseTable, c *recipes.Client) {
	ctx := context.Background()
	var nilCtx context.Context
	add := cases.Add
	got := map[string]*queue.Message{}
	for mode, opts := range map[string][]queue.Option{"normal": nil, "lock-safety": {queue.WithLockPath("/msg/locks")}} {
		ch := make(chan *queue.Message, 1)
		consume := queue.ConsumerFunc(func(_ context.Context, m *queue.Message) error { ch <- m; return nil })
		q, err := queue.New(c, "/msg/"+mode, append(opts, queue.WithConsumer(consume))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := q.Put(ctx, []byte("x")); err != nil {
			t.Fatal(err)
		}
		select {
		case got[mode] = <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no message", mode)
		}
		if err := q.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	normal, locked := got["normal"], got["lock-safety"]
	add("normal Message.Fenced", []error{recipes.ErrNotHeld}, func() error { _, err := normal.Fenced(ctx); return err })
	add("normal Message.Ack after Consume", nil, func() error { return normal.Ack(ctx) })
	add("lock-safety Message.Ack after Consume", nil, func() error { return locked.Ack(ctx) })
	add("Message.Ack(nil ctx)", []error{recipes.ErrInvalidArgument}, func() error { return normal.Ack(nilCtx) })
	add("Message reads after Consume", nil, func() error {
		for _, m := range got {
			_, _, _ = m.Data(), m.Done(), m.IsLost()
		}
		return nil
	})
}

// addClosedClient adds the rows of queues whose client is closed.
func addClosedClient(t *testing.T, cases *testutil.MisuseTable, servers []string, ns recipes.Option) {
	ctx := context.Background()
	cc, err := testutil.Dial(ctx, servers, ns)
	if err != nil {
		t.Fatal(err)
	}
	fam := newFamily(t, cc, "/closed/")
	sq, err := queue.NewSimple(cc, "/closed/s")
	if err != nil {
		t.Fatal(err)
	}
	if err := cc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	subs := []testutil.MisuseSub{
		{Name: "SimpleQueue.Offer", Call: func() error { return sq.Offer(ctx, nil) }},
		{Name: "SimpleQueue.Take", Call: func() error { _, err := sq.Take(ctx); return err }},
		{Name: "SimpleQueue.Poll", Call: func() error { _, _, err := sq.Poll(ctx); return err }},
		{Name: "SimpleQueue.Peek", Call: func() error { _, _, err := sq.Peek(ctx); return err }},
		{Name: "SimpleQueue.Len", Call: func() error { _, err := sq.Len(ctx); return err }},
	}
	for name, f := range fam {
		subs = append(subs,
			testutil.MisuseSub{Name: name + ".Start", Call: func() error { return f.Start(ctx) }},
			testutil.MisuseSub{Name: name + ".Put", Call: func() error { return put(ctx, f, nil) }},
			testutil.MisuseSub{Name: name + ".Len", Call: func() error { _, err := f.Len(ctx); return err }})
	}
	cases.Add("on a closed client", nil, testutil.MisuseEach([]error{recipes.ErrClientClosed}, subs))
}

// addNotMade adds a row for every method of every type on a nil pointer
// and a zero value: each returns the not-made error (ErrInvalidArgument),
// or nothing, and never panics.
func addNotMade(cases *testutil.MisuseTable) {
	ctx := context.Background()
	invalidArg := []error{recipes.ErrInvalidArgument}
	add := cases.Add
	items := [][]byte{[]byte("x")}
	for name, q := range map[string]*queue.Queue{"nil": nil, "zero": {}} {
		add(name+" Queue.Start", invalidArg, func() error { return q.Start(ctx) })
		add(name+" Queue.Close", invalidArg, func() error { return q.Close(ctx) })
		add(name+" Queue.Put", invalidArg, func() error { return q.Put(ctx, nil) })
		add(name+" Queue.PutMulti", invalidArg, func() error { return q.PutMulti(ctx, items) })
		add(name+" Queue.Len", invalidArg, func() error { _, err := q.Len(ctx); return err })
		add(name+" Queue reads", nil, func() error { _ = q.Path(); return nil })
	}
	for name, q := range map[string]*queue.IDQueue{"nil": nil, "zero": {}} {
		add(name+" IDQueue.Start", invalidArg, func() error { return q.Start(ctx) })
		add(name+" IDQueue.Close", invalidArg, func() error { return q.Close(ctx) })
		add(name+" IDQueue.Put", invalidArg, func() error { return q.Put(ctx, "a", nil) })
		add(name+" IDQueue.PutMulti", invalidArg, func() error { return q.PutMulti(ctx, "a", items) })
		add(name+" IDQueue.Remove", invalidArg, func() error { _, err := q.Remove(ctx, "a"); return err })
		add(name+" IDQueue.Len", invalidArg, func() error { _, err := q.Len(ctx); return err })
		add(name+" IDQueue reads", nil, func() error { _ = q.Path(); return nil })
	}
	for name, q := range map[string]*queue.PriorityQueue{"nil": nil, "zero": {}} {
		add(name+" PriorityQueue.Start", invalidArg, func() error { return q.Start(ctx) })
		add(name+" PriorityQueue.Close", invalidArg, func() error { return q.Close(ctx) })
		add(name+" PriorityQueue.Put", invalidArg, func() error { return q.Put(ctx, 1, nil) })
		add(name+" PriorityQueue.PutMulti", invalidArg, func() error { return q.PutMulti(ctx, 1, items) })
		add(name+" PriorityQueue.Len", invalidArg, func() error { _, err := q.Len(ctx); return err })
		add(name+" PriorityQueue reads", nil, func() error { _ = q.Path(); return nil })
	}
	for name, q := range map[string]*queue.DelayQueue{"nil": nil, "zero": {}} {
		add(name+" DelayQueue.Start", invalidArg, func() error { return q.Start(ctx) })
		add(name+" DelayQueue.Close", invalidArg, func() error { return q.Close(ctx) })
		add(name+" DelayQueue.Put", invalidArg, func() error { return q.Put(ctx, time.Now(), nil) })
		add(name+" DelayQueue.PutMulti", invalidArg, func() error { return q.PutMulti(ctx, time.Now(), items) })
		add(name+" DelayQueue.Len", invalidArg, func() error { _, err := q.Len(ctx); return err })
		add(name+" DelayQueue reads", nil, func() error { _ = q.Path(); return nil })
	}
	for name, q := range map[string]*queue.SimpleQueue{"nil": nil, "zero": {}} {
		add(name+" SimpleQueue.Offer", invalidArg, func() error { return q.Offer(ctx, nil) })
		add(name+" SimpleQueue.Take", invalidArg, func() error { _, err := q.Take(ctx); return err })
		add(name+" SimpleQueue.Poll", invalidArg, func() error { _, _, err := q.Poll(ctx); return err })
		add(name+" SimpleQueue.Peek", invalidArg, func() error { _, _, err := q.Peek(ctx); return err })
		add(name+" SimpleQueue.Len", invalidArg, func() error { _, err := q.Len(ctx); return err })
		add(name+" SimpleQueue reads", nil, func() error { _ = q.Path(); return nil })
	}
	for name, m := range map[string]*queue.Message{"nil": nil, "zero": {}} {
		add(name+" Message.Ack", invalidArg, func() error { return m.Ack(ctx) })
		add(name+" Message.Fenced", invalidArg, func() error { _, err := m.Fenced(ctx); return err })
		add(name+" Message reads", nil, func() error { _, _, _ = m.Data(), m.Done(), m.IsLost(); return nil })
	}
}
