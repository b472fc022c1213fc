package testutil

// The machinery of the misuse tables (TestMisuse in every recipe package):
// rows of calls that must return a given sentinel error, never panic and
// never hang.

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
)

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

// MisuseTable collects the rows of a misuse table.
type MisuseTable []misuseCase

// Add adds a row whose call must fail with an error matching one of want
// (or succeed, when want is empty).
func (tb *MisuseTable) Add(name string, want []error, call func() error) {
	*tb = append(*tb, misuseCase{name: name, want: want, call: call})
}

// Tolerate adds a row whose call may also succeed.
func (tb *MisuseTable) Tolerate(name string, want []error, call func() error) {
	*tb = append(*tb, misuseCase{name: name, want: want, nilOK: true, call: call})
}

// RunMisuse runs each row as a subtest.
func RunMisuse(t *testing.T, cases MisuseTable) {
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

// MisuseSub is one call of a row that tries several.
type MisuseSub struct {
	Name string
	Call func() error
}

// MisuseEach returns a row call that makes every sub-call, each of which
// must return an error matching one of want, and reports all that do not.
func MisuseEach(want []error, subs []MisuseSub) func() error {
	return func() error {
		var bad []string
		for _, s := range subs {
			if msg := misuseCheck(s.Call, want, false, false); msg != "" {
				bad = append(bad, s.Name+": "+msg)
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

// MisuseChildren are misuse rows that must run in a process of their own
// (a nil listener whose panic would kill the test binary, say), by name.
// A package's TestMisuseChild calls RunChild, and its rows call InChild.
type MisuseChildren map[string]func(t *testing.T, servers []string)

// The environment that tells a re-run test binary which child to be.
const (
	misuseChildEnv   = "ZKRECIPES_MISUSE_CHILD"
	misuseServersEnv = "ZKRECIPES_MISUSE_SERVERS"
)

// RunChild is the body of TestMisuseChild: it runs the child the
// environment names, and skips the test when none is named.
func (mc MisuseChildren) RunChild(t *testing.T) {
	name := os.Getenv(misuseChildEnv)
	if name == "" {
		t.Skip("a child process of TestMisuse")
	}
	child, ok := mc[name]
	if !ok {
		t.Fatalf("no misuse child %q", name)
	}
	child(t, strings.Split(os.Getenv(misuseServersEnv), ","))
}

// InChild returns a row call that runs the named child in a new process of
// this test binary (TestMisuseChild): it fails when the child panics or
// fails.
func (mc MisuseChildren) InChild(name string, servers []string) func() error {
	return func() error {
		if _, ok := mc[name]; !ok {
			return fmt.Errorf("no misuse child %q", name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMisuseChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), misuseChildEnv+"="+name, misuseServersEnv+"="+strings.Join(servers, ","))
		cmd.Env = append(cmd.Env, TLSEnv(servers)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("child %q: %w\n%s", name, err, misuseTail(out))
		}
		return nil
	}
}

// misuseTail keeps a child's output from its panic on, at most 2 KB.
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
