package testutil

import (
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// ObserverLag is the delay LaggingObserver's tests put on the observer's
// links to the voters: the observer learns each commit that much after
// the voters, and serves its clients from what it has meanwhile.
const ObserverLag = time.Second

// LaggingObserver starts 3 voters and an observer (member 3) whose links
// to the voters go through proxies, and returns a function that sets
// their latency (SetLatency of each). The tick of 500 ms gives syncLimit
// 2.5 s, more than a round trip at ObserverLag. The servers are plain
// (the tests' clients may go through proxies too). It skips the test on
// servers zktest does not start.
func LaggingObserver(t *testing.T) (*zktest.Cluster, func(time.Duration)) {
	t.Helper()
	var mu sync.Mutex
	var links []*zktest.Proxy
	zkc := zktest.StartEnsemble(t, 3, zktest.WithObservers(1), zktest.WithoutTLS(), zktest.WithTickTime(500*time.Millisecond),
		zktest.WithObserverLinks(func(_, _ int, addr string) (string, error) {
			p := zktest.NewProxy(t, addr)
			mu.Lock()
			defer mu.Unlock()
			links = append(links, p)
			return p.Addr(), nil
		}))
	if !zkc.Controllable() {
		t.Skip("puts proxies on the observer's links: needs servers zktest starts")
	}
	lag := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range links {
			p.SetLatency(d)
		}
	}
	t.Cleanup(func() { lag(0) })
	return zkc, lag
}

// FirstThen is a go-zookeeper host provider that gives First once, then
// Then for ever: a session made through one server moves to the other
// when its connection is lost.
type FirstThen struct {
	First, Then string

	mu   sync.Mutex
	used bool
}

// Init implements zk.HostProvider; the servers are First and Then.
func (h *FirstThen) Init([]string) error { return nil }

// Len implements zk.HostProvider.
func (h *FirstThen) Len() int { return 2 }

// Connected implements zk.HostProvider.
func (h *FirstThen) Connected() {}

// Next implements zk.HostProvider: First the first time, then Then.
func (h *FirstThen) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.used {
		h.used = true
		return h.First, false
	}
	return h.Then, false
}
