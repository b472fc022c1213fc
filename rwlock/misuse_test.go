package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
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

	closed, err := testutil.Dial(context.Background(), servers)
	require.NoError(t, err)
	closedRW, err := rwlock.New(closed, "/misuse/closed")
	require.NoError(t, err)
	require.NoError(t, closed.Close(context.Background()))

	proxy := zktest.NewProxy(t, servers[0])
	pc := connect(t, []string{proxy.Addr()})

	var cases misuseTable
	add, tolerate := cases.Add, cases.Tolerate
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
		{Name: "ReadLock().Lock", Call: func() error { _, err := nilRW.ReadLock().Acquire(ctx); return err }},
		{Name: "WriteLock().Lock", Call: func() error { _, err := nilRW.WriteLock().Acquire(ctx); return err }},
	}))
	var zero rwlock.RWLock
	add("zero RWLock's locks", noError, misuseEach(invalidArg, []misuseSub{
		{Name: "ReadLock().Lock", Call: func() error { _, err := zero.ReadLock().Acquire(ctx); return err }},
		{Name: "ReadLock().TryLock", Call: func() error { _, err := zero.ReadLock().TryAcquire(ctx); return err }},
		{Name: "ReadLock().Unlock", Call: func() error { return zero.ReadLock().Release(ctx) }},
		{Name: "WriteLock().Lock", Call: func() error { _, err := zero.WriteLock().Acquire(ctx); return err }},
		{Name: "WriteLock().TryLock", Call: func() error { _, err := zero.WriteLock().TryAcquire(ctx); return err }},
		{Name: "WriteLock().Unlock", Call: func() error { return zero.WriteLock().Release(ctx) }},
	}))

	// A nil context.
	rw := newRWLock("/misuse/rw")
	add("nil ctx", noError, misuseEach(invalidArg, []misuseSub{
		{Name: "ReadLock().TryLock", Call: func() error { _, err := rw.ReadLock().TryAcquire(nilCtx); return err }},
		{Name: "ReadLock().Unlock", Call: func() error { return rw.ReadLock().Release(nilCtx) }},
		{Name: "WriteLock().Lock", Call: func() error { _, err := rw.WriteLock().Acquire(nilCtx); return err }},
		{Name: "WriteLock().TryLock", Call: func() error { _, err := rw.WriteLock().TryAcquire(nilCtx); return err }},
		{Name: "WriteLock().Unlock", Call: func() error { return rw.WriteLock().Release(nilCtx) }},
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
		_, err := rw.ReadLock().Acquire(mutex.WithOwner(ctx, nil))
		return err
	})

	// Unlocks without the lock, of the other lock, by another owner.
	add("ReadLock().Unlock while holding the write lock", []error{recipes.ErrNotHeld}, func() error {
		if _, err := rw.WriteLock().Acquire(ctx); err != nil {
			return err
		}
		defer rw.WriteLock().Release(ctx)
		return rw.ReadLock().Release(ctx)
	})
	add("WriteLock().Unlock by another explicit owner", []error{recipes.ErrNotOwner}, func() error {
		a, b := mutex.WithOwner(ctx, "a"), mutex.WithOwner(ctx, "b")
		if _, err := rw.WriteLock().Acquire(a); err != nil {
			return err
		}
		defer rw.WriteLock().Release(a)
		return rw.WriteLock().Release(b)
	})
	add("ReadLock().Unlock twice", []error{recipes.ErrNotHeld}, func() error {
		if _, err := rw.ReadLock().Acquire(ctx); err != nil {
			return err
		}
		if err := rw.ReadLock().Release(ctx); err != nil {
			return err
		}
		return rw.ReadLock().Release(ctx)
	})
	add("WriteLock().Release without Acquire", []error{recipes.ErrNotHeld}, func() error { return rw.WriteLock().Release(ctx) })

	// Upgrades: refused at once, leaving no node behind.
	for _, try := range []bool{false, true} {
		name := "WriteLock().Lock while holding the read lock"
		if try {
			name = "WriteLock().TryLock while holding the read lock"
		}
		add(name, []error{recipes.ErrUpgrade}, func() error {
			up := newRWLock(fmt.Sprintf("/misuse/upgrade/%v", try))
			if _, err := up.ReadLock().Acquire(ctx); err != nil {
				return err
			}
			defer up.ReadLock().Release(ctx)
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			var err error
			if try {
				_, err = up.WriteLock().TryAcquire(wctx)
			} else {
				_, err = up.WriteLock().Acquire(wctx)
			}
			if ps, perr := up.Participants(ctx); perr != nil || len(ps) != 1 {
				return fmt.Errorf("after the upgrade (%w): participants %v, %v; want the reader alone", err, ps, perr)
			}
			return err
		})
	}
	add("WriteLock().Lock while holding the read lock, explicit owner", []error{recipes.ErrUpgrade}, func() error {
		o := mutex.WithOwner(ctx, "o")
		if _, err := rw.ReadLock().Acquire(o); err != nil {
			return err
		}
		defer rw.ReadLock().Release(o)
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if _, err := rw.WriteLock().Acquire(wctx); err == nil { // another owner: it waits, and does not get it
			return errors.New("the write lock was granted while a reader holds")
		}
		uctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := rw.WriteLock().Acquire(mutex.WithOwner(uctx, "o"))
		return err
	})

	// A closed client (TestBadInput has ReadLock().Lock and New).
	add("closed client", noError, misuseEach([]error{recipes.ErrClosed}, []misuseSub{
		{Name: "ReadLock().TryLock", Call: func() error { _, err := closedRW.ReadLock().TryAcquire(ctx); return err }},
		{Name: "WriteLock().Lock", Call: func() error { _, err := closedRW.WriteLock().Acquire(ctx); return err }},
		{Name: "WriteLock().TryLock", Call: func() error { _, err := closedRW.WriteLock().TryAcquire(ctx); return err }},
		{Name: "Participants", Call: func() error { _, err := closedRW.Participants(ctx); return err }},
		{Name: "ReadLock().Participants", Call: func() error { _, err := closedRW.ReadLock().Participants(ctx); return err }},
	}))

	runMisuse(t, cases)
}

// The misuse-table machinery is shared: internal/testutil/misuse.go.
type (
	misuseTable = testutil.MisuseTable
	misuseSub   = testutil.MisuseSub
)

var (
	runMisuse  = testutil.RunMisuse
	misuseEach = testutil.MisuseEach
)
