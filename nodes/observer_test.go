package nodes_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/par"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// A GroupMember on a client connected only to an observer lists the
// members that joined, changed their payload and left through a voter,
// and itself, after the burst and again after the observer is killed
// (more changes meanwhile) and restarted.
func TestObserverGroupMembersConverge(t *testing.T) {
	zkc := zktest.StartEnsemble(t, 3, zktest.WithObservers(1))
	if !zkc.Controllable() {
		t.Skip("restarts the observer: needs servers zktest starts")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const group = "/obs-group"
	voter, observer := connect(t, zkc.Voters()), connect(t, zkc.Observers())
	self, err := nodes.NewGroupMember(observer, group, "self", []byte("p0"))
	require.NoError(t, err)
	require.NoError(t, self.Start(ctx))
	t.Cleanup(func() { _ = self.Close(context.Background()) })
	want := map[string]string{"self": "p0"}

	round := func(r int) {
		t.Helper()
		ms := make([]*nodes.GroupMember, 20)
		for i := range ms {
			id := fmt.Sprintf("r%d-%02d", r, i)
			ms[i], err = nodes.NewGroupMember(voter, group, id, []byte("p0"))
			require.NoError(t, err)
			want[id] = "p0"
		}
		require.NoError(t, par.Each(8, ms, func(m *nodes.GroupMember) error {
			if err := m.Start(ctx); err != nil {
				return err
			}
			return m.WaitReady(ctx)
		}))
		for i, m := range ms {
			switch {
			case i%3 == 0:
				require.NoError(t, m.Close(ctx))
				delete(want, m.ID())
			case i%2 == 0:
				require.NoError(t, m.SetData(ctx, []byte("p1")))
				want[m.ID()] = "p1"
				t.Cleanup(func() { _ = m.Close(context.Background()) })
			default:
				t.Cleanup(func() { _ = m.Close(context.Background()) })
			}
		}
	}
	same := func() bool {
		got := map[string]string{}
		for _, m := range self.CurrentMembers() {
			got[m.ID] = string(m.Payload)
		}
		return maps.Equal(got, want)
	}
	round(1)
	eventually(t, 30*time.Second, "the observer's member list equal to the group after a burst", same)
	require.NoError(t, zkc.Kill(3))
	round(2)
	require.NoError(t, zkc.Restart(3))
	eventually(t, 30*time.Second, "the observer's member list equal to the group after the observer's restart", same)
	round(3)
	eventually(t, 30*time.Second, "the observer's member list equal to the group after a burst on the restarted observer", same)
}
