package election_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var (
	connect    = testutil.Connect
	eventually = testutil.Eventually
)

// interval is one term as seen from this process: from its start to the
// moment its Done closed.
type interval struct {
	id         string
	start, end time.Time
	token      int64
}

// recorder keeps every term of the latches it watches, with one clock.
type recorder struct {
	mu    sync.Mutex
	terms []interval
	open  map[string]*election.Term
	wg    sync.WaitGroup
}

func newRecorder() *recorder { return &recorder{open: map[string]*election.Term{}} }

// watch records l's terms until the listener is removed.
func (r *recorder) watch(t *testing.T, l *election.Latch) {
	remove := l.Listen(func(isLeader bool) {
		if !isLeader {
			return
		}
		term := l.Term()
		if term == nil {
			return // ended already; its interval is recorded by whoever saw it
		}
		r.record(t, term)
	})
	t.Cleanup(remove)
}

func (r *recorder) record(t *testing.T, term *election.Term) {
	r.mu.Lock()
	if r.open[term.ID()] == term {
		r.mu.Unlock()
		return
	}
	r.open[term.ID()] = term
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		<-term.Done()
		end := time.Now()
		r.mu.Lock()
		r.terms = append(r.terms, interval{id: term.ID(), start: term.Started(), end: end})
		r.mu.Unlock()
	}()
}

// check asserts that no two terms overlap and returns them in order.
func (r *recorder) check(t *testing.T) []interval {
	t.Helper()
	r.mu.Lock()
	terms := append([]interval(nil), r.terms...)
	r.mu.Unlock()
	sort.Slice(terms, func(i, j int) bool { return terms[i].start.Before(terms[j].start) })
	for i := 1; i < len(terms); i++ {
		assert.False(t, terms[i].start.Before(terms[i-1].end),
			"two leaders: %s's term began %v before %s's ended", terms[i].id, terms[i-1].end.Sub(terms[i].start), terms[i-1].id)
	}
	return terms
}

func newLatch(t *testing.T, c *recipes.Client, path, id string, opts ...election.Option) *election.Latch {
	t.Helper()
	l, err := election.NewLatch(c, path, id, opts...)
	require.NoError(t, err)
	require.NoError(t, l.Start(context.Background()))
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	return l
}

// leaders returns the latches that lead now.
func leaders(ls []*election.Latch) []string {
	var out []string
	for _, l := range ls {
		if l.HasLeadership() {
			out = append(out, l.ID())
		}
	}
	return out
}

// Three latches: exactly one leads, everyone agrees who; closing the
// leader hands over (graceful failover); listeners hear start and end in
// order; Await honours its deadline; the close modes.
func TestLatchOneLeaderAndGracefulFailover(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const path = "/election/latch"
	obsC := connect(t, zkc.Servers())
	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	changes, err := election.Observe(octx, obsC, path)
	require.NoError(t, err)
	first := <-changes
	assert.Equal(t, recipes.Participant{}, first, "nobody leads yet")

	var ls []*election.Latch
	var tokens []recipes.FenceToken // each leader's, read while it leads
	rec := newRecorder()
	events := map[string][]bool{}
	var evMu sync.Mutex
	for i := 0; i < 3; i++ {
		c := connect(t, zkc.Servers())
		id := fmt.Sprintf("p%d", i)
		l, err := election.NewLatch(c, path, id, election.WithCloseMode(election.CloseNotifyLeader))
		require.NoError(t, err)
		l.Listen(func(b bool) {
			evMu.Lock()
			events[id] = append(events[id], b)
			evMu.Unlock()
		})
		rec.watch(t, l)
		require.NoError(t, l.Start(ctx))
		t.Cleanup(func() { _ = l.Close(ctx) })
		ls = append(ls, l)
		if i == 0 {
			term, err := l.Await(ctx)
			require.NoError(t, err)
			assert.Equal(t, "p0", term.ID())
			tok, err := term.Token(ctx)
			require.NoError(t, err)
			tokens = append(tokens, tok)
		}
	}
	ps, err := ls[2].Participants(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 3)
	assert.Equal(t, []string{"p0", "p1", "p2"}, []string{ps[0].ID, ps[1].ID, ps[2].ID})
	assert.True(t, ps[0].Holds)
	assert.Equal(t, []string{"p0"}, leaders(ls))
	leader, err := election.CurrentLeader(ctx, obsC, path)
	require.NoError(t, err)
	assert.Equal(t, recipes.Participant{ID: "p0", Node: ls[0].Node(), Holds: true}, leader)
	got := <-changes
	assert.Equal(t, recipes.Participant{ID: "p0", Node: ls[0].Node(), Holds: true}, got)

	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = ls[1].Await(tctx)
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	// Graceful failover, twice.
	for i := 0; i < 2; i++ {
		start := time.Now()
		require.NoError(t, ls[i].Close(ctx))
		term, err := ls[i+1].Await(ctx)
		require.NoError(t, err)
		t.Logf("graceful failover %s -> %s: %v", ls[i].ID(), term.ID(), time.Since(start))
		tok, err := term.Token(ctx)
		require.NoError(t, err)
		tokens = append(tokens, tok)
		got := <-changes
		assert.Equal(t, ls[i+1].ID(), got.ID, "the observer sees the change")
		assert.Equal(t, []string{ls[i+1].ID()}, leaders(ls))
	}
	require.NoError(t, ls[2].Close(ctx))
	got = <-changes
	assert.Empty(t, got.Node, "nobody leads")

	terms := rec.check(t)
	require.Len(t, terms, 3)
	// The tokens read while each led (a listener, as the recorder's, may
	// run after the term ended, when Token fails).
	require.Len(t, tokens, 3)
	for i := 1; i < len(tokens); i++ {
		assert.Equal(t, 1, tokens[i].Compare(tokens[i-1]), "tokens grow from leader to leader: %v after %v", tokens[i], tokens[i-1])
	}
	evMu.Lock()
	for _, id := range []string{"p0", "p1", "p2"} {
		assert.Equal(t, []bool{true, false}, events[id], "%s: isLeader then notLeader (CloseNotifyLeader)", id)
	}
	evMu.Unlock()
	_, err = ls[0].Await(ctx)
	assert.ErrorIs(t, err, recipes.ErrClosed)
	require.NoError(t, ls[0].Close(ctx), "Close twice")
}

