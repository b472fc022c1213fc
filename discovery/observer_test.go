package discovery_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/par"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// A ServiceCache on a client connected only to an observer converges
// with the registrations made through a voter (a burst of registers,
// updates and unregisters), and with its own client's instance, and
// again after the observer is killed (more changes meanwhile) and
// restarted.
func TestObserverServiceCacheConverges(t *testing.T) {
	zkc := zktest.StartEnsemble(t, 3, zktest.WithObservers(1))
	if !zkc.Controllable() {
		t.Skip("restarts the observer: needs servers zktest starts")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dv := newDiscovery(t, connect(t, zkc.Voters()), "/services")
	do := newDiscovery(t, connect(t, zkc.Observers()), "/services")
	want := map[string]int{} // id: port
	require.NoError(t, do.Register(ctx, &discovery.Instance{Name: "s", ID: "own", Port: 1}))
	want["own"] = 1
	sc, err := do.NewServiceCache("s")
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	t.Cleanup(func() { _ = sc.Close(context.Background()) })

	round := func(r int) {
		t.Helper()
		idx := make([]int, 200)
		for i := range idx {
			idx[i] = i
		}
		id := func(i int) string { return fmt.Sprintf("r%d-%03d", r, i) }
		require.NoError(t, par.Each(32, idx, func(i int) error {
			return dv.Register(ctx, &discovery.Instance{Name: "s", ID: id(i), Port: 1})
		}))
		require.NoError(t, par.Each(32, idx, func(i int) error {
			switch {
			case i%3 == 0:
				return dv.Unregister(ctx, "s", id(i))
			case i%2 == 0:
				return dv.Update(ctx, &discovery.Instance{Name: "s", ID: id(i), Port: 2})
			}
			return nil
		}))
		for _, i := range idx {
			switch {
			case i%3 == 0:
			case i%2 == 0:
				want[id(i)] = 2
			default:
				want[id(i)] = 1
			}
		}
	}
	same := func() bool {
		got := map[string]int{}
		for _, in := range sc.Instances() {
			got[in.ID] = in.Port
		}
		return maps.Equal(got, want)
	}
	wait := func(what string) {
		t.Helper()
		eventually(t, 30*time.Second, what, same)
	}
	round(1)
	wait("the observer's service cache equal to the registrations after a burst")
	require.NoError(t, zkc.Kill(3))
	round(2)
	require.NoError(t, zkc.Restart(3))
	wait("the observer's service cache equal to the registrations after the observer's restart")
	round(3)
	wait("the observer's service cache equal to the registrations after a burst on the restarted observer")
}

// On an observer that learns each commit a second late, a Discovery reads
// its own registrations at once, without a sync: ZooKeeper answers a
// session's write only once the server it talks to has applied it, and
// serves the session's later reads after it.
func TestObserverOwnInstanceReadBack(t *testing.T) {
	zkc, lag := testutil.LaggingObserver(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := newDiscovery(t, connect(t, zkc.Observers()), "/services")
	lag(testutil.ObserverLag)
	for port := 1; port <= 2; port++ {
		in := &discovery.Instance{Name: "s", ID: "own", Port: port}
		if port == 1 {
			require.NoError(t, d.Register(ctx, in))
		} else {
			require.NoError(t, d.Update(ctx, in))
		}
		got, err := d.QueryForInstance(ctx, "s", "own")
		require.NoError(t, err)
		require.NotNil(t, got, "the instance just registered")
		require.Equal(t, port, got.Port, "the instance as just written")
	}
	require.NoError(t, d.Unregister(ctx, "s", "own"))
	got, err := d.QueryForInstance(ctx, "s", "own")
	require.NoError(t, err)
	require.Nil(t, got, "the instance just unregistered")
}
