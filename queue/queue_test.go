package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// collector is a Consumer that records what it gets.
type collector struct {
	mu   sync.Mutex
	got  []string
	msgs []*queue.Message
	at   []time.Time
	fail func(m *queue.Message) error
}

func (c *collector) Consume(ctx context.Context, m *queue.Message) error {
	c.mu.Lock()
	for _, it := range m.Items {
		c.got = append(c.got, string(it))
	}
	c.msgs = append(c.msgs, m)
	c.at = append(c.at, time.Now())
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return fail(m)
	}
	return nil
}

func (c *collector) items() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

func (c *collector) wait(t *testing.T, n int) []string {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("%d items consumed", n), func() bool { return len(c.items()) >= n })
	return c.items()
}

func closeQ(t *testing.T, close func(context.Context) error) {
	t.Cleanup(func() { assert.NoError(t, close(context.Background())) })
}

// A Queue delivers in put order, a PutMulti as one Message; the nodes are
// Curator's (queue-<seq>, framed); Close ends the consumer.
func TestQueueOrder(t *testing.T) {
	zkc := testutil_server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, zkc.Servers(), recipes.WithNamespace("app"))
	prod, err := queue.New(c, "/dq/order")
	require.NoError(t, err)
	for i := range 5 {
		require.NoError(t, prod.Put(ctx, fmt.Appendf(nil, "%d", i)))
	}
	require.NoError(t, prod.PutMulti(ctx, [][]byte{[]byte("5"), []byte("6")}))
	data, _, err := c.Get(ctx, "/dq/order/queue-0000000000")
	require.NoError(t, err)
	assert.Equal(t, queue.Encode([][]byte{[]byte("0")}), data)
	n, err := prod.Len(ctx)
	require.NoError(t, err)
	assert.Equal(t, 6, n)

	col := &collector{}
	cons, err := queue.New(connect(t, zkc.Servers(), recipes.WithNamespace("app")), "/dq/order", queue.WithConsumer(col))
	require.NoError(t, err)
	require.NoError(t, cons.Start(ctx))
	closeQ(t, cons.Close)
	assert.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6"}, col.wait(t, 7))
	assert.Equal(t, "/dq/order/queue-0000000000", col.msgs[0].Node)
	assert.Len(t, col.msgs, 6)
	assert.Nil(t, col.msgs[0].Done(), "normal mode: nothing to lose")
	assert.NoError(t, col.msgs[0].Ack(ctx))
	require.NoError(t, prod.Put(ctx, []byte("7")), "an item put while the consumer waits")
	col.wait(t, 8)
	require.NoError(t, cons.Close(ctx))
	assert.ErrorIs(t, cons.Start(ctx), recipes.ErrClosed)
}

func testutil_server(t *testing.T) *zktest.Cluster { return zktest.Start(t) }

