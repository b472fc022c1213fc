package discovery

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/zkrecipes/zkrecipes/cache"
)

// newTestServiceCache is a ServiceCache fed by hand (no server): event is
// called as its cache would call it.
func newTestServiceCache() *ServiceCache {
	s := &ServiceCache{d: &Discovery{log: slog.New(slog.DiscardHandler)}, byNode: map[string]*Instance{}, ready: make(chan struct{})}
	empty := []*Instance{}
	s.snap.Store(&empty)
	return s
}

// feed sends the event for node id: created or changed with addr, or
// deleted when addr is "".
func feed(t testing.TB, s *ServiceCache, typ cache.EventType, id, addr string) {
	ev := cache.Event{Type: typ, Path: "/services/svc/" + id}
	if addr != "" {
		data, err := (&Instance{Name: "svc", ID: id, Address: addr, Port: 1}).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		ev.New = &cache.Node{Path: ev.Path, Data: data}
	}
	s.event(ev)
}

// TestServiceCacheChangesInPlace checks that a change after the initial
// load (made by one insertion, replacement or removal in the sorted list,
// not a sort per change) leaves Instances what a sort of every instance
// gives, and never alters a list handed out before.
func TestServiceCacheChangesInPlace(t *testing.T) {
	s := newTestServiceCache()
	want := map[string]string{} // id -> address
	for i := range 200 {
		id := "i" + strconv.Itoa(i*7%200)
		want[id] = "a"
		feed(t, s, cache.NodeCreated, id, "a")
	}
	if len(s.Instances()) != 0 {
		t.Fatalf("published before the initial load: %d instances", len(s.Instances()))
	}
	s.event(cache.Event{Type: cache.Initialized})
	rng := rand.New(rand.NewPCG(36, 36))
	for k := range 2000 {
		before := s.Instances()
		kept := slices.Clone(before)
		id := "i" + strconv.Itoa(rng.IntN(300))
		switch _, had := want[id]; {
		case had && rng.IntN(2) == 0:
			delete(want, id)
			feed(t, s, cache.NodeDeleted, id, "")
		case had:
			addr := "b" + strconv.Itoa(k)
			want[id] = addr
			feed(t, s, cache.NodeChanged, id, addr)
		default:
			want[id] = "c"
			feed(t, s, cache.NodeCreated, id, "c")
		}
		if !slices.Equal(before, kept) {
			t.Fatalf("change %d altered a list handed out before it", k)
		}
		if err := sameInstances(s.Instances(), want); err != nil {
			t.Fatalf("after change %d (%s): %v", k, id, err)
		}
	}
}

// sameInstances checks that got is want's instances sorted by id.
func sameInstances(got []*Instance, want map[string]string) error {
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(got) != len(ids) {
		return fmt.Errorf("%d instances, want %d", len(got), len(ids))
	}
	for i, id := range ids {
		if got[i].ID != id || got[i].Address != want[id] {
			return fmt.Errorf("instance %d is %s at %s, want %s at %s", i, got[i].ID, got[i].Address, id, want[id])
		}
	}
	return nil
}

// BenchmarkServiceCacheChange is one instance added and removed in a
// service of n instances: before, each change sorted every instance
// (O(n log n) string compares); now a copy of the list.
func BenchmarkServiceCacheChange(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			s := newTestServiceCache()
			for i := range n {
				feed(b, s, cache.NodeCreated, fmt.Sprintf("i%05d", i), "a")
			}
			s.event(cache.Event{Type: cache.Initialized})
			for b.Loop() {
				feed(b, s, cache.NodeCreated, "n", "a")
				feed(b, s, cache.NodeDeleted, "n", "")
			}
		})
	}
}