// Silent close: the listeners do not hear of the end.
func TestLatchSilentClose(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	l, err := election.NewLatch(c, "/election/silent", "only")
	require.NoError(t, err)
	ch := make(chan bool, 4)
	l.Listen(func(b bool) { ch <- b })
	require.NoError(t, l.Start(ctx))
	_, err = l.Await(ctx)
	require.NoError(t, err)
	assert.True(t, <-ch)
	require.NoError(t, l.Close(ctx))
	select {
	case b := <-ch:
		t.Fatalf("silent close notified %v", b)
	default:
	}
	kids, _, err := c.Children(ctx, "/election/silent")
	if err == nil {
		assert.Empty(t, kids, "the node went with Close")
	}
}

// A leader black-holed past its session timeout: its term's Done closes
// before any other participant's term begins, on one clock; it rejoins
// as a follower.
func TestLatchLeaderBlackholed(t *testing.T) {
	for _, policy := range []recipes.ErrorPolicy{recipes.PolicyStandard, recipes.PolicySession} {
		t.Run(policy.String(), func(t *testing.T) {
			zkc := zktest.Start(t)
			proxy := zktest.NewProxy(t, zkc.Servers()[0])
			ctx := context.Background()
			const path = "/election/blackhole"
			a := connect(t, []string{proxy.Addr()}, recipes.WithSessionTimeout(2*time.Second), recipes.WithErrorPolicy(policy))
			b := connect(t, zkc.Servers(), recipes.WithErrorPolicy(policy))
			la := newLatch(t, a, path, "a")
			aterm, err := la.Await(ctx)
			require.NoError(t, err)
			lb := newLatch(t, b, path, "b")
			rec := newRecorder()
			rec.record(t, aterm)
			rec.watch(t, lb)

			start := time.Now()
			proxy.Blackhole()
			bterm, err := lb.Await(ctx)
			require.NoError(t, err)
			rec.record(t, bterm)
			select {
			case <-aterm.Done():
			default:
				t.Fatal("b leads while a's term is open")
			}
			t.Logf("failover by black-hole: b leads %v after the black-hole began (session timeout %v)", time.Since(start), a.SessionTimeout())
			proxy.Restore()
			eventually(t, 15*time.Second, "a rejoined as a follower", func() bool {
				ps, err := lb.Participants(ctx)
				return err == nil && len(ps) == 2 && ps[1].ID == "a"
			})
			assert.False(t, la.HasLeadership())
			assert.True(t, lb.HasLeadership())
			require.NoError(t, lb.Close(ctx))
			rec.wg.Wait()
			terms := rec.check(t)
			require.GreaterOrEqual(t, len(terms), 2)
			assert.True(t, terms[0].end.Before(terms[1].start), "a's Done (%v) before b's start (%v)", terms[0].end, terms[1].start)
		})
	}
}