// The id, priority and delay queues: Curator's names and orders; an id's
// items can be removed; a delayed item waits until it is due.
func TestQueueKinds(t *testing.T) {
	zkc := testutil_server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, zkc.Servers())

	idq, err := queue.NewID(c, "/dq/id")
	require.NoError(t, err)
	require.NoError(t, idq.Put(ctx, "a/b", []byte("1")))
	require.NoError(t, idq.Put(ctx, "x", []byte("2")))
	require.NoError(t, idq.Put(ctx, "a/b", []byte("3")))
	kids, _, err := c.Children(ctx, "/dq/id")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"queue-|a_b|0000000000", "queue-|x|0000000001", "queue-|a_b|0000000002"}, kids)
	removed, err := idq.Remove(ctx, "a/b")
	require.NoError(t, err)
	assert.Equal(t, 2, removed)
	col := &collector{}
	idc, err := queue.NewID(connect(t, zkc.Servers()), "/dq/id", queue.WithConsumer(col))
	require.NoError(t, err)
	require.NoError(t, idc.Start(ctx))
	closeQ(t, idc.Close)
	assert.Equal(t, []string{"2"}, col.wait(t, 1))
	assert.Equal(t, "x", col.msgs[0].ID)

	pq, err := queue.NewPriority(c, "/dq/prio")
	require.NoError(t, err)
	for _, p := range []int32{5, -3, 0, 5, -1 << 31, 100} {
		require.NoError(t, pq.Put(ctx, p, fmt.Appendf(nil, "%d", p)))
	}
	kids, _, err = c.Children(ctx, "/dq/prio")
	require.NoError(t, err)
	assert.Contains(t, kids, "queue-0FFFFFFFD0000000001")
	pcol := &collector{}
	pc, err := queue.NewPriority(connect(t, zkc.Servers()), "/dq/prio", queue.WithConsumer(pcol))
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	closeQ(t, pc.Close)
	assert.Equal(t, []string{"-2147483648", "-3", "0", "5", "5", "100"}, pcol.wait(t, 6))

	dq, err := queue.NewDelay(c, "/dq/delay")
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, dq.Put(ctx, start.Add(1500*time.Millisecond), []byte("late")))
	require.NoError(t, dq.Put(ctx, start.Add(-time.Second), []byte("due")))
	require.NoError(t, dq.Put(ctx, start.Add(700*time.Millisecond), []byte("soon")))
	kids, _, err = c.Children(ctx, "/dq/delay")
	require.NoError(t, err)
	assert.Contains(t, kids, fmt.Sprintf("queue-|%08X|0000000001", start.Add(-time.Second).UnixMilli()))
	dcol := &collector{}
	dc, err := queue.NewDelay(connect(t, zkc.Servers()), "/dq/delay", queue.WithConsumer(dcol))
	require.NoError(t, err)
	require.NoError(t, dc.Start(ctx))
	closeQ(t, dc.Close)
	assert.Equal(t, []string{"due", "soon", "late"}, dcol.wait(t, 3))
	dcol.mu.Lock()
	defer dcol.mu.Unlock()
	assert.GreaterOrEqual(t, dcol.at[1].Sub(start), 700*time.Millisecond, "not before it is due")
	assert.GreaterOrEqual(t, dcol.at[2].Sub(start), 1500*time.Millisecond)
}

// Lock-safety mode: the lock node is Curator's lockPath/<item>, held while
// Consume runs; a failing Consume puts the item back in one transaction
// under its own name (an id queue's keeps its id: CURATOR-224; the name
// does not grow: CURATOR-56); ErrorDelete drops it instead.
func TestQueueLockSafetyRequeue(t *testing.T) {
	zkc := testutil_server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, zkc.Servers())
	prod, err := queue.NewID(c, "/ls/q", queue.WithLockPath("/ls/locks"))
	require.NoError(t, err)
	require.NoError(t, prod.Put(ctx, "job|7", []byte("work")))

	fails := 2
	col := &collector{}
	col.fail = func(m *queue.Message) error {
		kids, _, err := c.Children(ctx, "/ls/locks")
		require.NoError(t, err)
		name := m.Node[strings.LastIndex(m.Node, "/")+1:]
		assert.Contains(t, kids, name, "Curator's lock node")
		require.NotNil(t, m.Done())
		select {
		case <-m.Done():
			t.Error("Done closed while held")
		default:
		}
		if fails > 0 {
			fails--
			return errors.New("not yet")
		}
		return nil
	}
	cons, err := queue.NewID(connect(t, zkc.Servers()), "/ls/q", queue.WithConsumer(col), queue.WithLockPath("/ls/locks"))
	require.NoError(t, err)
	require.NoError(t, cons.Start(ctx))
	closeQ(t, cons.Close)
	assert.Equal(t, []string{"work", "work", "work"}, col.wait(t, 3))
	col.mu.Lock()
	nodes := []string{col.msgs[0].Node, col.msgs[1].Node, col.msgs[2].Node}
	ids := []string{col.msgs[0].ID, col.msgs[1].ID, col.msgs[2].ID}
	done := col.msgs[2].Done()
	col.mu.Unlock()
	assert.Equal(t, []string{"/ls/q/queue-|job_7|0000000000", "/ls/q/queue-|job_7|0000000001", "/ls/q/queue-|job_7|0000000002"}, nodes)
	assert.Equal(t, []string{"job_7", "job_7", "job_7"}, ids)
	eventually(t, 10*time.Second, "the queue and the locks are empty", func() bool {
		a, _, err1 := c.Children(ctx, "/ls/q")
		b, _, err2 := c.Children(ctx, "/ls/locks")
		return err1 == nil && err2 == nil && len(a) == 0 && len(b) == 0
	})
	select {
	case <-done:
	default:
		t.Error("Done stays open after the ack")
	}

	del := &collector{fail: func(*queue.Message) error { return errors.New("bad") }}
	dq, err := queue.New(connect(t, zkc.Servers()), "/ls/del", queue.WithConsumer(del), queue.WithLockPath("/ls/dlocks"), queue.WithErrorMode(queue.ErrorDelete))
	require.NoError(t, err)
	require.NoError(t, dq.Start(ctx))
	closeQ(t, dq.Close)
	require.NoError(t, dq.Put(ctx, []byte("x")))
	del.wait(t, 1)
	eventually(t, 10*time.Second, "the failed item is deleted", func() bool {
		n, err := dq.Len(ctx)
		return err == nil && n == 0
	})
	assert.Len(t, del.items(), 1)
}

