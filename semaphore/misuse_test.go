package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/shared"
)

// TestMisuse feeds every exported function and method of package semaphore
// its invalid inputs — bad paths, counts ≤ 0 and out of range, nil and zero
// values, a nil context, a closed client, leases
// returned twice — and checks that each returns an error matching the right
// sentinel and that none panics or hangs. It extends TestBadInput
// (semaphore_test.go) and does not repeat its rows.
func TestMisuse(t *testing.T) {
	zkc := zktest.Start(t)
	servers := zkc.Servers()
	c := connect(t, servers)
	ctx := context.Background()
	var nilCtx context.Context
	badPaths := []string{"", "rel", "/trailing/", "/a//b", "/a/./b", "/a/../b", "/nul\x00", "/"}
	invalidPath := []error{recipes.ErrInvalidPath}
	invalidArg := []error{recipes.ErrInvalidArgument}
	closedErr := []error{recipes.ErrClosed}
	noError := []error(nil)

	count := startCount(t, c, "/misuse/count", 2)

	closed, err := testutil.Dial(context.Background(), servers)
	require.NoError(t, err)
	closedSem := newSem(t, closed, "/misuse/closed", 2)
	closedMutex, err := semaphore.NewMutex(closed, "/misuse/closedmutex")
	require.NoError(t, err)
	require.NoError(t, closed.Close(context.Background()))

	proxy := zktest.NewProxy(t, servers[0])
	pc := connect(t, []string{proxy.Addr()})
	lostReply := func(path string, call func() error) error {
		proxy.CutAfterClientSends([]byte(path)) // the call's request carries path
		return call()
	}

	var cases misuseTable
	add, tolerate := cases.Add, cases.Tolerate

	// Constructors.
	pathRow := func(name string, call func(p string) error) {
		var subs []misuseSub
		for _, p := range badPaths {
			subs = append(subs, misuseSub{Name: fmt.Sprintf("%q", p), Call: func() error { return call(p) }})
		}
		add(name+"(bad paths)", noError, misuseEach(invalidPath, subs))
	}
	pathRow("New", func(p string) error { _, err := semaphore.New(c, p, 1); return err })
	pathRow("NewWithCount", func(p string) error { _, err := semaphore.NewWithCount(c, p, count); return err })
	pathRow("NewMutex", func(p string) error { _, err := semaphore.NewMutex(c, p); return err })
	add("constructors with a nil client", noError, misuseEach([]error{recipes.ErrNilClient}, []misuseSub{
		{Name: "NewWithCount", Call: func() error { _, err := semaphore.NewWithCount(nil, "/misuse/x", count); return err }},
		{Name: "NewMutex", Call: func() error { _, err := semaphore.NewMutex(nil, "/misuse/x"); return err }},
	}))
	add("constructors with a closed client", noError, misuseEach(closedErr, []misuseSub{
		{Name: "NewWithCount", Call: func() error { _, err := semaphore.NewWithCount(closed, "/misuse/x", count); return err }},
		{Name: "NewMutex", Call: func() error { _, err := semaphore.NewMutex(closed, "/misuse/x"); return err }},
	}))
	add("constructors with a nil option", noError, misuseEach(invalidArg, []misuseSub{
		{Name: "NewWithCount", Call: func() error { _, err := semaphore.NewWithCount(c, "/misuse/x", count, nil); return err }},
		{Name: "NewMutex", Call: func() error { _, err := semaphore.NewMutex(c, "/misuse/x", nil); return err }},
	}))
	add("New(math.MinInt)", invalidArg, func() error { _, err := semaphore.New(c, "/misuse/x", math.MinInt); return err })
	add("NewWithCount(nil SharedCount)", invalidArg, func() error { _, err := semaphore.NewWithCount(c, "/misuse/nilcount", nil); return err })
	add("NewWithCount(zero SharedCount)", invalidArg, func() error {
		s, err := semaphore.NewWithCount(c, "/misuse/zerocount", new(shared.Count))
		if err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		l, err := s.Acquire(actx)
		if err == nil {
			_ = l.Release(ctx)
		}
		return err
	})

	// Semaphore.
	s := newSem(t, c, "/misuse/sem", 2)
	for _, n := range []int{0, -1, 3, math.MinInt} {
		add(fmt.Sprintf("TryAcquireN(%d)", n), invalidArg, func() error { _, err := s.TryAcquireN(ctx, n); return err })
	}
	add("TryAcquire(nil ctx)", invalidArg, func() error { _, err := s.TryAcquire(nilCtx); return err })
	add("TryAcquireN(nil ctx)", invalidArg, func() error { _, err := s.TryAcquireN(nilCtx, 1); return err })
	withCount, err := semaphore.NewWithCount(c, "/misuse/withcount", count)
	require.NoError(t, err)
	for _, n := range []int{0, -1} {
		add(fmt.Sprintf("NewWithCount: AcquireN(%d)", n), invalidArg, func() error { _, err := withCount.AcquireN(ctx, n); return err })
	}
	tolerate("Participants(nil ctx)", invalidArg, func() error { _, err := s.Participants(nilCtx); return err })
	tolerate("Participants(nil ctx) with the reply lost", invalidArg, func() error {
		ps := newSem(t, pc, "/misuse/sem/lost", 1)
		return lostReply("/misuse/sem/lost/leases", func() error { _, err := ps.Participants(nilCtx); return err })
	})
	var nilSem *semaphore.Semaphore
	var zeroSem semaphore.Semaphore
	for _, sm := range []struct {
		what string
		s    *semaphore.Semaphore
	}{{"nil Semaphore", nilSem}, {"zero Semaphore", &zeroSem}} {
		add(sm.what+" calls", noError, misuseEach(invalidArg, []misuseSub{
			{Name: "Acquire", Call: func() error { _, err := sm.s.Acquire(ctx); return err }},
			{Name: "TryAcquire", Call: func() error { _, err := sm.s.TryAcquire(ctx); return err }},
			{Name: "AcquireN", Call: func() error { _, err := sm.s.AcquireN(ctx, 1); return err }},
			{Name: "TryAcquireN", Call: func() error { _, err := sm.s.TryAcquireN(ctx, 1); return err }},
			{Name: "Participants", Call: func() error { _, err := sm.s.Participants(ctx); return err }},
		}))
	}
	add("zero Semaphore queries", noError, func() error { _, _ = zeroSem.Path(), zeroSem.MaxLeases(); return nil })
	add("closed client: Semaphore calls", noError, misuseEach(closedErr, []misuseSub{
		{Name: "TryAcquire", Call: func() error { _, err := closedSem.TryAcquire(ctx); return err }},
		{Name: "TryAcquireN", Call: func() error { _, err := closedSem.TryAcquireN(ctx, 2); return err }},
		{Name: "Participants", Call: func() error { _, err := closedSem.Participants(ctx); return err }},
	}))

	// Leases.
	acquire := func(sem *semaphore.Semaphore) (*semaphore.Lease, error) { return sem.Acquire(ctx) }
	add("Lease.Close twice", []error{recipes.ErrNotHeld}, func() error {
		l, err := acquire(s)
		if err != nil {
			return err
		}
		if err := l.Release(ctx); err != nil {
			return err
		}
		return l.Release(ctx)
	})
	tolerate("Lease.Close(nil ctx)", invalidArg, func() error {
		l, err := acquire(s)
		if err != nil {
			return err
		}
		defer l.Release(ctx)
		return l.Release(nilCtx)
	})
	tolerate("Lease.Data(nil ctx)", invalidArg, func() error {
		l, err := acquire(s)
		if err != nil {
			return err
		}
		defer l.Release(ctx)
		_, err = l.Data(nilCtx)
		return err
	})
	tolerate("Lease.Data(nil ctx) with the reply lost", invalidArg, func() error {
		l, err := acquire(newSem(t, pc, "/misuse/sem/datalost", 1))
		if err != nil {
			return err
		}
		defer l.Release(ctx)
		return lostReply(l.Node(), func() error { _, err := l.Data(nilCtx); return err })
	})
	tolerate("Lease.Fenced(nil ctx)", invalidArg, func() error {
		l, err := acquire(s)
		if err != nil {
			return err
		}
		defer l.Release(ctx)
		_, err = l.Fenced(nilCtx)
		return err
	})
	add("Lease.Data after Close", []error{recipes.ErrNotHeld, recipes.ErrLockLost}, func() error {
		l, err := acquire(s)
		if err != nil {
			return err
		}
		if err := l.Release(ctx); err != nil {
			return err
		}
		_, err = l.Data(ctx)
		return err
	})
	add("Lease.Data after the client closed", closedErr, func() error {
		cc := connect(t, servers)
		l, err := acquire(newSem(t, cc, "/misuse/sem/closeddata", 1))
		if err != nil {
			return err
		}
		if err := cc.Close(context.Background()); err != nil {
			return err
		}
		_, err = l.Data(ctx)
		return err
	})
	add("Lease.Close after the client closed", []error{recipes.ErrClosed, recipes.ErrLockLost, nil}, func() error {
		cc := connect(t, servers)
		l, err := acquire(newSem(t, cc, "/misuse/sem/closedlease", 1))
		if err != nil {
			return err
		}
		if err := cc.Close(context.Background()); err != nil {
			return err
		}
		return l.Release(ctx)
	})
	add("nil and zero Lease", noError, misuseEach(invalidArg, []misuseSub{
		{Name: "nil Close", Call: func() error { return (*semaphore.Lease)(nil).Release(ctx) }},
		{Name: "nil Data", Call: func() error { _, err := (*semaphore.Lease)(nil).Data(ctx); return err }},
		{Name: "zero Data", Call: func() error { _, err := new(semaphore.Lease).Data(ctx); return err }},
		{Name: "zero Token", Call: func() error { _, err := new(semaphore.Lease).Token(ctx); return err }},
		{Name: "zero Fenced", Call: func() error { _, err := new(semaphore.Lease).Fenced(ctx); return err }},
	}))
	add("ReleaseAll(nil)", noError, func() error { return semaphore.ReleaseAll(ctx, nil) })
	add("ReleaseAll(nil leases)", noError, func() error { return semaphore.ReleaseAll(ctx, []*semaphore.Lease{nil, nil}) })
	add("ReleaseAll(a zero lease)", invalidArg, func() error { return semaphore.ReleaseAll(ctx, []*semaphore.Lease{new(semaphore.Lease)}) })
	add("ReturnAll twice", []error{recipes.ErrNotHeld}, func() error {
		ls, err := s.AcquireN(ctx, 2)
		if err != nil {
			return err
		}
		if err := semaphore.ReleaseAll(ctx, ls); err != nil {
			return err
		}
		return semaphore.ReleaseAll(ctx, ls)
	})
	tolerate("ReleaseAll(nil ctx)", invalidArg, func() error {
		ls, err := s.AcquireN(ctx, 1)
		if err != nil {
			return err
		}
		defer semaphore.ReleaseAll(ctx, ls)
		return semaphore.ReleaseAll(nilCtx, ls)
	})

	// The semaphore mutex.
	sm, err := semaphore.NewMutex(c, "/misuse/mutex")
	require.NoError(t, err)
	var nilSM *semaphore.Mutex
	for _, mm := range []struct {
		what string
		m    *semaphore.Mutex
	}{{"nil Mutex", nilSM}, {"zero Mutex", new(semaphore.Mutex)}} {
		add(mm.what+" calls", noError, misuseEach(invalidArg, []misuseSub{
			{Name: "TryAcquire", Call: func() error { _, err := mm.m.TryAcquire(ctx); return err }},
			{Name: "Acquire", Call: func() error { _, err := mm.m.Acquire(ctx); return err }},
			{Name: "Release", Call: func() error { return mm.m.Release(ctx) }},
		}))
		add(mm.what+".IsHeld", noError, func() error {
			if mm.m.IsHeld(ctx) || mm.m.IsHeldInProcess() {
				return errors.New("held")
			}
			return nil
		})
	}
	add("Mutex nil ctx", noError, misuseEach(invalidArg, []misuseSub{
		{Name: "TryAcquire", Call: func() error { _, err := sm.TryAcquire(nilCtx); return err }},
		{Name: "Acquire", Call: func() error { _, err := sm.Acquire(nilCtx); return err }},
	}))
	add("Mutex.Unlock without Lock", []error{recipes.ErrNotHeld}, func() error { return sm.Release(ctx) })
	add("Mutex.Release without Acquire", []error{recipes.ErrNotHeld}, func() error { return sm.Release(ctx) })
	add("Mutex.Unlock twice", []error{recipes.ErrNotHeld}, func() error {
		if _, err := sm.Acquire(ctx); err != nil {
			return err
		}
		if err := sm.Release(ctx); err != nil {
			return err
		}
		return sm.Release(ctx)
	})
	add("Mutex.TryLock while holding it (not reentrant)", []error{recipes.ErrNotAcquired}, func() error {
		if _, err := sm.Acquire(ctx); err != nil {
			return err
		}
		defer sm.Release(ctx)
		l, err := sm.TryAcquire(ctx)
		if err == nil {
			_ = l.Release(ctx)
			return errors.New("held twice")
		}
		return err
	})
	add("closed client: Mutex calls", noError, misuseEach(closedErr, []misuseSub{
		{Name: "TryAcquire", Call: func() error { _, err := closedMutex.TryAcquire(ctx); return err }},
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