// A quorum paused longer than the session timeout, then resumed: never
// two leaders, one leader again afterwards. And the ensemble's leader
// killed: one leader (or briefly none), never two.
func TestLatchThroughQuorumLossAndLeaderKill(t *testing.T) {
	zkc := zktest.StartEnsemble(t, 3)
	if !zkc.Controllable() {
		t.Skip("needs servers this test controls")
	}
	ctx := context.Background()
	const path = "/election/quorum"
	rec := newRecorder()
	var ls []*election.Latch
	for i := 0; i < 3; i++ {
		c := connect(t, zkc.Servers(), recipes.WithSessionTimeout(2*time.Second))
		l, err := election.NewLatch(c, path, fmt.Sprintf("q%d", i))
		require.NoError(t, err)
		rec.watch(t, l)
		require.NoError(t, l.Start(ctx))
		t.Cleanup(func() { _ = l.Close(ctx) })
		ls = append(ls, l)
	}
	oneLeader := func(what string) {
		eventually(t, 30*time.Second, what, func() bool { return len(leaders(ls)) == 1 })
	}
	oneLeader("a first leader")
	if term := ls[0].Term(); term != nil {
		rec.record(t, term)
	}

	zkLeader, err := zkc.Leader()
	require.NoError(t, err)
	paused := []int{(zkLeader + 1) % 3, (zkLeader + 2) % 3}
	for _, i := range paused {
		require.NoError(t, zkc.Pause(i))
	}
	eventually(t, 15*time.Second, "no leader without a quorum", func() bool { return len(leaders(ls)) == 0 })
	time.Sleep(2500 * time.Millisecond) // the fault's length: past the 2s session timeout
	for _, i := range paused {
		require.NoError(t, zkc.Resume(i))
	}
	oneLeader("a leader after the quorum came back")

	zkLeader, err = zkc.Leader()
	require.NoError(t, err)
	require.NoError(t, zkc.Kill(zkLeader))
	oneLeader("a leader after the ensemble's leader was killed")
	require.NoError(t, zkc.Restart(zkLeader))
	for _, l := range ls {
		require.NoError(t, l.Close(ctx))
	}
	rec.wg.Wait()
	terms := rec.check(t)
	t.Logf("%d terms, none overlapping", len(terms))
}

// LeaderSelector with auto-requeue: 4 participants × 20 terms: terms never
// overlap, everyone leads, tokens strictly increase.
func TestSelectorAutoRequeue(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	const path, n, each = "/election/selector", 4, 20
	var (
		mu     sync.Mutex
		terms  []interval
		counts = map[string]int{}
		active int
		worst  int
	)
	done := make(chan struct{})
	var sels []*election.Selector
	for i := 0; i < n; i++ {
		c := connect(t, zkc.Servers())
		id := fmt.Sprintf("s%d", i)
		s, err := election.NewSelector(c, path, id, func(ctx context.Context, term *election.Term) error {
			mu.Lock()
			active++
			worst = max(worst, active)
			mu.Unlock()
			tok, err := term.Token(ctx)
			start := time.Now()
			mu.Lock()
			active--
			counts[id]++
			terms = append(terms, interval{id: id, start: start, token: tok.Czxid})
			total := len(terms)
			mu.Unlock()
			if total == n*each {
				close(done)
			}
			if total >= n*each {
				<-ctx.Done() // stop taking turns
			}
			return err
		}, election.WithAutoRequeue())
		require.NoError(t, err)
		require.NoError(t, s.Start(ctx))
		sels = append(sels, s)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("not enough terms")
	}
	for _, s := range sels {
		require.NoError(t, s.Close(ctx))
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, worst, "terms never overlap")
	for i := 0; i < n; i++ {
		assert.Greater(t, counts[fmt.Sprintf("s%d", i)], 0, "everyone leads")
	}
	for i := 1; i < n*each; i++ {
		assert.Greater(t, terms[i].token, terms[i-1].token, "tokens strictly increase")
	}
	t.Logf("terms per participant: %v", counts)
}

// Interrupt cancels the running LeadFunc; without auto-requeue a selector
// leads once per Start or Requeue.
func TestSelectorInterruptAndRequeue(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	led := make(chan *election.Term, 4)
	s, err := election.NewSelector(c, "/election/once", "x", func(ctx context.Context, term *election.Term) error {
		led <- term
		<-ctx.Done()
		return nil
	})
	require.NoError(t, err)
	ok, err := s.Requeue()
	assert.ErrorIs(t, err, recipes.ErrNotStarted)
	assert.False(t, ok)
	require.NoError(t, s.Start(ctx))
	assert.ErrorIs(t, s.Start(ctx), recipes.ErrAlreadyStarted)
	var term *election.Term
	select {
	case term = <-led:
	case <-time.After(10 * time.Second):
		t.Fatal("the selector did not lead")
	}
	assert.True(t, s.HasLeadership())
	leader, err := s.Leader(ctx)
	require.NoError(t, err)
	assert.Equal(t, "x", leader.ID)
	assert.Equal(t, term.Node(), leader.Node)
	s.Interrupt()
	eventually(t, 5*time.Second, "released", func() bool {
		_, err := s.Leader(ctx)
		return err != nil
	})
	assert.False(t, s.HasLeadership())
	ok, err = s.Requeue()
	require.NoError(t, err)
	assert.True(t, ok)
	select {
	case <-led:
	case <-time.After(10 * time.Second):
		t.Fatal("a Requeue made after the release did not lead again")
	}
	require.NoError(t, s.Close(ctx))
	select {
	case <-term.Done():
	default:
		t.Fatal("the first term's Done is closed")
	}
}

