package atomicval_test

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// observerLag is the delay put on an observer's links to the voters: it
// learns each commit that much after the voters, and serves its clients
// from what it has meanwhile.
const observerLag = time.Second

// laggingObserver starts 3 voters and an observer (member 3) whose links
// to the voters go through proxies, and returns a function that sets
// their latency. The tick of 500 ms gives syncLimit 2.5 s, more than a
// round trip at observerLag. The servers are plain: the test's clients
// go through proxies too.
func laggingObserver(t *testing.T) (*zktest.Cluster, func(time.Duration)) {
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
	return zkc, func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range links {
			p.SetLatency(d)
		}
	}
}

// A lagging observer serves a Get after an increment acknowledged through
// a voter: the sync before the read makes it catch up first.
func TestObserverGetSeesAcknowledgedWrites(t *testing.T) {
	zkc, lag := laggingObserver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := "/obs/count"
	w, err := atomicval.NewInt64(connect(t, zkc.Voters()), path)
	require.NoError(t, err)
	rc := connect(t, zkc.Observers())
	r, err := atomicval.NewInt64(rc, path)
	require.NoError(t, err)
	lag(observerLag)
	defer lag(0)
	for range 2 {
		res, err := w.Increment(ctx)
		require.NoError(t, err)
		// The observer lags: a plain read there shows the value from
		// before the increment (this is what the test has teeth for).
		data, _, err := rc.Get(ctx, path)
		if err == nil {
			require.NotEqual(t, res.PostValue, int64(binary.BigEndian.Uint64(data)), "a plain read on the lagging observer")
		} else {
			require.ErrorIs(t, err, zk.ErrNoNode, "a plain read on the lagging observer")
		}
		v, err := r.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, res.PostValue, v, "Get on the observer after an acknowledged increment")
	}
}

// firstThen is a host provider that gives first once, then then for
// ever: a session made through one server moves to the other when its
// connection is lost.
type firstThen struct {
	mu          sync.Mutex
	first, then string
	used        bool
}

func (h *firstThen) Init([]string) error { return nil }
func (h *firstThen) Len() int            { return 2 }
func (h *firstThen) Connected()          {}
func (h *firstThen) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.used {
		h.used = true
		return h.first, false
	}
	return h.then, false
}

// An increment whose reply is lost, by a client whose session then moves
// to an observer that has not yet learnt of the write, counts once: the
// read that judges the lost write must not be the observer's stale copy
// (which shows the node as the write found it, so the loop took the write
// as not applied and incremented again).
func TestObserverLostReplyCountsOnce(t *testing.T) {
	zkc, lag := laggingObserver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := "/obs/lost"
	proxy := zktest.NewProxy(t, zkc.Voters()[0])
	hp := &firstThen{first: proxy.Addr(), then: zkc.Observers()[0]}
	a, err := atomicval.NewInt64(connect(t, []string{hp.first, hp.then}, recipes.WithHostProvider(hp)), path)
	require.NoError(t, err)
	w, err := atomicval.NewInt64(connect(t, zkc.Voters()), path)
	require.NoError(t, err)
	ok, err := a.Initialize(ctx, 0)
	require.NoError(t, err)
	require.True(t, ok)

	// a's write of 1 reaches the voter; from then on the observer learns
	// of commits a second late, and a's connection is cut: a goes on on
	// the observer.
	proxy.CutAfterClientSendsFunc(setDataOf(path, 1), func() { lag(observerLag) })
	res, err := a.Increment(ctx)
	lag(0)
	got, gerr := w.Get(ctx)
	require.NoError(t, gerr)
	assert.Equal(t, int64(1), got, "a's one increment counted once (result %+v, %v)", res, err)
	if err != nil {
		assert.ErrorIs(t, err, recipes.ErrUnknownOutcome)
	} else {
		assert.Equal(t, int64(1), res.PostValue)
	}
	t.Logf("a: %+v, %v", res, err)
}