// CURATOR-623: a consumer whose session expired while it waited sees the
// items put meanwhile once it is back.
func TestQueueResyncAfterSessionExpiry(t *testing.T) {
	zkc := testutil_server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	admin := connect(t, zkc.Servers())
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second))
	col := &collector{}
	cons, err := queue.New(c, "/resync/q", queue.WithConsumer(col))
	require.NoError(t, err)
	require.NoError(t, cons.Start(ctx))
	closeQ(t, cons.Close)
	prod, err := queue.New(admin, "/resync/q")
	require.NoError(t, err)
	require.NoError(t, prod.Put(ctx, []byte("before")))
	col.wait(t, 1)
	_, err = c.Create(ctx, "/resync/eph", nil, zk.FlagEphemeral)
	require.NoError(t, err)

	proxy.Blackhole()
	eventually(t, 20*time.Second, "the server expires the session", func() bool {
		ok, _, err := admin.Exists(ctx, "/resync/eph")
		return err == nil && !ok
	})
	require.NoError(t, prod.Put(ctx, []byte("during")))
	proxy.Restore()
	assert.Equal(t, []string{"before", "during"}, col.wait(t, 2))
}

// CURATOR-605: a lock-safety consumer whose session expires while it
// works on an item. The item goes to another consumer once the lock went
// with the session, and the first one is told: its Done closed, and its
// Ack returns ErrLockLost without deleting anything. No item is lost, and
// every duplicate delivery is one whose consumer was told.
func TestQueueLockSafetySessionExpiredMidItem(t *testing.T) {
	zkc := testutil_server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	admin := connect(t, zkc.Servers())
	const path, locks, items = "/lsx/q", "/lsx/locks", 20

	type delivery struct {
		who, item string
		ackErr    error
		told      bool // Done had closed when Ack returned
	}
	var (
		mu         sync.Mutex
		deliveries []delivery
	)
	record := func(who string, m *queue.Message, err error) {
		told := false
		select {
		case <-m.Done():
			told = true
		default:
		}
		mu.Lock()
		deliveries = append(deliveries, delivery{who, string(m.Data()), err, told})
		mu.Unlock()
	}
	prod, err := queue.New(admin, path, queue.WithLockPath(locks))
	require.NoError(t, err)
	for i := range items {
		require.NoError(t, prod.Put(ctx, fmt.Appendf(nil, "%02d", i)))
	}

	inHand := make(chan *queue.Message, 1)
	release := make(chan struct{})
	first := true
	ca := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second))
	a, err := queue.New(ca, path, queue.WithLockPath(locks), queue.WithConsumer(queue.ConsumerFunc(func(ctx context.Context, m *queue.Message) error {
		if first {
			first = false
			inHand <- m
			<-release
		}
		record("a", m, m.Ack(ctx))
		return nil
	})))
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	closeQ(t, a.Close)
	var held *queue.Message
	select {
	case held = <-inHand:
	case <-ctx.Done():
		t.Fatal("consumer a got no item")
	}
	assert.Equal(t, "00", string(held.Data()))
	lockNode := locks + "/queue-0000000000"

	bHolds := make(chan struct{})
	bGo := make(chan struct{})
	b, err := queue.New(connect(t, zkc.Servers()), path, queue.WithLockPath(locks), queue.WithConsumer(queue.ConsumerFunc(func(ctx context.Context, m *queue.Message) error {
		if string(m.Data()) == "00" { // a's item: b holds it while a acks
			close(bHolds)
			<-bGo
		}
		record("b", m, m.Ack(ctx))
		return nil
	})))
	require.NoError(t, err)
	require.NoError(t, b.Start(ctx))
	closeQ(t, b.Close)
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(deliveries)
	}
	eventually(t, 30*time.Second, "b consumes the items a does not hold", func() bool { return count() == items-1 })
	ok, _, err := admin.Exists(ctx, lockNode)
	require.NoError(t, err)
	require.True(t, ok, "a still holds item 00")

	proxy.Blackhole()
	select {
	case <-held.Done():
	case <-ctx.Done():
		t.Fatal("a's Done did not close when its connection went")
	}
	select {
	case <-bHolds:
	case <-ctx.Done():
		t.Fatal("b did not get item 00 once a's session was gone")
	}
	proxy.Restore()
	close(release)
	eventually(t, 30*time.Second, "a acks", func() bool { return count() == items })
	// a's Ack was refused: b's item and b's lock are still there.
	ok, _, err = admin.Exists(ctx, path+"/queue-0000000000")
	require.NoError(t, err)
	assert.True(t, ok, "a's refused Ack left the item b holds")
	ok, _, err = admin.Exists(ctx, lockNode)
	require.NoError(t, err)
	assert.True(t, ok, "and b's lock node")
	close(bGo)
	eventually(t, 30*time.Second, "b acks", func() bool { return count() == items+1 })

	mu.Lock()
	defer mu.Unlock()
	per := map[string][]delivery{}
	for _, d := range deliveries {
		per[d.item] = append(per[d.item], d)
	}
	require.Len(t, per, items, "no item lost")
	for item, ds := range per {
		if len(ds) == 1 {
			assert.NoError(t, ds[0].ackErr, item)
			continue
		}
		told := 0
		for _, d := range ds {
			if d.ackErr != nil {
				assert.ErrorIs(t, d.ackErr, recipes.ErrLockLost, item)
				assert.True(t, d.told, "%s: Done closed for %s", item, d.who)
				told++
			}
		}
		assert.Equal(t, len(ds)-1, told, "item %s: every duplicate delivery but one was told: %+v", item, ds)
	}
	require.Len(t, per["00"], 2)
	assert.Equal(t, "a", per["00"][0].who)
	assert.ErrorContains(t, per["00"][0].ackErr, "zkrecipes: queue /lsx/q: ack /lsx/q/queue-0000000000: ")
	assert.Equal(t, "b", per["00"][1].who)
	assert.NoError(t, per["00"][1].ackErr)
	eventually(t, 10*time.Second, "no lock left (a tries the rest of its old list)", func() bool {
		kids, _, err := admin.Children(ctx, locks)
		return err == nil && len(kids) == 0
	})
	n, err := prod.Len(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
}