// Bad input and misuse return sentinel errors; nothing panics.
func TestBadInput(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	_, err := election.NewLatch(nil, "/x", "id")
	assert.ErrorIs(t, err, recipes.ErrNilClient)
	_, err = election.NewLatch(c, "rel", "id")
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)
	_, err = election.NewLatch(c, "/", "id")
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)
	_, err = election.NewLatch(c, "/x", "id", election.WithCloseMode(9))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = election.NewSelector(c, "/x", "id", nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = election.NewSelector(c, "/x/", "id", func(context.Context, *election.Term) error { return nil })
	assert.ErrorIs(t, err, recipes.ErrInvalidPath)

	l, err := election.NewLatch(c, "/election/bad", "id")
	require.NoError(t, err)
	_, err = l.Await(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotStarted)
	require.NoError(t, l.Start(ctx))
	assert.ErrorIs(t, l.Start(ctx), recipes.ErrAlreadyStarted)
	require.NoError(t, l.Close(ctx))
	assert.ErrorIs(t, l.Start(ctx), recipes.ErrClosed)
	var zero election.Latch
	assert.ErrorIs(t, zero.Start(ctx), recipes.ErrInvalidArgument)
	assert.False(t, zero.HasLeadership())
	var zs election.Selector
	assert.ErrorIs(t, zs.Start(ctx), recipes.ErrInvalidArgument)
	_, err = election.CurrentLeader(ctx, c, "/election/nobody")
	assert.ErrorIs(t, err, recipes.ErrNoLeader)
	_, err = election.Observe(ctx, nil, "/x")
	assert.ErrorIs(t, err, recipes.ErrNilClient)
	_, err = election.Observe(nil, c, "/x") //nolint:staticcheck // the nil context is the point
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
}

// The latch recreates its node when someone deletes it, and the leader
// check looks at the node's owner: a node of another session does not
// make a leader.
func TestLatchNodeDeletedAndForeignOwner(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	admin := connect(t, zkc.Servers())
	l := newLatch(t, c, "/election/recreate", "me")
	term, err := l.Await(ctx)
	require.NoError(t, err)
	first := l.Node()
	require.NoError(t, admin.Delete(ctx, first, -1))
	select {
	case <-term.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the term did not end with its node")
	}
	term2, err := l.Await(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, first, l.Node(), "a new node")
	assert.NotEqual(t, term.Node(), term2.Node())
	ok, _, err := admin.Exists(ctx, first)
	require.NoError(t, err)
	assert.False(t, ok)
}

// The listener rule: a started latch's listener hears the current
// leadership first, then each change; one added before Start hears only
// the changes.
func TestLatchListenGetsTheCurrentStateFirst(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	a, err := election.NewLatch(c, "/election/first", "a")
	require.NoError(t, err)
	defer a.Close(ctx)
	b, err := election.NewLatch(c, "/election/first", "b")
	require.NoError(t, err)
	defer b.Close(ctx)
	early := make(chan bool, 4)
	a.Listen(func(v bool) { early <- v })
	require.NoError(t, a.Start(ctx))
	_, err = a.Await(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Start(ctx))
	assert.True(t, <-early, "before Start: only the change")

	late := make(chan bool, 4)
	a.Listen(func(v bool) { late <- v })
	assert.True(t, <-late, "the leader's current state")
	follower := make(chan bool, 4)
	b.Listen(func(v bool) { follower <- v })
	assert.False(t, <-follower, "the follower's current state")

	require.NoError(t, a.Resign(ctx))
	assert.False(t, <-early)
	assert.False(t, <-late)
	assert.True(t, <-follower, "b leads once a resigned")
	select {
	case v := <-early:
		t.Fatalf("an extra event %v", v)
	default:
	}
}

// Subscribe is Listen for a channel: the current leadership first, once
// started, then each change.
func TestLatchSubscribe(t *testing.T) {
	zkc := zktest.Start(t)
	ctx := context.Background()
	c := connect(t, zkc.Servers())
	l, err := election.NewLatch(c, "/election/subscribe", "only")
	require.NoError(t, err)
	defer l.Close(ctx)
	require.NoError(t, l.Start(ctx))
	_, err = l.Await(ctx)
	require.NoError(t, err)
	ch, stop := l.Subscribe()
	defer stop()
	assert.True(t, <-ch, "leading now")
	require.NoError(t, l.Resign(ctx))
	assert.False(t, <-ch, "resigned")
}
