package queue_test

// Interop: real Apache Curator queues (Java, driven through
// internal/interop: 5.4 by default, 5.7.1 with scripts/zk39-env.sh)
// produce for Go consumers and consume what Go produces, on each queue
// type; and a Curator consumer SIGKILLed mid-item in lock-safety mode
// leaves its item to a Go consumer.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// javaItems returns the items a Curator consumer printed.
func javaItems(p *interop.Proc) []string {
	var out []string
	for _, l := range p.Lines() {
		if s, ok := strings.CutPrefix(l, "ITEM "); ok {
			out = append(out, s)
		}
	}
	return out
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return out
}

// goQueue is one Go queue of a kind, producing or consuming.
type goQueue struct {
	start func(context.Context) error
	close func(context.Context) error
	put   func(ctx context.Context, i, n int, item []byte) error
}

func newGoQueue(t *testing.T, c *recipes.Client, kind, path string, opts ...queue.Option) goQueue {
	t.Helper()
	switch kind {
	case "plain":
		q, err := queue.New(c, path, opts...)
		require.NoError(t, err)
		return goQueue{q.Start, q.Close, func(ctx context.Context, _, _ int, item []byte) error { return q.Put(ctx, item) }}
	case "id":
		q, err := queue.NewID(c, path, opts...)
		require.NoError(t, err)
		return goQueue{q.Start, q.Close, func(ctx context.Context, i, _ int, item []byte) error {
			return q.Put(ctx, fmt.Sprintf("job/%d", i%3), item)
		}}
	case "priority":
		q, err := queue.NewPriority(c, path, opts...)
		require.NoError(t, err)
		return goQueue{q.Start, q.Close, func(ctx context.Context, i, n int, item []byte) error {
			return q.Put(ctx, int32(n-i), item)
		}}
	case "delay":
		q, err := queue.NewDelay(c, path, opts...)
		require.NoError(t, err)
		due := time.Now().Add(500 * time.Millisecond)
		return goQueue{q.Start, q.Close, func(ctx context.Context, i, _ int, item []byte) error {
			return q.Put(ctx, due.Add(time.Duration(i)*time.Millisecond), item) // a due time each: Curator's order of equal ones is arbitrary
		}}
	}
	t.Fatalf("kind %s", kind)
	return goQueue{}
}

// TestCuratorInteropQueues: for each queue type, Curator produces and Go
// consumes, and Go produces and Curator consumes, on one server, in the
// type's order.
func TestCuratorInteropQueues(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	c := connect(t, zkc.Servers())
	const n = 6
	for _, kind := range []string{"simple", "plain", "id", "priority", "delay"} {
		t.Run(kind, func(t *testing.T) {
			fromJava, toJava := "/interop/q/"+kind+"/j2g", "/interop/q/"+kind+"/g2j"
			prod := testutil.Curator(t, ctx, dir, "queue-produce", zkc.ConnectString(), kind, fromJava, fmt.Sprint(n))
			want := names("j", n)
			gwant := names("g", n)
			if kind == "priority" {
				slices.Reverse(want)
				slices.Reverse(gwant)
			}
			if kind == "plain" {
				want = append(want, "jm1", "jm2")
			}

			// Go produces for Curator, which starts once every item is in.
			if kind == "simple" {
				q, err := queue.NewSimple(c, toJava)
				require.NoError(t, err)
				for _, it := range names("g", n) {
					require.NoError(t, q.Offer(ctx, []byte(it)))
				}
			} else {
				q := newGoQueue(t, c, kind, toJava)
				for i, it := range names("g", n) {
					require.NoError(t, q.put(ctx, i, n, []byte(it)))
				}
			}

			cons := testutil.Curator(t, ctx, dir, "queue-consume", zkc.ConnectString(), kind, toJava, fmt.Sprint(n), "-", "0")

			// Curator produces for Go.
			require.NoError(t, prod.WaitLine(ctx, "PUT"))
			require.NoError(t, prod.Wait())
			if kind == "plain" {
				data, _, err := c.Get(ctx, fromJava+"/queue-0000000000")
				require.NoError(t, err)
				assert.Equal(t, queue.Encode([][]byte{[]byte("j00")}), data, "Curator's framing, byte for byte")
				data, _, err = c.Get(ctx, fmt.Sprintf("%s/queue-%010d", fromJava, n))
				require.NoError(t, err)
				assert.Equal(t, queue.Encode([][]byte{[]byte("jm1"), []byte("jm2")}), data, "a putMulti")
			}
			var got []string
			if kind == "simple" {
				q, err := queue.NewSimple(c, fromJava)
				require.NoError(t, err)
				for range want {
					data, err := q.Take(ctx)
					require.NoError(t, err)
					got = append(got, string(data))
				}
			} else {
				var mu sync.Mutex
				q := newGoQueue(t, connect(t, zkc.Servers()), kind, fromJava, queue.WithConsumer(queue.ConsumerFunc(func(_ context.Context, m *queue.Message) error {
					mu.Lock()
					defer mu.Unlock()
					for _, it := range m.Items {
						got = append(got, string(it))
					}
					return nil
				})))
				require.NoError(t, q.start(ctx))
				eventually(t, 30*time.Second, "Go consumes what Curator put", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return len(got) >= len(want)
				})
				require.NoError(t, q.close(ctx))
			}
			assert.Equal(t, want, got, "Curator -> Go")

			require.NoError(t, cons.WaitLine(ctx, "DONE"))
			require.NoError(t, cons.Wait())
			assert.Equal(t, gwant, javaItems(cons), "Go -> Curator")
		})
	}
}

