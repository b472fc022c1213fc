package queue_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/metrics/prommetrics"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// anyQueue is one queue of the DistributedQueue family, with a put of its
// kind and the name its items start with (what a corrupt item is given).
type anyQueue struct {
	start, close func(context.Context) error
	length       func(context.Context) (int, error)
	unreadable   func() int64
	put          func(ctx context.Context, item []byte) error
	prefix       string
	recipe       string // the metric's recipe label
}

func newAnyQueue(t *testing.T, c *recipes.Client, kind, p string, opts ...queue.Option) anyQueue {
	t.Helper()
	past := time.UnixMilli(time.Now().Add(-time.Minute).UnixMilli())
	switch kind {
	case "id":
		q, err := queue.NewID(c, p, opts...)
		require.NoError(t, err)
		return anyQueue{q.Start, q.Close, q.Len, q.Unreadable,
			func(ctx context.Context, b []byte) error { return q.Put(ctx, "job", b) }, queue.ItemPrefix + "|bad|", "id_queue"}
	case "priority":
		q, err := queue.NewPriority(c, p, opts...)
		require.NoError(t, err)
		return anyQueue{q.Start, q.Close, q.Len, q.Unreadable,
			func(ctx context.Context, b []byte) error { return q.Put(ctx, 0, b) }, queue.ItemPrefix + "100000000", "priority_queue"}
	case "delay":
		q, err := queue.NewDelay(c, p, opts...)
		require.NoError(t, err)
		return anyQueue{q.Start, q.Close, q.Len, q.Unreadable,
			func(ctx context.Context, b []byte) error { return q.Put(ctx, past, b) },
			fmt.Sprintf("%s|%08X|", queue.ItemPrefix, past.UnixMilli()), "delay_queue"}
	}
	q, err := queue.New(c, p, opts...)
	require.NoError(t, err)
	return anyQueue{q.Start, q.Close, q.Len, q.Unreadable, q.Put, queue.ItemPrefix, "queue"}
}

// handed records what an unreadable handler was given.
type handed struct {
	mu  sync.Mutex
	got []string // name=data
	err error    // what the handler returns
}

func (h *handed) handle(_ context.Context, name string, data []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, name+"="+string(data))
	return h.err
}

func (h *handed) items() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

// unreadableRig is one queue of a kind, in a mode, with a corrupt item
// between two good ones ("a", corrupt, "b"), put by another client.
type unreadableRig struct {
	q       anyQueue
	col     *collector
	logs    *testutil.LogBuffer
	corrupt string // the corrupt item's node name
	lockDir string
}

const corruptData = "not framed \x00\xff"

func newUnreadableRig(t *testing.T, c, admin *recipes.Client, kind, mode, p string, opts ...queue.Option) *unreadableRig {
	t.Helper()
	ctx := context.Background()
	r := &unreadableRig{col: &collector{}, logs: &testutil.LogBuffer{}}
	prod := newAnyQueue(t, admin, kind, p)
	require.NoError(t, prod.put(ctx, []byte("a")))
	made, err := admin.CreateWithParents(ctx, p+"/"+prod.prefix, []byte(corruptData), zk.FlagSequence)
	require.NoError(t, err)
	r.corrupt = path.Base(made)
	require.NoError(t, prod.put(ctx, []byte("b")))
	opts = append(opts, queue.WithConsumer(r.col), queue.WithLogger(slog.New(slog.NewTextHandler(r.logs, nil))))
	if mode == "lock-safety" {
		r.lockDir = p + "-locks"
		opts = append(opts, queue.WithLockPath(r.lockDir))
	}
	r.q = newAnyQueue(t, c, kind, p, opts...)
	require.NoError(t, r.q.start(ctx))
	closeQ(t, r.q.close)
	return r
}