// IDQueue.Remove in lock-safety mode leaves an item another consumer has
// locked, removes the others of the id, and leaves no lock behind.
func TestIDQueueRemoveUnderLock(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := recipes.WithNamespace(testutil.Namespace(t))
	c := connect(t, zkc.Servers(), ns)
	q, err := queue.NewID(c, "/idrm/q", queue.WithLockPath("/idrm/locks"))
	require.NoError(t, err)
	require.NoError(t, q.Start(ctx))
	closeQ(t, q.Close)
	for _, id := range []string{"a", "b", "a", "a"} {
		require.NoError(t, q.Put(ctx, id, []byte(id)))
	}
	// Another consumer holds the first "a".
	_, err = connect(t, zkc.Servers(), ns).Create(ctx, "/idrm/locks/queue-|a|0000000000", nil, zk.FlagEphemeral)
	require.NoError(t, err)
	n, err := q.Remove(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	kids, _, err := c.Children(ctx, "/idrm/q")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"queue-|a|0000000000", "queue-|b|0000000001"}, kids)
	locks, _, err := c.Children(ctx, "/idrm/locks")
	require.NoError(t, err)
	assert.Equal(t, []string{"queue-|a|0000000000"}, locks, "only the other consumer's lock")
}

// errorLog keeps the messages of the error records a client logs.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelError }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *errorLog) WithGroup(string) slog.Handler      { return l }

