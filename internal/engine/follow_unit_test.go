package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/zkstate"
)

// Unit tests of Follow's pure parts: which watches an event fires, the
// hub's routing, and a Follower's bookkeeping of due, failed and removed
// reads. No server needed.

func TestFiredKinds(t *testing.T) {
	for _, tc := range []struct {
		t    zk.EventType
		want []watchKind
	}{
		{zk.EventNodeCreated, []watchKind{WatchExists}},
		{zk.EventNodeDataChanged, []watchKind{WatchExists, WatchData}},
		{zk.EventNodeChildrenChanged, []watchKind{WatchChildren}},
		{zk.EventNodeDeleted, []watchKind{WatchExists, WatchData, WatchChildren}},
		{zk.EventNotWatching, []watchKind{WatchExists, WatchData, WatchChildren}},
		{zk.EventSession, nil},
	} {
		assert.Equal(t, tc.want, firedKinds(tc.t), "%v", tc.t)
	}
	assert.Equal(t, "data exists children unknown", WatchData.String()+" "+WatchExists.String()+" "+WatchChildren.String()+" "+watchKind(0).String())
}

// taken returns what f's queue holds.
func taken(f *Follower) []followItem {
	items, _ := f.q.Poll()
	return items
}

// The hub hands an event to every read whose watch it fires, once, named
// by key, node and kind, and to nobody else.
func TestHubRoutesEachEventToItsWatches(t *testing.T) {
	var h watchHub
	f1 := &Follower{q: notify.NewQueue[followItem]()}
	f2 := &Follower{q: notify.NewQueue[followItem]()}
	d1 := h.register(f1, "k1", watchID{"/a", WatchData})
	c1 := h.register(f1, "k1", watchID{"/a", WatchChildren})
	e2 := h.register(f2, "k2", watchID{"/a", WatchExists})
	b2 := h.register(f2, "k2", watchID{"/b", WatchData})
	assert.Equal(t, 4, h.watching())

	h.dispatch(zk.Event{Type: zk.EventSession, State: zk.StateDisconnected})
	assert.Empty(t, taken(f1), "a session event is no watch's")

	h.dispatch(zk.Event{Type: zk.EventNodeDataChanged, Path: "/a"})
	got1, got2 := taken(f1), taken(f2)
	require.Len(t, got1, 1)
	assert.Same(t, d1, got1[0].reg)
	assert.Equal(t, FollowEvent{Kind: FollowWatch, Key: "k1", Path: "/a", Type: zk.EventNodeDataChanged, Watch: WatchData}, got1[0].ev)
	require.Len(t, got2, 1)
	assert.Equal(t, FollowEvent{Kind: FollowWatch, Key: "k2", Path: "/a", Type: zk.EventNodeDataChanged, Watch: WatchExists}, got2[0].ev)
	assert.True(t, d1.dead.Load())
	assert.True(t, e2.dead.Load())
	assert.False(t, c1.dead.Load(), "a data change fires no children watch")
	assert.Equal(t, 2, h.watching())

	h.dispatch(zk.Event{Type: zk.EventNodeDataChanged, Path: "/a"})
	assert.Empty(t, taken(f1), "a watch fires once")

	h.unregister(b2)
	assert.True(t, b2.dead.Load())
	h.dispatch(zk.Event{Type: zk.EventNodeDeleted, Path: "/b"})
	assert.Empty(t, taken(f2), "an unregistered watch is nobody's")

	h.dispatch(zk.Event{Type: zk.EventNotWatching, Path: "/a", Err: zk.ErrSessionExpired})
	got1 = taken(f1)
	require.Len(t, got1, 1)
	assert.Equal(t, WatchChildren, got1[0].ev.Watch)
	assert.Equal(t, zk.EventNotWatching, got1[0].ev.Type)
	assert.Equal(t, 0, h.watching())

	// A Watches of no Follower is only told through Armed.
	r := h.register(nil, "", watchID{"/c", WatchData})
	h.dispatch(zk.Event{Type: zk.EventNodeDeleted, Path: "/c"})
	assert.True(t, r.dead.Load())

	// States go to every follower that joined, with the session.
	h.join(f1)
	h.state(zkstate.StateSuspended, 7)
	got1 = taken(f1)
	require.Len(t, got1, 1)
	assert.Equal(t, FollowEvent{Kind: FollowState, State: zkstate.StateSuspended}, got1[0].ev)
	assert.Equal(t, int64(7), got1[0].session)
	assert.Empty(t, taken(f2))
	h.leave(f1)
	h.state(zkstate.StateLost, 7)
	assert.Empty(t, taken(f1))
}

