package discovery_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

func disabled() *bool { b := false; return &b }

// A provider returns the enabled instances its filters keep, in turn; an
// instance with 2 noted errors is out until its time has passed; the
// cache follows registrations, leaves the service node itself out and
// reports an unreadable instance without dropping the others.
func TestServiceCacheAndProvider(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := connect(t, zkc.Servers())
	d := newDiscovery(t, connect(t, zkc.Servers()), "/services")
	for _, id := range []string{"a", "b", "c", "off", "filtered"} {
		in := &discovery.Instance{Name: "s", ID: id, Port: 1}
		if id == "off" {
			in.Enabled = disabled()
		}
		require.NoError(t, d.Register(ctx, in))
	}
	reader := newDiscovery(t, connect(t, zkc.Servers()), "/services")
	p, err := reader.NewProvider("s",
		discovery.WithFilter(func(i *discovery.Instance) bool { return i.ID != "filtered" }),
		discovery.WithDownInstancePolicy(2, 500*time.Millisecond))
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	defer p.Close(ctx)
	assert.Len(t, p.Cache().Instances(), 5)

	picks := map[string]int{}
	for range 30 {
		picks[p.Instance().ID]++
	}
	assert.Equal(t, map[string]int{"a": 10, "b": 10, "c": 10}, picks, "round robin over the enabled, kept instances")

	b := p.Instances()[1]
	require.Equal(t, "b", b.ID)
	p.NoteError(b)
	assert.Len(t, p.Instances(), 3, "one error: still up")
	p.NoteError(b)
	assert.Equal(t, []string{"a", "c"}, ids(p.Instances()), "two errors: down")
	eventually(t, 10*time.Second, "b back after its time", func() bool { return len(p.Instances()) == 3 })

	// The cache follows: a new instance, an unregistered one, the service
	// node's own data (ignored), an unreadable node (reported, skipped).
	require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "s", ID: "d", Port: 1}))
	require.NoError(t, d.Unregister(ctx, "s", "a"))
	_, err = admin.Set(ctx, "/services/s", []byte("not an instance"), -1)
	require.NoError(t, err)
	_, err = admin.Create(ctx, "/services/s/bad", []byte("{"), 0)
	require.NoError(t, err)
	eventually(t, 10*time.Second, "the cache sees d and not a", func() bool {
		return assert.ObjectsAreEqual([]string{"b", "c", "d"}, ids(p.Instances()))
	})
	eventually(t, 10*time.Second, "the bad node counted", func() bool { return reader.Unreadable() == 1 })
	assert.Equal(t, []string{"b", "c", "d", "filtered", "off"}, ids(p.Cache().Instances()))

	// Nothing available: nil.
	empty, err := reader.NewProvider("none")
	require.NoError(t, err)
	require.NoError(t, empty.Start(ctx))
	assert.Nil(t, empty.Instance())
	require.NoError(t, empty.Close(ctx))
}

// A cache watching the service sees no removal and no re-addition across
// a connection cut that the registering session survives.
func TestNoChurnSeenByCache(t *testing.T) {
	zkc := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	proxy := zktest.NewProxy(t, zkc.Servers()[0])
	c := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(4*time.Second))
	d := newDiscovery(t, c, "/services")
	require.NoError(t, d.Register(ctx, &discovery.Instance{Name: "s", ID: "i", Port: 1}))
	reader := newDiscovery(t, connect(t, zkc.Servers()), "/services")
	sc, err := reader.NewServiceCache("s")
	require.NoError(t, err)
	require.NoError(t, sc.Start(ctx))
	defer sc.Close(ctx)
	var (
		mu    sync.Mutex
		views [][]string
	)
	defer sc.Listen(func(l []*discovery.Instance) {
		mu.Lock()
		views = append(views, ids(l))
		mu.Unlock()
	})()

	reconnected := make(chan struct{}, 4)
	defer c.Listen(func(s recipes.State) {
		if s == recipes.StateReconnected {
			reconnected <- struct{}{}
		}
	})()
	proxy.Cut()
	select {
	case <-reconnected:
	case <-ctx.Done():
		t.Fatal("no reconnection")
	}
	require.NoError(t, d.Update(ctx, &discovery.Instance{Name: "s", ID: "i", Port: 2}))
	eventually(t, 10*time.Second, "the cache sees the update", func() bool {
		l := sc.Instances()
		return len(l) == 1 && l[0].Port == 2
	})
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, [][]string{{"i"}, {"i"}}, views, "the first view, then the update: no removal, no re-addition")
}

func TestStrategies(t *testing.T) {
	l := []*discovery.Instance{{Name: "s", ID: "a"}, {Name: "s", ID: "b"}, {Name: "s", ID: "c"}}
	st := discovery.Sticky(discovery.RoundRobin())
	first := st.Pick(l)
	for range 5 {
		assert.Same(t, first, st.Pick(l))
	}
	rest := []*discovery.Instance{l[1], l[2]}
	if first == l[1] {
		rest = []*discovery.Instance{l[0], l[2]}
	}
	next := st.Pick(rest)
	assert.NotEqual(t, first.ID, next.ID, "gone: another one")
	assert.Same(t, next, st.Pick(l), "then sticks to it")

	seen := map[string]bool{}
	r := discovery.Random()
	for range 200 {
		seen[r.Pick(l).ID] = true
	}
	assert.Len(t, seen, 3)
}
