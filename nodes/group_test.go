package nodes_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
)

func ids(ms []nodes.Member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func member(t *testing.T, c *recipes.Client, path, id string, payload []byte) *nodes.GroupMember {
	t.Helper()
	g, err := nodes.NewGroupMember(c, path, id, payload)
	require.NoError(t, err)
	require.NoError(t, g.Start(context.Background()))
	t.Cleanup(func() { g.Close(context.Background()) })
	return g
}

// Members see each other, with their payloads; a member that closes, or
// whose session ends, leaves; this member is always included.
func TestGroupMembers(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	a := connect(t, zkc.Servers(), recipes.WithNamespace("grp"))
	b := connect(t, zkc.Servers(), recipes.WithNamespace("grp"))
	c := connect(t, zkc.Servers(), recipes.WithNamespace("grp"))
	ga := member(t, a, "/g1", "a", []byte("pa"))
	assert.Equal(t, []string{"a"}, ids(ga.CurrentMembers()), "this member at once")
	gb := member(t, b, "/g1", "b", nil)
	gc := member(t, c, "/g1", "c", []byte("pc"))
	for _, g := range []*nodes.GroupMember{ga, gb, gc} {
		require.NoError(t, g.WaitReady(ctx))
	}
	var mu sync.Mutex
	var states []nodes.GroupState
	ga.Listen(func(s nodes.GroupState) { mu.Lock(); states = append(states, s); mu.Unlock() })
	for _, g := range []*nodes.GroupMember{ga, gb, gc} {
		eventually(t, 10*time.Second, "three members", func() bool {
			return len(g.CurrentMembers()) == 3
		})
	}
	ms := ga.CurrentMembers()
	assert.Equal(t, "pa", string(ms[0].Payload))
	assert.NotEmpty(t, ms[1].Payload, "the default payload: the local IP")
	require.NoError(t, gb.SetData(ctx, []byte("pb2")))
	eventually(t, 10*time.Second, "b's payload seen by a", func() bool {
		return string(ga.CurrentMembers()[1].Payload) == "pb2"
	})
	require.NoError(t, gc.Close(ctx))
	require.NoError(t, b.Close(ctx))
	eventually(t, 10*time.Second, "only a left", func() bool {
		return len(ga.CurrentMembers()) == 1
	})
	// The listener runs on its own goroutine, so it may learn of the
	// departures after CurrentMembers shows them; its last state must
	// come to be a alone.
	lastIDs := func() []string {
		mu.Lock()
		defer mu.Unlock()
		if len(states) == 0 {
			return nil
		}
		return ids(states[len(states)-1].Members)
	}
	eventually(t, 10*time.Second, "the listener's last state: a alone", func() bool {
		return slices.Equal(lastIDs(), []string{"a"})
	})
	assert.NoError(t, ga.Err())
}

// A second member with the same id is reported, not silently overwritten:
// it waits (reporting ErrDuplicateMember) while the first holds the node,
// and takes over once the first leaves; a payload written over ours (as
// Curator's duplicate does) is reported by the first.
func TestGroupDuplicateMember(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	a := connect(t, zkc.Servers())
	b := connect(t, zkc.Servers())
	c := connect(t, zkc.Servers())
	first := member(t, a, "/g2", "same", []byte("first"))
	require.NoError(t, first.WaitReady(ctx))
	second := member(t, b, "/g2", "same", []byte("second"))
	eventually(t, 10*time.Second, "the duplicate reported", func() bool {
		return second.Err() != nil
	})
	err := second.Err()
	assert.ErrorIs(t, err, recipes.ErrDuplicateMember)
	assert.ErrorContains(t, err, "zkrecipes: group member /g2/same:")
	d, _, err := c.Get(ctx, "/g2/same")
	require.NoError(t, err)
	assert.Equal(t, "first", string(d), "not overwritten")
	assert.NoError(t, first.Err())

	// A payload written over ours (Curator's duplicate: setData).
	_, err = c.Set(ctx, "/g2/same", []byte("curator"), -1)
	require.NoError(t, err)
	eventually(t, 10*time.Second, "the overwrite reported", func() bool {
		return first.Err() != nil
	})
	assert.ErrorIs(t, first.Err(), recipes.ErrDuplicateMember)
	assert.ErrorContains(t, first.Err(), `"curator"`)

	require.NoError(t, first.Close(ctx))
	eventually(t, 10*time.Second, "the second takes over once the first left", func() bool {
		d, st, err := c.Get(ctx, "/g2/same")
		return err == nil && string(d) == "second" && st.EphemeralOwner == b.SessionID()
	})
	eventually(t, 10*time.Second, "no duplicate any more", func() bool { return second.Err() == nil })
}

// A member nobody listens to posts no state per event (building one is a
// sorted copy of every member); a listener that comes later hears the
// current members first, and every change after, and one that goes and
// comes back hears what changed meanwhile.
func TestGroupListenerComesLate(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers(), recipes.WithNamespace("grplate"))
	path := "/g-" + t.Name()
	a := member(t, c, path, "a", nil)
	require.NoError(t, a.WaitReady(ctx))
	b := member(t, c, path, "b", nil)
	require.NoError(t, b.WaitReady(ctx))
	require.Eventually(t, func() bool { return slices.Equal(ids(a.CurrentMembers()), []string{"a", "b"}) }, 10*time.Second, 5*time.Millisecond)

	heard := func() (func() []string, func()) {
		var mu sync.Mutex
		var last []string
		remove := a.Listen(func(s nodes.GroupState) { mu.Lock(); last = ids(s.Members); mu.Unlock() })
		return func() []string { mu.Lock(); defer mu.Unlock(); return last }, remove
	}
	last, remove := heard()
	require.Eventually(t, func() bool { return slices.Equal(last(), []string{"a", "b"}) }, 10*time.Second, 5*time.Millisecond, "the late listener's first state")
	member(t, c, path, "c", nil)
	require.Eventually(t, func() bool { return slices.Equal(last(), []string{"a", "b", "c"}) }, 10*time.Second, 5*time.Millisecond, "a change after it came")
	remove()

	require.NoError(t, b.Close(ctx))
	require.Eventually(t, func() bool { return slices.Equal(ids(a.CurrentMembers()), []string{"a", "c"}) }, 10*time.Second, 5*time.Millisecond)
	last, remove = heard()
	defer remove()
	require.Eventually(t, func() bool { return slices.Equal(last(), []string{"a", "c"}) }, 10*time.Second, 5*time.Millisecond, "what changed while nobody listened")
	ch, stop := a.Subscribe()
	defer stop()
	select {
	case s := <-ch:
		assert.Equal(t, []string{"a", "c"}, ids(s.Members))
	case <-time.After(10 * time.Second):
		t.Fatal("Subscribe gave no first state")
	}
}
