package election_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/election"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// TestMisuse feeds every exported function and method of package election
// its invalid inputs — bad paths, nil and zero values, a nil context, a
// closed client, starts and closes out of order — and checks that each
// returns an error matching the right sentinel and that none panics or
// hangs. It extends TestBadInput (election_test.go) and does not repeat its
// rows.
func TestMisuse(t *testing.T) {
	zkc := zktest.Start(t)
	servers := zkc.Servers()
	c := connect(t, servers)
	ctx := context.Background()
	var nilCtx context.Context
	badPaths := []string{"", "rel", "/trailing/", "/a//b", "/a/./b", "/a/../b", "/nul\x00"}
	invalidPath := []error{recipes.ErrInvalidPath}
	invalidArg := []error{recipes.ErrInvalidArgument}
	closedErr := []error{recipes.ErrClosed}
	noError := []error(nil)
	lead := func(ctx context.Context, _ *election.Term) error { <-ctx.Done(); return nil }

	closed, err := testutil.Dial(context.Background(), servers)
	require.NoError(t, err)
	closedLatch, err := election.NewLatch(closed, "/misuse/closed", "id")
	require.NoError(t, err)
	closedSel, err := election.NewSelector(closed, "/misuse/closedsel", "id", lead)
	require.NoError(t, err)
	require.NoError(t, closed.Close(context.Background()))

	var cases misuseTable
	add, tolerate := cases.Add, cases.Tolerate

	// Constructors and the package functions, on bad paths.
	pathRow := func(name string, paths []string, call func(p string) error) {
		var subs []misuseSub
		for _, p := range paths {
			subs = append(subs, misuseSub{Name: fmt.Sprintf("%q", p), Call: func() error { return call(p) }})
		}
		add(name+"(bad paths)", noError, misuseEach(invalidPath, subs))
	}
	withRoot := append([]string{"/"}, badPaths...)
	pathRow("NewLatch", withRoot, func(p string) error { _, err := election.NewLatch(c, p, "id"); return err })
	pathRow("NewSelector", withRoot, func(p string) error { _, err := election.NewSelector(c, p, "id", lead); return err })
	pathRow("Participants", badPaths, func(p string) error { _, err := election.Participants(ctx, c, p); return err })
	pathRow("CurrentLeader", badPaths, func(p string) error { _, err := election.CurrentLeader(ctx, c, p); return err })
	pathRow("Observe", badPaths, func(p string) error {
		octx, cancel := context.WithCancel(ctx)
		defer cancel()
		_, err := election.Observe(octx, c, p)
		return err
	})
	add("nil client", noError, misuseEach([]error{recipes.ErrNilClient}, []misuseSub{
		{Name: "NewSelector", Call: func() error { _, err := election.NewSelector(nil, "/misuse/x", "id", lead); return err }},
		{Name: "Participants", Call: func() error { _, err := election.Participants(ctx, nil, "/misuse/x"); return err }},
		{Name: "CurrentLeader", Call: func() error { _, err := election.CurrentLeader(ctx, nil, "/misuse/x"); return err }},
	}))
	add("closed client", noError, misuseEach(closedErr, []misuseSub{
		{Name: "NewLatch", Call: func() error { _, err := election.NewLatch(closed, "/misuse/x", "id"); return err }},
		{Name: "NewSelector", Call: func() error { _, err := election.NewSelector(closed, "/misuse/x", "id", lead); return err }},
		{Name: "Participants", Call: func() error { _, err := election.Participants(ctx, closed, "/misuse/x"); return err }},
		{Name: "CurrentLeader", Call: func() error { _, err := election.CurrentLeader(ctx, closed, "/misuse/x"); return err }},
		{Name: "Observe", Call: func() error { _, err := election.Observe(ctx, closed, "/misuse/x"); return err }},
		{Name: "Latch.Start", Call: func() error { return closedLatch.Start(ctx) }},
		{Name: "Latch.Participants", Call: func() error { _, err := closedLatch.Participants(ctx); return err }},
		{Name: "Latch.Leader", Call: func() error { _, err := closedLatch.Leader(ctx); return err }},
		{Name: "Selector.Start", Call: func() error { return closedSel.Start(ctx) }},
		{Name: "Selector.Participants", Call: func() error { _, err := closedSel.Participants(ctx); return err }},
		{Name: "Selector.Leader", Call: func() error { _, err := closedSel.Leader(ctx); return err }},
	}))
	add("nil ctx", noError, misuseEach(invalidArg, []misuseSub{
		{Name: "Participants", Call: func() error { _, err := election.Participants(nilCtx, c, "/misuse/x"); return err }},
		{Name: "CurrentLeader", Call: func() error { _, err := election.CurrentLeader(nilCtx, c, "/misuse/x"); return err }},
	}))
	add("nil options", noError, misuseEach(invalidArg, []misuseSub{
		{Name: "NewLatch", Call: func() error { _, err := election.NewLatch(c, "/misuse/x", "id", nil); return err }},
		{Name: "NewSelector", Call: func() error { _, err := election.NewSelector(c, "/misuse/x", "id", lead, nil); return err }},
		{Name: "WithCloseMode(-1)", Call: func() error {
			_, err := election.NewLatch(c, "/misuse/x", "id", election.WithCloseMode(-1))
			return err
		}},
		{Name: "NewLatch(WithAutoRequeue)", Call: func() error {
			_, err := election.NewLatch(c, "/misuse/x", "id", election.WithAutoRequeue())
			return err
		}},
		{Name: "NewSelector(WithCloseMode)", Call: func() error {
			_, err := election.NewSelector(c, "/misuse/x", "id", lead, election.WithCloseMode(election.CloseSilent))
			return err
		}},
	}))

	// Latch.
	newL := func(path string) *election.Latch {
		l, err := election.NewLatch(c, path, "id")
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close(ctx) })
		return l
	}
	add("Latch nil ctx", noError, misuseEach(invalidArg, []misuseSub{
		{Name: "Start", Call: func() error { return newL("/misuse/latch/nilstart").Start(nilCtx) }},
		{Name: "Await", Call: func() error { _, err := newL("/misuse/latch/nilawait").Await(nilCtx); return err }},
		{Name: "Participants", Call: func() error { _, err := newL("/misuse/latch/nilps").Participants(nilCtx); return err }},
		{Name: "Leader", Call: func() error { _, err := newL("/misuse/latch/nilleader").Leader(nilCtx); return err }},
		{Name: "Resign", Call: func() error { return newL("/misuse/latch/nilresign").Resign(nilCtx) }},
	}))
	add("Latch.Resign before Start", []error{recipes.ErrNotStarted}, func() error {
		return newL("/misuse/latch/resignfirst").Resign(ctx)
	})
	add("Latch.Resign after Close", closedErr, func() error {
		l := newL("/misuse/latch/resignclosed")
		if err := l.Start(ctx); err != nil {
			return err
		}
		if err := l.Close(ctx); err != nil {
			return err
		}
		return l.Resign(ctx)
	})
	tolerate("Latch.Close(nil ctx)", invalidArg, func() error {
		l := newL("/misuse/latch/nilclose")
		if err := l.Start(ctx); err != nil {
			return err
		}
		return l.Close(nilCtx)
	})
	add("Latch.Close twice", noError, func() error {
		l := newL("/misuse/latch/twice")
		if err := l.Start(ctx); err != nil {
			return err
		}
		if err := l.Close(ctx); err != nil {
			return err
		}
		return l.Close(ctx)
	})
	add("Latch.Await after Close", closedErr, func() error {
		l := newL("/misuse/latch/awaitclosed")
		if err := l.Start(ctx); err != nil {
			return err
		}
		if err := l.Close(ctx); err != nil {
			return err
		}
		_, err := l.Await(ctx)
		return err
	})
	add("Latch.Close before Start, then Start", closedErr, func() error {
		l := newL("/misuse/latch/closefirst")
		if err := l.Close(ctx); err != nil {
			return err
		}
		return l.Start(ctx)
	})
	add("Latch.Leader with nobody", []error{recipes.ErrNoLeader}, func() error {
		_, err := newL("/misuse/latch/nobody").Leader(ctx)
		return err
	})
	add("Latch.Await after its client closed", closedErr, func() error {
		cc := connect(t, servers)
		l, err := election.NewLatch(cc, "/misuse/latch/clientclosed", "id")
		if err != nil {
			return err
		}
		defer l.Close(ctx)
		if err := l.Start(ctx); err != nil {
			return err
		}
		if _, err := l.Await(ctx); err != nil {
			return err
		}
		if err := cc.Close(context.Background()); err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err = l.Await(actx)
		return err
	})
	var nilL *election.Latch
	for _, ll := range []struct {
		what string
		l    *election.Latch
	}{{"nil Latch", nilL}, {"zero Latch", new(election.Latch)}} {
		add(ll.what+" calls", noError, misuseEach(invalidArg, []misuseSub{
			{Name: "Await", Call: func() error { _, err := ll.l.Await(ctx); return err }},
			{Name: "Close", Call: func() error { return ll.l.Close(ctx) }},
			{Name: "Resign", Call: func() error { return ll.l.Resign(ctx) }},
			{Name: "Participants", Call: func() error { _, err := ll.l.Participants(ctx); return err }},
			{Name: "Leader", Call: func() error { _, err := ll.l.Leader(ctx); return err }},
		}))
	}
	add("nil Latch queries", noError, func() error {
		if nilL.HasLeadership() || nilL.Term() != nil {
			return errors.New("leads")
		}
		return nil
	})
	add("zero Latch queries", noError, func() error {
		var z election.Latch
		_, _, _, _ = z.ID(), z.Path(), z.Node(), z.Term()
		return nil
	})
	add("Latch.Listen(nil) then leadership", noError, misuseChildren.InChild("latch-listen-nil", servers))

	// Selector.
	newS := func(path string) *election.Selector {
		s, err := election.NewSelector(c, path, "id", lead)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close(ctx) })
		return s
	}
	add("Selector.Start twice", []error{recipes.ErrAlreadyStarted}, func() error {
		s := newS("/misuse/sel/twice")
		if err := s.Start(ctx); err != nil {
			return err
		}
		return s.Start(ctx)
	})
	add("Selector.Requeue before Start", []error{recipes.ErrNotStarted}, func() error {
		_, err := newS("/misuse/sel/requeue").Requeue()
		return err
	})
	add("Selector.Requeue after Close", closedErr, func() error {
		s := newS("/misuse/sel/requeueclosed")
		if err := s.Start(ctx); err != nil {
			return err
		}
		if err := s.Close(ctx); err != nil {
			return err
		}
		_, err := s.Requeue()
		return err
	})
	add("Selector.Start after Close", closedErr, func() error {
		s := newS("/misuse/sel/startclosed")
		if err := s.Close(ctx); err != nil {
			return err
		}
		return s.Start(ctx)
	})
	add("Selector.Close twice", noError, func() error {
		s := newS("/misuse/sel/closetwice")
		if err := s.Start(ctx); err != nil {
			return err
		}
		if err := s.Close(ctx); err != nil {
			return err
		}
		return s.Close(ctx)
	})
	tolerate("Selector.Close(nil ctx)", invalidArg, func() error {
		s := newS("/misuse/sel/nilclose")
		if err := s.Start(ctx); err != nil {
			return err
		}
		return s.Close(nilCtx)
	})
	add("Selector nil ctx", noError, misuseEach(invalidArg, []misuseSub{
		{Name: "Participants", Call: func() error { _, err := newS("/misuse/sel/nilps").Participants(nilCtx); return err }},
		{Name: "Leader", Call: func() error { _, err := newS("/misuse/sel/nilleader").Leader(nilCtx); return err }},
	}))
	add("Selector.Leader with nobody", []error{recipes.ErrNoLeader}, func() error {
		_, err := newS("/misuse/sel/nobody").Leader(ctx)
		return err
	})
	var nilS *election.Selector
	for _, ss := range []struct {
		what string
		s    *election.Selector
	}{{"nil Selector", nilS}, {"zero Selector", new(election.Selector)}} {
		add(ss.what+" calls", noError, misuseEach(invalidArg, []misuseSub{
			{Name: "Start", Call: func() error { return ss.s.Start(ctx) }},
			{Name: "Requeue", Call: func() error { _, err := ss.s.Requeue(); return err }},
			{Name: "Close", Call: func() error { return ss.s.Close(ctx) }},
			{Name: "Participants", Call: func() error { _, err := ss.s.Participants(ctx); return err }},
			{Name: "Leader", Call: func() error { _, err := ss.s.Leader(ctx); return err }},
		}))
		add(ss.what+" queries", noError, func() error {
			ss.s.Interrupt()
			if ss.s.HasLeadership() {
				return errors.New("leads")
			}
			return nil
		})
	}

	// Terms.
	add("zero Term", noError, misuseEach(invalidArg, []misuseSub{
		{Name: "Token", Call: func() error { _, err := new(election.Term).Token(ctx); return err }},
		{Name: "Fenced", Call: func() error { _, err := new(election.Term).Fenced(ctx); return err }},
	}))
	add("zero Term queries", noError, func() error {
		var tm election.Term
		_, _ = tm.ID(), tm.Started()
		return nil
	})
	tolerate("Term.Fenced(nil ctx)", invalidArg, func() error {
		l := newL("/misuse/term/fenced")
		if err := l.Start(ctx); err != nil {
			return err
		}
		tm, err := l.Await(ctx)
		if err != nil {
			return err
		}
		_, err = tm.Fenced(nilCtx)
		return err
	})

	runMisuse(t, cases)
}

var misuseChildren = testutil.MisuseChildren{
	"latch-listen-nil": func(t *testing.T, servers []string) {
		c, err := testutil.Dial(context.Background(), servers)
		require.NoError(t, err)
		defer c.Close(context.Background())
		ctx := context.Background()
		l, err := election.NewLatch(c, "/misuse/child/latch", "id")
		require.NoError(t, err)
		defer l.Close(ctx)
		l.Listen(nil)
		got := make(chan bool, 1)
		l.Listen(func(leads bool) { got <- leads })
		require.NoError(t, l.Start(ctx))
		<-got // the nil listener has had the news too
	},
}

// Child processes: TestMisuseChild runs one of misuseChildren when the
// environment names it (testutil.MisuseChildren), and is skipped otherwise.

func TestMisuseChild(t *testing.T) { misuseChildren.RunChild(t) }

// The misuse-table machinery is shared: internal/testutil/misuse.go.
type (
	misuseTable = testutil.MisuseTable
	misuseSub   = testutil.MisuseSub
)

var (
	runMisuse  = testutil.RunMisuse
	misuseEach = testutil.MisuseEach
)
