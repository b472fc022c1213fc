package nodes_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Ready means ready: right after WaitReady, CurrentMembers
// lists the two members already there and this one, 20 of 20 times; a
// listener's first state is complete and it never hears the same state
// twice in a row.
func TestGroupReadyAfterWait(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := recipes.WithNamespace(testutil.Namespace(t))
	for _, id := range []string{"a", "b"} { // there before the rounds
		require.NoError(t, member(t, connect(t, zkc.Servers(), ns), "/g", id, []byte("p"+id)).WaitReady(ctx))
	}
	c := connect(t, zkc.Servers(), ns)
	incomplete, badFirst, repeated := 0, 0, 0
	for i := range 20 {
		g, err := nodes.NewGroupMember(c, "/g", fmt.Sprintf("c%02d", i), []byte("pc"))
		require.NoError(t, err)
		var mu sync.Mutex
		var states []nodes.GroupState
		g.Listen(func(s nodes.GroupState) { mu.Lock(); states = append(states, s); mu.Unlock() })
		require.NoError(t, g.Start(ctx))
		require.NoError(t, g.WaitReady(ctx))
		if len(g.CurrentMembers()) != 3 {
			incomplete++
		}
		require.NoError(t, g.SetData(ctx, []byte("pc2"))) // one more state
		testutil.Eventually(t, 10*time.Second, "the new payload heard", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(states) > 0 && string(states[len(states)-1].Members[2].Payload) == "pc2"
		})
		require.NoError(t, g.Close(ctx))
		mu.Lock()
		if len(states[0].Members) != 3 {
			badFirst++
		}
		for k := 1; k < len(states); k++ {
			if assert.ObjectsAreEqual(states[k-1], states[k]) {
				repeated++
			}
		}
		mu.Unlock()
	}
	assert.Zero(t, incomplete, "CurrentMembers incomplete right after WaitReady (of 20)")
	assert.Zero(t, badFirst, "a listener's first state incomplete (of 20)")
	assert.Zero(t, repeated, "states heard twice in a row")
}

// Subscribe is Listen for a channel: the current members first.
func TestGroupSubscribe(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := recipes.WithNamespace(testutil.Namespace(t))
	a := member(t, connect(t, zkc.Servers(), ns), "/g", "a", []byte("pa"))
	require.NoError(t, a.WaitReady(ctx)) // its node is there
	g := member(t, connect(t, zkc.Servers(), ns), "/g", "b", []byte("pb"))
	require.NoError(t, g.WaitReady(ctx))
	ch, stop := g.Subscribe()
	defer stop()
	select {
	case s := <-ch:
		assert.Equal(t, []string{"a", "b"}, ids(s.Members))
	case <-ctx.Done():
		t.Fatal("no state")
	}
	var nilGroup *nodes.GroupMember
	_, open := <-func() <-chan nodes.GroupState { c, _ := nilGroup.Subscribe(); return c }()
	assert.False(t, open, "a nil member's channel is closed")
}