func (l *errorLog) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}

// A lock-safety consumer that returns without calling Ack after its lock
// went with its session deletes nothing: the queue's own fenced ack is
// refused, and it logs so at error level. The item is delivered again
// (here to the same consumer, in its new session).
func TestQueueLockLostWithoutAckIsLogged(t *testing.T) {
	zkc := testutil_server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	admin := connect(t, zkc.Servers())
	const path, locks = "/lost/q", "/lost/locks"
	prod, err := queue.New(admin, path)
	require.NoError(t, err)
	require.NoError(t, prod.Put(ctx, []byte("x")))

	log := &errorLog{}
	ca := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second), recipes.WithLogger(slog.New(log)))
	inHand, release := make(chan struct{}), make(chan struct{})
	var deliveries atomic.Int32
	a, err := queue.New(ca, path, queue.WithLockPath(locks), queue.WithConsumer(queue.ConsumerFunc(func(context.Context, *queue.Message) error {
		if deliveries.Add(1) == 1 {
			close(inHand)
			<-release
		}
		return nil // no Ack: the queue acks
	})))
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	closeQ(t, a.Close)
	<-inHand
	proxy.Blackhole()
	eventually(t, 30*time.Second, "a's session expires, and its lock with it", func() bool {
		ok, _, err := admin.Exists(ctx, locks+"/queue-0000000000")
		return err == nil && !ok
	})
	proxy.Restore()
	close(release)
	eventually(t, 30*time.Second, "the refused ack is logged at error", func() bool { return log.has("lock was lost") })
	eventually(t, 30*time.Second, "the item is delivered again, and then gone", func() bool {
		n, err := prod.Len(ctx)
		return err == nil && n == 0 && deliveries.Load() == 2
	})
}

// WithMaxItems: a Put waits while the queue is full, until an item goes
// or its ctx ends.
func TestQueueMaxItems(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, zkc.Servers())
	q, err := queue.New(c, "/bounded/q", queue.WithMaxItems(2))
	require.NoError(t, err)
	require.NoError(t, q.Put(ctx, []byte("1")))
	require.NoError(t, q.Put(ctx, []byte("2")))
	tctx, tcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = q.Put(tctx, []byte("3"))
	tcancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "zkrecipes: queue /bounded/q: put: waiting for /bounded/q to have room")
	put := make(chan error, 1)
	go func() { put <- q.Put(ctx, []byte("3")) }()
	col := &collector{}
	cons, err := queue.New(connect(t, zkc.Servers()), "/bounded/q", queue.WithConsumer(col))
	require.NoError(t, err)
	require.NoError(t, cons.Start(ctx))
	closeQ(t, cons.Close)
	require.NoError(t, <-put, "room once the consumer took items")
	assert.Equal(t, []string{"1", "2", "3"}, col.wait(t, 3))
	_, err = queue.New(c, "/bounded/q", queue.WithMaxItems(0))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
}