// Armed follows the hub: a watch that fired is not armed any more, before
// its event is taken.
func TestWatchesArmed(t *testing.T) {
	c := &Client{}
	f := &Follower{c: c, q: notify.NewQueue[followItem]()}
	w := &Watches{c: c, f: f, key: "k"}
	assert.False(t, w.Armed(WatchData, "/a"))
	require.NoError(t, w.watch(c, WatchData, "/a", func() (<-chan zk.Event, error) { return nil, nil }))
	assert.True(t, w.Armed(WatchData, "/a"))
	assert.False(t, w.Armed(WatchExists, "/a"), "each kind apart")
	assert.Equal(t, 1, w.Len())

	failed := errors.New("connection lost")
	assert.ErrorIs(t, w.watch(c, WatchChildren, "/a", func() (<-chan zk.Event, error) { return nil, failed }), failed)
	assert.False(t, w.Armed(WatchChildren, "/a"), "a failed request leaves no watch")
	assert.Equal(t, 1, c.hub.watching(), "and no registration")

	c.hub.dispatch(zk.Event{Type: zk.EventNodeDeleted, Path: "/a"})
	assert.False(t, w.Armed(WatchData, "/a"))
	assert.Equal(t, 0, w.Len())

	var nilW *Watches
	assert.False(t, nilW.Armed(WatchData, "/a"))

	require.NoError(t, w.watch(c, WatchExists, "/b", func() (<-chan zk.Event, error) { return nil, nil }))
	w.forget()
	assert.Equal(t, 0, c.hub.watching())
	assert.False(t, w.Armed(WatchExists, "/b"))
}

// A Follower's bookkeeping: reads run in the order they became due, a
// failed one waits out its backoff, a fired watch makes only its read due,
// a new session makes every read due and forgets their watches, and
// initialised counts reads not yet read well once.
func TestFollowerBookkeeping(t *testing.T) {
	c := &Client{log: slog.New(slog.NewTextHandler(io.Discard, nil)), cfg: Config{Retry: func() backoff.BackOff { return backoff.NewConstantBackOff(time.Hour) }}}
	f := c.NewFollower("unit", nil)
	var order []string
	fail := map[string]bool{}
	read := func(key string) ReadFunc {
		return func(ctx context.Context, w *Watches) error {
			order = append(order, key)
			if fail[key] {
				return errors.New("failed")
			}
			return w.watch(c, WatchData, "/"+key, func() (<-chan zk.Event, error) { return nil, nil })
		}
	}
	for _, k := range []string{"a", "b", "c"} {
		f.added(&followRead{key: k, read: read(k)})
	}
	assert.Equal(t, 3, f.pending)
	fail["b"] = true
	require.NoError(t, f.runDirty(context.Background()))
	assert.Equal(t, []string{"a", "b", "c"}, order)
	assert.Equal(t, 1, f.pending, "b has not read well yet")
	require.Len(t, f.waiting, 1)
	next, ok := f.nextRetry()
	assert.True(t, ok)
	assert.WithinDuration(t, time.Now().Add(time.Hour), next, time.Minute)

	// b's backoff is not over: nothing due.
	order = nil
	f.due(time.Now())
	require.NoError(t, f.runDirty(context.Background()))
	assert.Empty(t, order)
	// It is over.
	fail["b"] = false
	f.due(time.Now().Add(2 * time.Hour))
	require.NoError(t, f.runDirty(context.Background()))
	assert.Equal(t, []string{"b"}, order)
	assert.Equal(t, 0, f.pending)
	assert.Empty(t, f.waiting)

	// c's watch fires: c alone runs, and sees what fired.
	order = nil
	c.hub.dispatch(zk.Event{Type: zk.EventNodeDataChanged, Path: "/c"})
	var fired []FollowEvent
	f.reads["c"].read = func(ctx context.Context, w *Watches) error {
		order = append(order, "c")
		fired = append(fired, w.fired...)
		return nil
	}
	for _, it := range taken(f) {
		f.fired(it)
	}
	require.NoError(t, f.runDirty(context.Background()))
	assert.Equal(t, []string{"c"}, order)
	assert.Equal(t, []FollowEvent{{Kind: FollowWatch, Key: "c", Path: "/c", Type: zk.EventNodeDataChanged, Watch: WatchData}}, fired)
	assert.Empty(t, f.reads["c"].w.fired, "told once")

	// A new session: every watch forgotten, every read due.
	assert.Equal(t, 2, c.hub.watching())
	order = nil
	f.newSession(true)
	assert.Equal(t, 0, c.hub.watching())
	require.NoError(t, f.runDirty(context.Background()))
	assert.ElementsMatch(t, []string{"a", "b", "c"}, order)

	// Removed: never run again, its watch dropped, even when due.
	f.mark(f.reads["a"])
	f.removed("a")
	order = nil
	require.NoError(t, f.runDirty(context.Background()))
	assert.Empty(t, order)
	assert.Equal(t, 1, c.hub.watching(), "b's only (c's read leaves none now)")
}

