package cleanup_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cleanup"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// TestMisuse feeds every exported function and method of package cleanup
// its invalid inputs — bad paths, counts ≤ 0, nil and zero values, a nil
// context, a closed client, starts and closes out of order — and checks
// that each returns an error matching the right sentinel and that none
// panics or hangs. It extends TestBadInput (cleanup_test.go) and does not
// repeat its rows.
func TestMisuse(t *testing.T) {
	zkc := zktest.Start(t)
	servers := zkc.Servers()
	c := connect(t, servers)
	ctx := context.Background()
	var nilCtx context.Context
	invalidPath := []error{recipes.ErrInvalidPath}
	invalidArg := []error{recipes.ErrInvalidArgument}
	closedErr := []error{recipes.ErrClosed}
	noError := []error(nil)

	var cases misuseTable
	add, tolerate := cases.add, cases.tolerate

	// Options.
	for name, opt := range map[string]cleanup.Option{
		"WithThreshold(-1s)":         cleanup.WithThreshold(-time.Second),
		"WithChecks(-1)":             cleanup.WithChecks(-1),
		"WithDepth(-1)":              cleanup.WithDepth(-1),
		"WithMode(-1)":               cleanup.WithMode(-1),
		"WithRateLimit(math.MinInt)": cleanup.WithRateLimit(math.MinInt),
		"WithChecks(math.MinInt)":    cleanup.WithChecks(math.MinInt),
	} {
		add("New("+name+")", invalidArg, func() error { _, err := cleanup.New(c, opt); return err })
	}
	pathRow := func(name string, paths []string, call func(p string) error) {
		var subs []misuseSub
		for _, p := range paths {
			subs = append(subs, misuseSub{fmt.Sprintf("%q", p), func() error { return call(p) }})
		}
		add(name+"(bad paths)", noError, misuseEach(invalidPath, subs))
	}
	more := []string{"/a//b", "/a/./b", "/nul\x00", "/ctl\x01"} // TestBadInput has "", "rel", "/trail/", "/a/../b"
	pathRow("WithPaths", more, func(p string) error { _, err := cleanup.New(c, cleanup.WithPaths(p)); return err })
	pathRow("WithParents", more, func(p string) error { _, err := cleanup.New(c, cleanup.WithParents(p)); return err })
	pathRow("Scan", more, func(p string) error { _, err := cleanup.Scan(ctx, c, p); return err })
	pathRow("WithLeaderElection", []string{"", "/", "/trail/", "/a//b", "/nul\x00"}, func(p string) error {
		_, err := cleanup.New(c, cleanup.WithLeaderElection(p, "id"))
		return err
	})
	add("Scan(nil client)", []error{recipes.ErrNilClient}, func() error { _, err := cleanup.Scan(ctx, nil, "/"); return err })

	// AddPath.
	r, err := cleanup.New(c, cleanup.WithThreshold(time.Hour))
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	pathRow("AddPath", []string{"", "rel", "/trail/", "/a//b", "/a/./b", "/a/../b", "/nul\x00", "/"}, r.AddPath)
	add("AddPath after Close", closedErr, func() error {
		r, err := cleanup.New(c)
		if err != nil {
			return err
		}
		if err := r.Close(); err != nil {
			return err
		}
		return r.AddPath("/misuse/x")
	})

	// Start and Close.
	tolerate("Start(nil ctx)", invalidArg, func() error {
		r, err := cleanup.New(c, cleanup.WithThreshold(time.Hour))
		if err != nil {
			return err
		}
		defer r.Close()
		return r.Start(nilCtx)
	})
	add("Start(nil ctx) with leader election", invalidArg, func() error {
		r, err := cleanup.New(c, cleanup.WithThreshold(time.Hour), cleanup.WithLeaderElection("/misuse/reapers", "id"))
		if err != nil {
			return err
		}
		defer r.Close()
		return r.Start(nilCtx)
	})
	add("Close twice", noError, func() error {
		r, err := cleanup.New(c, cleanup.WithThreshold(time.Hour), cleanup.WithLeaderElection("/misuse/reapers", "id"))
		if err != nil {
			return err
		}
		if err := r.Start(ctx); err != nil {
			return err
		}
		if err := r.Close(); err != nil {
			return err
		}
		return r.Close()
	})
	add("Close after a failed Start", noError, func() error {
		r, err := cleanup.New(c, cleanup.WithThreshold(time.Hour), cleanup.WithLeaderElection("/misuse/reapers", "id"))
		if err != nil {
			return err
		}
		sctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := r.Start(sctx); err == nil {
			_ = r.Close()
			return errors.New("Start with a cancelled ctx succeeded")
		}
		return r.Close()
	})
	add("Start after the client closed", closedErr, func() error {
		cc := connect(t, servers)
		r, err := cleanup.New(cc, cleanup.WithThreshold(time.Hour), cleanup.WithPaths("/misuse/x"))
		if err != nil {
			return err
		}
		defer r.Close()
		if err := cc.Close(); err != nil {
			return err
		}
		return r.Start(ctx)
	})
	add("AddPath after the client closed", closedErr, func() error {
		cc := connect(t, servers)
		r, err := cleanup.New(cc)
		if err != nil {
			return err
		}
		defer r.Close()
		if err := cc.Close(); err != nil {
			return err
		}
		return r.AddPath("/misuse/x")
	})

	// Nil and zero Reapers (TestBadInput has a zero Reaper's Start and Close).
	var nilR *cleanup.Reaper
	add("nil Reaper calls", noError, misuseEach(invalidArg, []misuseSub{
		{"Start", func() error { return nilR.Start(ctx) }},
		{"Close", func() error { return nilR.Close() }},
		{"AddPath", func() error { return nilR.AddPath("/misuse/x") }},
	}))
	add("zero Reaper.AddPath", invalidArg, func() error { return new(cleanup.Reaper).AddPath("/misuse/x") })
	add("zero Reaper queries", noError, func() error {
		var z cleanup.Reaper
		_, _ = z.Stats(), z.Tracked()
		return nil
	})

	runMisuse(t, cases)
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
