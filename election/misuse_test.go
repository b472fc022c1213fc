package election_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/election"
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

	closed, err := recipes.Connect(servers)
	require.NoError(t, err)
	closedLatch, err := election.NewLatch(closed, "/misuse/closed", "id")
	require.NoError(t, err)
	closedSel, err := election.NewSelector(closed, "/misuse/closedsel", "id", lead)
	require.NoError(t, err)
	require.NoError(t, closed.Close())

	var cases misuseTable
	add, tolerate := cases.add, cases.tolerate

	// Constructors and the package functions, on bad paths.
	pathRow := func(name string, paths []string, call func(p string) error) {
		var subs []misuseSub
		for _, p := range paths {
			subs = append(subs, misuseSub{fmt.Sprintf("%q", p), func() error { return call(p) }})
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
		{"NewSelector", func() error { _, err := election.NewSelector(nil, "/misuse/x", "id", lead); return err }},
		{"Participants", func() error { _, err := election.Participants(ctx, nil, "/misuse/x"); return err }},
		{"CurrentLeader", func() error { _, err := election.CurrentLeader(ctx, nil, "/misuse/x"); return err }},
	}))
	add("closed client", noError, misuseEach(closedErr, []misuseSub{
		{"NewLatch", func() error { _, err := election.NewLatch(closed, "/misuse/x", "id"); return err }},
		{"NewSelector", func() error { _, err := election.NewSelector(closed, "/misuse/x", "id", lead); return err }},
		{"Participants", func() error { _, err := election.Participants(ctx, closed, "/misuse/x"); return err }},
		{"CurrentLeader", func() error { _, err := election.CurrentLeader(ctx, closed, "/misuse/x"); return err }},
		{"Observe", func() error { _, err := election.Observe(ctx, closed, "/misuse/x"); return err }},
		{"Latch.Start", func() error { return closedLatch.Start(ctx) }},
		{"Latch.Participants", func() error { _, err := closedLatch.Participants(ctx); return err }},
		{"Latch.Leader", func() error { _, err := closedLatch.Leader(ctx); return err }},
		{"Selector.Start", func() error { return closedSel.Start() }},
		{"Selector.Participants", func() error { _, err := closedSel.Participants(ctx); return err }},
		{"Selector.Leader", func() error { _, err := closedSel.Leader(ctx); return err }},
	}))
	add("nil ctx", noError, misuseEach(invalidArg, []misuseSub{
		{"Participants", func() error { _, err := election.Participants(nilCtx, c, "/misuse/x"); return err }},
		{"CurrentLeader", func() error { _, err := election.CurrentLeader(nilCtx, c, "/misuse/x"); return err }},
	}))
	add("nil options", noError, misuseEach(invalidArg, []misuseSub{
		{"NewLatch", func() error { _, err := election.NewLatch(c, "/misuse/x", "id", nil); return err }},
		{"NewSelector", func() error { _, err := election.NewSelector(c, "/misuse/x", "id", lead, nil); return err }},
		{"WithCloseMode(-1)", func() error {
			_, err := election.NewLatch(c, "/misuse/x", "id", election.WithCloseMode(-1))
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
		{"Start", func() error { return newL("/misuse/latch/nilstart").Start(nilCtx) }},
		{"Await", func() error { _, err := newL("/misuse/latch/nilawait").Await(nilCtx); return err }},
		{"Participants", func() error { _, err := newL("/misuse/latch/nilps").Participants(nilCtx); return err }},
		{"Leader", func() error { _, err := newL("/misuse/latch/nilleader").Leader(nilCtx); return err }},
	}))
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
	add("Latch.Leader with nobody", []error{election.ErrNoLeader}, func() error {
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
		if err := cc.Close(); err != nil {
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
			{"Await", func() error { _, err := ll.l.Await(ctx); return err }},
			{"Close", func() error { return ll.l.Close(ctx) }},
			{"Participants", func() error { _, err := ll.l.Participants(ctx); return err }},
			{"Leader", func() error { _, err := ll.l.Leader(ctx); return err }},
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
	add("Latch.Listen(nil) then leadership", noError, misuseInChild("latch-listen-nil", servers))

	// Selector.
	newS := func(path string) *election.Selector {
		s, err := election.NewSelector(c, path, "id", lead)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close(ctx) })
		return s
	}
	add("Selector.Start twice", []error{election.ErrAlreadyStarted}, func() error {
		s := newS("/misuse/sel/twice")
		if err := s.Start(); err != nil {
			return err
		}
		return s.Start()
	})
	add("Selector.Requeue before Start", []error{election.ErrNotStarted}, func() error {
		_, err := newS("/misuse/sel/requeue").Requeue()
		return err
	})
	add("Selector.Requeue after Close", closedErr, func() error {
		s := newS("/misuse/sel/requeueclosed")
		if err := s.Start(); err != nil {
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
		return s.Start()
	})
	add("Selector.Close twice", noError, func() error {
		s := newS("/misuse/sel/closetwice")
		if err := s.Start(); err != nil {
			return err
		}
		if err := s.Close(ctx); err != nil {
			return err
		}
		return s.Close(ctx)
	})
	tolerate("Selector.Close(nil ctx)", invalidArg, func() error {
		s := newS("/misuse/sel/nilclose")
		if err := s.Start(); err != nil {
			return err
		}
		return s.Close(nilCtx)
	})
	add("Selector nil ctx", noError, misuseEach(invalidArg, []misuseSub{
		{"Participants", func() error { _, err := newS("/misuse/sel/nilps").Participants(nilCtx); return err }},
		{"Leader", func() error { _, err := newS("/misuse/sel/nilleader").Leader(nilCtx); return err }},
	}))
	add("Selector.Leader with nobody", []error{election.ErrNoLeader}, func() error {
		_, err := newS("/misuse/sel/nobody").Leader(ctx)
		return err
	})
	var nilS *election.Selector
	for _, ss := range []struct {
		what string
		s    *election.Selector
	}{{"nil Selector", nilS}, {"zero Selector", new(election.Selector)}} {
		add(ss.what+" calls", noError, misuseEach(invalidArg, []misuseSub{
			{"Start", func() error { return ss.s.Start() }},
			{"Requeue", func() error { _, err := ss.s.Requeue(); return err }},
			{"Close", func() error { return ss.s.Close(ctx) }},
			{"Participants", func() error { _, err := ss.s.Participants(ctx); return err }},
			{"Leader", func() error { _, err := ss.s.Leader(ctx); return err }},
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
		{"Token", func() error { _, err := new(election.Term).Token(ctx); return err }},
		{"Fenced", func() error { _, err := new(election.Term).Fenced(ctx); return err }},
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

var misuseChildren = map[string]func(t *testing.T, servers []string){
	"latch-listen-nil": func(t *testing.T, servers []string) {
		c, err := recipes.Connect(servers)
		require.NoError(t, err)
		defer c.Close()
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

// Child processes: TestMisuseChild runs one of misuseChildren when
// misuseChildEnv names it, and is skipped otherwise.
const (
	misuseChildEnv   = "ZKRECIPES_MISUSE_CHILD"
	misuseServersEnv = "ZKRECIPES_MISUSE_SERVERS"
)

func TestMisuseChild(t *testing.T) {
	name := os.Getenv(misuseChildEnv)
	if name == "" {
		t.Skip("a child process of TestMisuse")
	}
	misuseChildren[name](t, strings.Split(os.Getenv(misuseServersEnv), ","))
}

// misuseInChild returns a row call that runs the named child in a new
// process of this test binary: it fails when the child panics or fails.
func misuseInChild(name string, servers []string) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMisuseChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), misuseChildEnv+"="+name, misuseServersEnv+"="+strings.Join(servers, ","))
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("child %q: %w\n%s", name, err, misuseTail(out))
		}
		return nil
	}
}

// misuseTail keeps the child's output from its panic on, at most 2 KB.
func misuseTail(out []byte) string {
	s := string(out)
	if i := strings.Index(s, "panic:"); i >= 0 {
		s = s[i:]
	}
	if len(s) > 2048 {
		s = s[:2048] + "..."
	}
	return s
}

// misuseCase is one row of a misuse table. The call must return within
// misuseTimeout, without panicking, an error that matches one of want
// (errors.Is); with want empty it must succeed; a nil entry in want, or
// nilOK, also accepts success (a misuse the API may tolerate).
type misuseCase struct {
	name  string
	want  []error
	nilOK bool
	call  func() error
}

const misuseTimeout = 20 * time.Second

// misuseTable collects rows.
type misuseTable []misuseCase

// add adds a row whose call must fail with an error matching one of want
// (or succeed, when want is empty).
func (tb *misuseTable) add(name string, want []error, call func() error) {
	*tb = append(*tb, misuseCase{name: name, want: want, call: call})
}

// tolerate adds a row whose call may also succeed.
func (tb *misuseTable) tolerate(name string, want []error, call func() error) {
	*tb = append(*tb, misuseCase{name: name, want: want, nilOK: true, call: call})
}

func runMisuse(t *testing.T, cases []misuseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if msg := misuseCheck(tc.call, tc.want, tc.nilOK, true); msg != "" {
				t.Fatalf("%s: %s", tc.name, msg)
			}
		})
	}
}

// misuseCheck runs call and says what is wrong with the outcome ("" when
// nothing), with the panic's stack when withStack.
func misuseCheck(call func() error, want []error, nilOK, withStack bool) string {
	err, panicked, stack, returned := misuseCall(call)
	switch {
	case !returned:
		return fmt.Sprintf("no return within %v", misuseTimeout)
	case panicked != nil:
		if withStack {
			return fmt.Sprintf("panicked: %v\n%s", panicked, stack)
		}
		return fmt.Sprintf("panicked: %v at %s", panicked, misusePanicSite(stack))
	case err == nil:
		if len(want) > 0 && !nilOK && !misuseContainsNil(want) {
			return fmt.Sprintf("no error, want one matching %v", want)
		}
	case len(want) == 0:
		return fmt.Sprintf("unexpected error: %v", err)
	default:
		for _, w := range want {
			if w != nil && errors.Is(err, w) {
				return ""
			}
		}
		return fmt.Sprintf("error %q (%T) matches none of %v", err, err, want)
	}
	return ""
}

// misuseSub is one call of a row that tries several.
type misuseSub struct {
	name string
	call func() error
}

// misuseEach returns a row call that makes every sub-call, each of which
// must return an error matching one of want, and reports all that do not.
func misuseEach(want []error, subs []misuseSub) func() error {
	return func() error {
		var bad []string
		for _, s := range subs {
			if msg := misuseCheck(s.call, want, false, false); msg != "" {
				bad = append(bad, s.name+": "+msg)
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%d of %d calls:\n\t%s", len(bad), len(subs), strings.Join(bad, "\n\t"))
		}
		return nil
	}
}

// misusePanicSite returns the file:line of the first frame below the panic
// that is not in the runtime.
func misusePanicSite(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	after := false
	for _, l := range lines {
		if strings.HasPrefix(l, "panic(") {
			after = true
			continue
		}
		if after && strings.HasPrefix(l, "\t") && !strings.Contains(l, "/runtime/") {
			f := strings.TrimSpace(l)
			if i := strings.LastIndex(f, " +0x"); i >= 0 {
				f = f[:i]
			}
			return filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f)
		}
	}
	return "?"
}

func misuseContainsNil(errs []error) bool {
	for _, e := range errs {
		if e == nil {
			return true
		}
	}
	return false
}

// misuseCall runs fn on a goroutine of its own and reports its error, or
// the value it panicked with (and the stack), or that it did not return
// within misuseTimeout.
func misuseCall(fn func() error) (err error, panicked any, stack []byte, returned bool) {
	type result struct {
		err   error
		p     any
		stack []byte
	}
	ch := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r.p, r.stack = p, debug.Stack()
			}
			ch <- r
		}()
		r.err = fn()
	}()
	select {
	case r := <-ch:
		return r.err, r.p, r.stack, true
	case <-time.After(misuseTimeout):
		return nil, nil, nil, false
	}
}