// A read that asks to run again later (RunAfter) runs then, and not
// before, even when its watch fires meanwhile.
func TestFollowerRunAfter(t *testing.T) {
	c := &Client{log: slog.New(slog.NewTextHandler(io.Discard, nil)), cfg: Config{Retry: func() backoff.BackOff { return backoff.NewConstantBackOff(time.Hour) }}}
	f := c.NewFollower("unit", nil)
	runs := 0
	f.added(&followRead{key: "p", read: func(ctx context.Context, w *Watches) error {
		runs++
		if runs == 1 {
			w.RunAfter(time.Hour)
		}
		return w.watch(c, WatchChildren, "/p", func() (<-chan zk.Event, error) { return nil, nil })
	}})
	require.NoError(t, f.runDirty(context.Background()))
	assert.Equal(t, 1, runs)
	assert.Equal(t, 0, f.pending, "it read well")
	next, ok := f.nextRetry()
	require.True(t, ok)
	assert.WithinDuration(t, time.Now().Add(time.Hour), next, time.Minute)

	c.hub.dispatch(zk.Event{Type: zk.EventNodeChildrenChanged, Path: "/p"})
	for _, it := range taken(f) {
		f.fired(it)
	}
	f.due(time.Now())
	require.NoError(t, f.runDirty(context.Background()))
	assert.Equal(t, 1, runs, "not before its time")

	f.due(time.Now().Add(2 * time.Hour))
	require.NoError(t, f.runDirty(context.Background()))
	assert.Equal(t, 2, runs)
	_, ok = f.nextRetry()
	assert.False(t, ok, "once")
}

// Under Pipeline the reads of a round run at once, n at most, each
// leaving its own watches; Run's goroutine books them all when the round
// is over: a failed one waits out its backoff, the others read well.
func TestFollowerPipeline(t *testing.T) {
	c := &Client{log: slog.New(slog.NewTextHandler(io.Discard, nil)), cfg: Config{Retry: func() backoff.BackOff { return backoff.NewConstantBackOff(time.Hour) }}}
	f := c.NewFollower("unit", nil)
	f.Pipeline(4)
	var (
		inFlight, most atomic.Int64
		together       = make(chan struct{})
		once           sync.Once
	)
	for i := range 10 {
		key := fmt.Sprintf("n%d", i)
		f.added(&followRead{key: key, read: func(ctx context.Context, w *Watches) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if n == 4 {
				once.Do(func() { close(together) })
			}
			select { // the first reads wait until four run at once
			case <-together:
			case <-time.After(10 * time.Second):
				return errors.New("never four at once")
			}
			if key == "n7" {
				return errors.New("failed")
			}
			return w.watch(c, WatchData, "/"+key, func() (<-chan zk.Event, error) { return nil, nil })
		}})
	}
	require.NoError(t, f.runDirty(context.Background()))
	assert.Equal(t, int64(4), most.Load(), "four in flight, no more")
	assert.Equal(t, 1, f.pending, "n7 has not read well yet")
	require.Len(t, f.waiting, 1)
	assert.Equal(t, "n7", f.waiting[0].key)
	assert.Equal(t, 9, c.hub.watching(), "a watch of each read that read well")
	assert.True(t, f.watched)
}
