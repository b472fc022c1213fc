package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// TestMisuse feeds every exported function and method of package rwlock
// (and the read and write locks it hands out) its invalid inputs — bad
// paths and options, nil and zero values, a nil context, a closed client,
// unlocks without a lock or of the other lock, an upgrade — and checks that
// each returns an error matching the right sentinel and that none panics
// or hangs. It extends TestBadInput (rwlock_test.go) and does not repeat
// its rows.
func TestMisuse(t *testing.T) {
	zkc := zktest.Start(t)
	servers := zkc.Servers()
	c := connect(t, servers)
	ctx := context.Background()
	var nilCtx context.Context
	invalidArg := []error{recipes.ErrInvalidArgument}
	noError := []error(nil)

	closed, err := recipes.Connect(servers)
	require.NoError(t, err)
	closedRW, err := rwlock.New(closed, "/misuse/closed")
	require.NoError(t, err)
	require.NoError(t, closed.Close())

	proxy := zktest.NewProxy(t, servers[0])
	pc := connect(t, []string{proxy.Addr()})

	var cases misuseTable
	add, tolerate := cases.add, cases.tolerate
	newRWLock := func(path string) *rwlock.RWLock {
		rw, err := rwlock.New(c, path)
		require.NoError(t, err)
		return rw
	}

	// New: the paths and options TestBadInput does not try.
	for _, p := range []string{"/a//b", "/a/./b", "/ctl\x01"} {
		add(fmt.Sprintf("New(%q)", p), []error{recipes.ErrInvalidPath}, func() error { _, err := rwlock.New(c, p); return err })
	}
	add("New(WithExtraLockNames(\"\"))", invalidArg, func() error {
		_, err := rwlock.New(c, "/misuse/x", mutex.WithExtraLockNames(""))
		return err
	})
	add("New(WithRevocationListener(nil))", invalidArg, func() error {
		_, err := rwlock.New(c, "/misuse/x", mutex.WithRevocationListener(nil))
		return err
	})

	// Nil and zero RWLocks.
	var nilRW *rwlock.RWLock
	add("nil RWLock.Participants", invalidArg, func() error { _, err := nilRW.Participants(ctx); return err })
	add("nil RWLock's locks", noError, misuseEach(invalidArg, []misuseSub{
		{"ReadLock().Lock", func() error { _, err := nilRW.ReadLock().Lock(ctx); return err }},
		{"WriteLock().Lock", func() error { _, err := nilRW.WriteLock().Lock(ctx); return err }},
	}))
	var zero rwlock.RWLock
	add("zero RWLock's locks", noError, misuseEach(invalidArg, []misuseSub{
		{"ReadLock().Lock", func() error { _, err := zero.ReadLock().Lock(ctx); return err }},
		{"ReadLock().TryLock", func() error { _, err := zero.ReadLock().TryLock(ctx); return err }},
		{"ReadLock().Unlock", func() error { return zero.ReadLock().Unlock(ctx) }},
		{"WriteLock().Lock", func() error { _, err := zero.WriteLock().Lock(ctx); return err }},
		{"WriteLock().TryLock", func() error { _, err := zero.WriteLock().TryLock(ctx); return err }},
		{"WriteLock().Unlock", func() error { return zero.WriteLock().Unlock(ctx) }},
	}))

	// A nil context.
	rw := newRWLock("/misuse/rw")
	add("nil ctx", noError, misuseEach(invalidArg, []misuseSub{
		{"ReadLock().TryLock", func() error { _, err := rw.ReadLock().TryLock(nilCtx); return err }},
		{"ReadLock().Unlock", func() error { return rw.ReadLock().Unlock(nilCtx) }},
		{"WriteLock().Lock", func() error { _, err := rw.WriteLock().Lock(nilCtx); return err }},
		{"WriteLock().TryLock", func() error { _, err := rw.WriteLock().TryLock(nilCtx); return err }},
		{"WriteLock().Unlock", func() error { return rw.WriteLock().Unlock(nilCtx) }},
	}))
	tolerate("Participants(nil ctx)", invalidArg, func() error { _, err := rw.Participants(nilCtx); return err })
	tolerate("Participants(nil ctx) with the reply lost", invalidArg, func() error {
		prw, err := rwlock.New(pc, "/misuse/rw/lost")
		if err != nil {
			return err
		}
		proxy.CutAfterClientSends([]byte("/misuse/rw/lost")) // the children request carries it
		_, err = prw.Participants(nilCtx)
		return err
	})
	add("Lock(WithOwner(nil))", invalidArg, func() error {
		_, err := rw.ReadLock().Lock(mutex.WithOwner(ctx, nil))
		return err
	})

	// Unlocks without the lock, of the other lock, by another owner.
	add("ReadLock().Unlock while holding the write lock", []error{mutex.ErrNotHeld}, func() error {
		if _, err := rw.WriteLock().Lock(ctx); err != nil {
			return err
		}
		defer rw.WriteLock().Unlock(ctx)
		return rw.ReadLock().Unlock(ctx)
	})
	add("WriteLock().Unlock by another explicit owner", []error{mutex.ErrNotOwner}, func() error {
		a, b := mutex.WithOwner(ctx, "a"), mutex.WithOwner(ctx, "b")
		if _, err := rw.WriteLock().Lock(a); err != nil {
			return err
		}
		defer rw.WriteLock().Unlock(a)
		return rw.WriteLock().Unlock(b)
	})
	add("ReadLock().Unlock twice", []error{mutex.ErrNotHeld}, func() error {
		if _, err := rw.ReadLock().Lock(ctx); err != nil {
			return err
		}
		if err := rw.ReadLock().Unlock(ctx); err != nil {
			return err
		}
		return rw.ReadLock().Unlock(ctx)
	})
	add("WriteLock().Release without Acquire", []error{mutex.ErrNotHeld}, func() error { return rw.WriteLock().Release(ctx) })

	// Upgrades: refused at once, leaving no node behind.
	for _, try := range []bool{false, true} {
		name := "WriteLock().Lock while holding the read lock"
		if try {
			name = "WriteLock().TryLock while holding the read lock"
		}
		add(name, []error{rwlock.ErrUpgrade}, func() error {
			up := newRWLock(fmt.Sprintf("/misuse/upgrade/%v", try))
			if _, err := up.ReadLock().Lock(ctx); err != nil {
				return err
			}
			defer up.ReadLock().Unlock(ctx)
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			var err error
			if try {
				_, err = up.WriteLock().TryLock(wctx)
			} else {
				_, err = up.WriteLock().Lock(wctx)
			}
			if ps, perr := up.Participants(ctx); perr != nil || len(ps) != 1 {
				return fmt.Errorf("after the upgrade (%w): participants %v, %v; want the reader alone", err, ps, perr)
			}
			return err
		})
	}
	add("WriteLock().Lock while holding the read lock, explicit owner", []error{rwlock.ErrUpgrade}, func() error {
		o := mutex.WithOwner(ctx, "o")
		if _, err := rw.ReadLock().Lock(o); err != nil {
			return err
		}
		defer rw.ReadLock().Unlock(o)
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if _, err := rw.WriteLock().Lock(wctx); err == nil { // another owner: it waits, and does not get it
			return errors.New("the write lock was granted while a reader holds")
		}
		uctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := rw.WriteLock().Lock(mutex.WithOwner(uctx, "o"))
		return err
	})

	// A closed client (TestBadInput has ReadLock().Lock and New).
	add("closed client", noError, misuseEach([]error{recipes.ErrClosed}, []misuseSub{
		{"ReadLock().TryLock", func() error { _, err := closedRW.ReadLock().TryLock(ctx); return err }},
		{"WriteLock().Lock", func() error { _, err := closedRW.WriteLock().Lock(ctx); return err }},
		{"WriteLock().TryLock", func() error { _, err := closedRW.WriteLock().TryLock(ctx); return err }},
		{"Participants", func() error { _, err := closedRW.Participants(ctx); return err }},
		{"ReadLock().Participants", func() error { _, err := closedRW.ReadLock().Participants(ctx); return err }},
	}))

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