// An item whose data does not decode, in every queue of the family and
// in both modes: with WithUnreadable it is handed to the handler (its
// name and bytes) and deleted; without, it is kept in the queue, intact,
// and passed over (met once, however often the queue is listed again).
// Either way the items around it are consumed once each, the item is
// counted (Unreadable and the metric, result handed or kept) and the log
// line says what happened, with its bytes; a lock-safety consumer leaves
// no lock behind.
func TestUnreadable(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, kind := range []string{"plain", "id", "priority", "delay"} {
		for _, mode := range []string{"normal", "lock-safety"} {
			t.Run(kind+"/"+mode, func(t *testing.T) {
				ns := testutil.Namespace(t)
				pm, err := prommetrics.New(prometheus.NewRegistry())
				require.NoError(t, err)
				c := connect(t, zkc.Servers(), recipes.WithNamespace(ns), recipes.WithMetrics(pm))
				admin := connect(t, zkc.Servers(), recipes.WithNamespace(ns))
				h := &handed{}
				hr := newUnreadableRig(t, c, admin, kind, mode, "/h", queue.WithUnreadable(h.handle))
				kr := newUnreadableRig(t, c, admin, kind, mode, "/k")
				metric := func(p, result string) float64 {
					return promtest.ToFloat64(pm.Counter(recipes.MetricQueueUnreadable, hr.q.recipe, ns, p, result).(prometheus.Collector))
				}

				assert.Equal(t, []string{"a", "b"}, hr.col.wait(t, 2))
				eventually(t, 10*time.Second, "the handed item deleted", func() bool { n, err := hr.q.length(ctx); return err == nil && n == 0 })
				assert.Equal(t, []string{hr.corrupt + "=" + corruptData}, h.items(), "handed once, with its name and bytes")
				assert.Equal(t, int64(1), hr.q.unreadable())
				assert.Equal(t, 1.0, metric("/h", "handed"))
				assert.Contains(t, hr.logs.String(), "corrupt queue item")
				assert.Contains(t, hr.logs.String(), "handed to the unreadable handler")
				assert.Contains(t, hr.logs.String(), "item="+hr.corrupt)

				// A third item makes the consumer list again: the kept
				// item is passed over, not met again.
				require.NoError(t, newAnyQueue(t, admin, kind, "/k").put(ctx, []byte("c")))
				assert.Equal(t, []string{"a", "b", "c"}, kr.col.wait(t, 3))
				eventually(t, 10*time.Second, "only the kept item left", func() bool { n, err := kr.q.length(ctx); return err == nil && n == 1 })
				data, _, err := admin.Get(ctx, "/k/"+kr.corrupt)
				require.NoError(t, err, "kept")
				assert.Equal(t, corruptData, string(data), "intact")
				assert.Equal(t, int64(1), kr.q.unreadable(), "met once")
				assert.Equal(t, 1.0, metric("/k", "kept"))
				assert.Zero(t, metric("/k", "handed"))
				assert.Contains(t, kr.logs.String(), "corrupt queue item kept in the queue (no unreadable handler)")
				assert.Contains(t, kr.logs.String(), `not framed \\x00\\xff`, "its bytes, quoted (and quoted again by the text handler)")
				for _, r := range []*unreadableRig{hr, kr} {
					assert.Equal(t, len(r.col.items()), len(r.col.msgs), "one message each: nothing delivered twice")
					if r.lockDir != "" {
						eventually(t, 10*time.Second, "no lock left", func() bool {
							kids, _, err := admin.Children(ctx, r.lockDir)
							return err == nil && len(kids) == 0
						})
					}
				}
			})
		}
	}
}

// A handler that fails: in lock-safety mode the item is kept (its lock
// released); in normal mode it was deleted before it was handed over, so
// it is gone, and the log says so.
func TestUnreadableHandlerFails(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, mode := range []string{"normal", "lock-safety"} {
		t.Run(mode, func(t *testing.T) {
			ns := recipes.WithNamespace(testutil.Namespace(t))
			c, admin := connect(t, zkc.Servers(), ns), connect(t, zkc.Servers(), ns)
			h := &handed{err: errors.New("dead letters unreachable")}
			r := newUnreadableRig(t, c, admin, "plain", mode, "/q", queue.WithUnreadable(h.handle))
			assert.Equal(t, []string{"a", "b"}, r.col.wait(t, 2))
			eventually(t, 10*time.Second, "handed over", func() bool { return len(h.items()) == 1 })
			assert.Equal(t, []string{r.corrupt + "=" + corruptData}, h.items())
			assert.Equal(t, int64(1), r.q.unreadable())
			ok, _, err := admin.Exists(ctx, "/q/"+r.corrupt)
			require.NoError(t, err)
			assert.Contains(t, r.logs.String(), "dead letters unreachable")
			if mode == "normal" {
				assert.False(t, ok, "deleted before it was handed over")
				assert.Contains(t, r.logs.String(), "which failed: in normal mode the item is gone")
				return
			}
			assert.True(t, ok, "kept")
			assert.Contains(t, r.logs.String(), "kept in the queue: the unreadable handler failed")
		})
	}
}

// Start makes the queue's and lock directories with Curator's default
// data, the local IP address (what a mutex node holds by default), not
// null.
func TestStartMakesDirectoriesWithDefaultData(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, zkc.Servers(), recipes.WithNamespace(testutil.Namespace(t)))
	q, err := queue.New(c, "/jobs/q", queue.WithConsumer(&collector{}), queue.WithLockPath("/jobs/locks"))
	require.NoError(t, err)
	require.NoError(t, q.Start(ctx))
	defer closeQ(t, q.Close)
	m, err := mutex.New(c, "/jobs/m")
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	ip, _, err := c.Get(ctx, lease.Node())
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))
	for _, dir := range []string{"/jobs/q", "/jobs/locks"} {
		data, _, err := c.Get(ctx, dir)
		require.NoError(t, err)
		assert.Equal(t, string(ip), string(data), dir)
	}
}
