package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
)

// ReadEach starts each event's read as the event comes: with a writer
// setting one node 50 times as fast as it can, every event carries a
// read, each read sees the node as of its event or later (version at
// least the event's), the reads go out in the events' order (Order
// increases) and see versions that never go back, and each Routed counts
// the event it was started for.
func TestReadEach(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, zkc.Servers())
	w := connect(t, zkc.Servers())
	root := fmt.Sprintf("/readeach-%d", time.Now().UnixNano())
	_, err := w.Create(ctx, root, nil, 0)
	require.NoError(t, err)
	node := root + "/n"
	_, err = w.Create(ctx, node, []byte("v0"), 0)
	require.NoError(t, err)
	pw, err := (*engine.Client)(c).AddWatch(ctx, root, true)
	require.NoError(t, err)
	pw.ReadEach(ctx, func(ev engine.PersistentEvent, _ *engine.AsyncRead) (bool, bool) {
		return ev.Type == zk.EventNodeDataChanged, false
	})
	const sets = 50
	for i := 1; i <= sets; i++ {
		_, err := w.Set(ctx, node, []byte(fmt.Sprintf("v%d", i)), -1)
		require.NoError(t, err)
	}
	var changes []engine.PersistentEvent
	for len(changes) < sets {
		evs, ok := pw.Events(ctx.Done())
		require.True(t, ok, "the watch's events ended after %d changes", len(changes))
		for _, ev := range evs {
			if ev.Kind == engine.PersistentNode && ev.Type == zk.EventNodeDataChanged {
				changes = append(changes, ev)
			}
		}
	}
	var lastOrder uint64
	var lastVersion int32
	for i, ev := range changes {
		r := ev.Read
		require.NotNil(t, r, "event %d has no read", i+1)
		select {
		case <-r.Done():
		case <-ctx.Done():
			t.Fatalf("event %d: the read's reply never came", i+1)
		}
		require.NoError(t, r.Err)
		require.True(t, r.There)
		require.GreaterOrEqual(t, r.Stat.Version, int32(i+1), "event %d: the read is older than its event", i+1)
		require.GreaterOrEqual(t, r.Stat.Version, lastVersion, "event %d: the reads went back", i+1)
		require.Equal(t, fmt.Sprintf("v%d", r.Stat.Version), string(r.Data))
		require.Greater(t, r.Order, lastOrder, "event %d: the reads went out of order", i+1)
		require.GreaterOrEqual(t, r.Routed, ev.Seq)
		lastOrder, lastVersion = r.Order, r.Stat.Version
	}
	require.NoError(t, pw.Remove(ctx))
}