// TestCuratorInteropQueueLockSafetyKill: a Curator consumer in
// lock-safety mode is SIGKILLed while it works on an item; once its
// session expires, a Go consumer on the same lock path gets that item and
// the rest, each once, and no lock is left.
func TestCuratorInteropQueueLockSafetyKill(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const path, locks, n = "/interop/qkill/q", "/interop/qkill/locks", 5
	c := connect(t, zkc.Servers())
	prod, err := queue.New(c, path)
	require.NoError(t, err)
	for _, it := range names("g", n) {
		require.NoError(t, prod.Put(ctx, []byte(it)))
	}
	java := testutil.Curator(t, ctx, t.TempDir(), "queue-consume", zkc.ConnectString(), "plain", path, fmt.Sprint(n), locks, "1")
	require.NoError(t, java.WaitLine(ctx, "HOLDING g00"))
	ok, _, err := c.Exists(ctx, locks+"/queue-0000000000")
	require.NoError(t, err)
	require.True(t, ok, "Curator's lock node lockPath/<item>")
	java.Kill()
	// What Curator consumed before the kill (after g00, which it holds).
	done := map[string]bool{}
	for _, it := range javaItems(java) {
		done[it] = true
	}

	col := &collector{}
	cons, err := queue.New(connect(t, zkc.Servers()), path, queue.WithConsumer(col), queue.WithLockPath(locks))
	require.NoError(t, err)
	require.NoError(t, cons.Start(ctx))
	closeQ(t, cons.Close)
	eventually(t, 30*time.Second, "the Go consumer gets every item Curator did not finish", func() bool {
		n, err := prod.Len(ctx)
		return err == nil && n == 0
	})
	got := col.items()
	assert.Contains(t, got, "g00", "the item Curator held when killed")
	for _, it := range got {
		assert.False(t, done[it], "%s consumed by both", it)
	}
	assert.Len(t, got, n-len(done))
	eventually(t, 10*time.Second, "no lock left", func() bool {
		kids, _, err := c.Children(ctx, locks)
		return err == nil && len(kids) == 0
	})
}

// TestQueueHelperProcess is not a test: it is the body of the helper
// process TestCuratorInteropGoConsumerKilled starts. It returns at once
// unless ZKQ_HELPER is set.
func TestQueueHelperProcess(t *testing.T) {
	queueHelpers.Run(map[string]func() error{"hang": helperHang})
}

var queueHelpers = testutil.Helpers{Test: "TestQueueHelperProcess", RoleEnv: "ZKQ_HELPER"}

// helperHang consumes ZKQ_PATH in lock-safety mode (locks at ZKQ_LOCKS)
// with a 2s session, prints "HOLDING <item>" for its first item and never
// finishes it: the test SIGKILLs it there.
func helperHang() error {
	c, err := testutil.Dial(context.Background(), strings.Split(os.Getenv("ZKQ_SERVERS"), ","), recipes.WithSessionTimeout(2*time.Second))
	if err != nil {
		return err
	}
	held := make(chan struct{})
	q, err := queue.New(c, os.Getenv("ZKQ_PATH"), queue.WithLockPath(os.Getenv("ZKQ_LOCKS")), queue.WithConsumer(queue.ConsumerFunc(func(_ context.Context, m *queue.Message) error {
		fmt.Printf("HOLDING %s\n", m.Data())
		close(held)
		select {} // until killed
	})))
	if err != nil {
		return err
	}
	if err := q.Start(context.Background()); err != nil {
		return err
	}
	<-held
	select {}
}

// TestCuratorInteropGoConsumerKilled: a Go consumer in lock-safety mode is
// SIGKILLed while it works on an item; a Curator consumer on the same lock
// path gets that item once the Go consumer's session is gone, and the
// rest, each once. (Curator's consumer only looks again when the queue's
// children change, not when a lock goes: the test puts one more item
// after the session is gone, or Curator would wait for the next put.)
func TestCuratorInteropGoConsumerKilled(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const path, locks, n = "/interop/gokill/q", "/interop/gokill/locks", 5
	c := connect(t, zkc.Servers())
	prod, err := queue.New(c, path)
	require.NoError(t, err)
	for _, it := range names("g", n) {
		require.NoError(t, prod.Put(ctx, []byte(it)))
	}
	h := queueHelpers.Start(t, "go-consumer", "hang", "ZKQ_SERVERS="+strings.Join(zkc.Servers(), ","), "ZKQ_PATH="+path, "ZKQ_LOCKS="+locks)
	line, err := h.WaitLine(ctx, "HOLDING ")
	require.NoError(t, err)
	assert.Equal(t, "HOLDING g00", line)
	lock := locks + "/queue-0000000000"
	ok, _, err := c.Exists(ctx, lock)
	require.NoError(t, err)
	require.True(t, ok, "the Go consumer's lock, Curator's name")
	h.Kill()

	java := testutil.Curator(t, ctx, t.TempDir(), "queue-consume", zkc.ConnectString(), "plain", path, fmt.Sprint(n+1), locks, "0")
	require.NoError(t, java.WaitLine(ctx, "READY"))
	eventually(t, 30*time.Second, "the killed consumer's session expires, and its lock with it", func() bool {
		ok, _, err := c.Exists(ctx, lock)
		return err == nil && !ok
	})
	require.NoError(t, prod.Put(ctx, []byte("nudge")))
	require.NoError(t, java.WaitLine(ctx, "DONE"))
	require.NoError(t, java.Wait())
	got := javaItems(java)
	slices.Sort(got)
	assert.Equal(t, append(names("g", n), "nudge"), got, "every item once, g00 included")
	left, err := prod.Len(ctx)
	require.NoError(t, err)
	assert.Zero(t, left)
}
