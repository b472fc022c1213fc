package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/lockspec"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// TestMisuse feeds every exported function and method of package mutex
// its invalid inputs — bad paths, nil and zero values, a nil context, a
// closed client, unlocks without a lock and by the wrong owner — and checks
// that each returns an error matching the right sentinel and that none
// panics or hangs. It extends TestBadInput (mutex_test.go) and the owner
// tests (owner_test.go) and does not repeat their rows.
func TestMisuse(t *testing.T) {
	zkc := zktest.Start(t)
	servers := zkc.Servers()
	c := connect(t, servers)
	ctx := context.Background()
	var nilCtx context.Context
	badPaths := []string{"", "rel", "/trailing/", "/a//b", "/a/./b", "/a/../b", "/nul\x00", "/"}
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 3*time.Second) }
	invalidPath := []error{recipes.ErrInvalidPath}
	invalidArg := []error{recipes.ErrInvalidArgument}
	noError := []error(nil)

	closed, err := testutil.Dial(context.Background(), servers)
	require.NoError(t, err)
	closedM := newMutex(t, closed, "/misuse/closed")
	require.NoError(t, closed.Close(context.Background()))

	// A client behind a proxy that can lose the reply to one request.
	proxy := zktest.NewProxy(t, servers[0])
	pc := connect(t, []string{proxy.Addr()})
	lostReply := func(path string, call func() error) func() error {
		return func() error {
			proxy.CutAfterClientSends([]byte(path)) // the call's request carries path
			return call()
		}
	}

	var cases misuseTable
	add, tolerate := cases.Add, cases.Tolerate

	// Constructors.
	add("NewInternal(nil client)", []error{recipes.ErrNilClient}, func() error {
		_, err := newInternal(nil, "/misuse/x", lockspec.Spec{LockName: "x-", Driver: &contend.Driver{Names: []string{"x-"}}})
		return err
	})
	add("NewInternal(closed client)", []error{recipes.ErrClosed}, func() error {
		_, err := newInternal(closed, "/misuse/x", lockspec.Spec{LockName: "x-", Driver: &contend.Driver{Names: []string{"x-"}}})
		return err
	})
	var subs []misuseSub
	for _, p := range badPaths {
		subs = append(subs, misuseSub{Name: fmt.Sprintf("%q", p), Call: func() error {
			_, err := newInternal(c, p, lockspec.Spec{LockName: "x-", Driver: &contend.Driver{Names: []string{"x-"}}})
			return err
		}})
	}
	add("NewInternal(bad paths)", noError, misuseEach(invalidPath, subs))
	add("NewInternal(zero Spec)", invalidArg, func() error { _, err := newInternal(c, "/misuse/x", lockspec.Spec{}); return err })
	add("NewInternal(no driver)", invalidArg, func() error {
		_, err := newInternal(c, "/misuse/x", lockspec.Spec{LockName: "x-"})
		return err
	})
	add("NewInternal(no lock name)", invalidArg, func() error {
		_, err := newInternal(c, "/misuse/x", lockspec.Spec{Driver: &contend.Driver{Names: []string{"x-"}}})
		return err
	})
	add("NewInternal(nil option)", invalidArg, func() error {
		_, err := newInternal(c, "/misuse/x", lockspec.Spec{LockName: "x-", Driver: &contend.Driver{Names: []string{"x-"}}}, nil)
		return err
	})
	for _, name := range []string{"a/b", "nul\x00"} {
		// A lock name goes into every node name: refused when the lock is
		// made, or at the latest by Lock, which must not wait for ever.
		add(fmt.Sprintf("NewInternal(lock name %q) then Lock", name), []error{recipes.ErrInvalidArgument, recipes.ErrInvalidPath}, func() error {
			m, err := newInternal(c, "/misuse/lockname", lockspec.Spec{LockName: name, Driver: &contend.Driver{Names: []string{name}}})
			if err != nil {
				return err
			}
			ctx, cancel := short()
			defer cancel()
			l, err := m.Acquire(ctx)
			if err == nil {
				_ = l.Release(ctx)
			}
			return err
		})
	}
	add("New(WithExtraLockNames(valid, \"\"))", invalidArg, func() error {
		_, err := mutex.New(c, "/misuse/x", mutex.WithExtraLockNames(mutex.KazooLockName, ""))
		return err
	})
	add(`New("/locks/\U0001F600") then Lock`, invalidPath, func() error {
		// The server refuses a character outside the BMP in a path.
		m, err := mutex.New(c, "/locks/\U0001F600")
		if err != nil {
			return err
		}
		l, err := m.Acquire(ctx)
		if err == nil {
			_ = l.Release(ctx)
		}
		return err
	})
	add("New(WithData(nil))", noError, func() error { _, err := mutex.New(c, "/misuse/x", mutex.WithData(nil)); return err })

	// Revoke.
	add("Revoke(nil client)", []error{recipes.ErrNilClient}, func() error { return mutex.Revoke(ctx, nil, "/misuse/x") })
	subs = nil
	for _, p := range badPaths {
		// "/" too: the root is never a lock node, and its data is not ours to overwrite.
		subs = append(subs, misuseSub{Name: fmt.Sprintf("%q", p), Call: func() error { return mutex.Revoke(ctx, c, p) }})
	}
	add("Revoke(bad node paths)", noError, misuseEach(invalidPath, subs))
	add("Revoke(a node that does not exist)", []error{zk.ErrNoNode, recipes.ErrNotHeld}, func() error {
		return mutex.Revoke(ctx, c, "/misuse/revoke/_c_00000000-0000-4000-8000-000000000000-lock-0000000001")
	})
	tolerate("Revoke(nil ctx)", invalidArg, func() error {
		m := newMutex(t, c, "/misuse/revoke/nilctx")
		l, err := m.Acquire(ctx)
		if err != nil {
			return err
		}
		defer l.Release(ctx)
		return mutex.Revoke(nilCtx, c, l.Node())
	})
	tolerate("Revoke(nil ctx) with the reply lost", invalidArg, func() error {
		m := newMutex(t, pc, "/misuse/revoke/nilctxlost")
		l, err := m.Acquire(ctx)
		if err != nil {
			return err
		}
		defer l.Release(ctx)
		return lostReply(l.Node(), func() error { return mutex.Revoke(nilCtx, pc, l.Node()) })()
	})

	// Owners named in the context.
	add("WithOwner(nil ctx, owner)", noError, func() error { _ = mutex.WithOwner(nilCtx, "owner"); return nil })
	m := newMutex(t, c, "/misuse/owners")
	for name, owner := range map[string]any{"nil": nil, "[]int": []int{1}, "map": map[string]int{}, "func": func() {}} {
		octx := mutex.WithOwner(ctx, owner)
		add("Lock(WithOwner("+name+"))", invalidArg, func() error { _, err := m.Acquire(octx); return err })
		add("TryLock(WithOwner("+name+"))", invalidArg, func() error { _, err := m.TryAcquire(octx); return err })
		add("Unlock(WithOwner("+name+"))", invalidArg, func() error { return m.Release(octx) })
		add("IsHeld(WithOwner("+name+"))", noError, func() error {
			if m.IsHeld(octx) {
				return errors.New("held")
			}
			return nil
		})
	}
	add("Unlock by another explicit owner", []error{recipes.ErrNotOwner}, func() error {
		a, b := mutex.WithOwner(ctx, "a"), mutex.WithOwner(ctx, "b")
		if _, err := m.Acquire(a); err != nil {
			return err
		}
		defer m.Release(a)
		err := m.Release(b)
		if !m.IsHeld(a) {
			return fmt.Errorf("the wrong owner's Unlock released the lock (%w)", err)
		}
		return err
	})
	add("Unlock by the goroutine of an explicit owner", []error{recipes.ErrNotOwner}, func() error {
		a := mutex.WithOwner(ctx, "a")
		if _, err := m.Acquire(a); err != nil {
			return err
		}
		defer m.Release(a)
		return m.Release(ctx)
	})
	add("Unlock twice", []error{recipes.ErrNotHeld}, func() error {
		if _, err := m.Acquire(ctx); err != nil {
			return err
		}
		if err := m.Release(ctx); err != nil {
			return err
		}
		return m.Release(ctx)
	})
	add("Release without Acquire", []error{recipes.ErrNotHeld}, func() error { return m.Release(ctx) })

	// A nil context.
	add("TryLock(nil ctx)", invalidArg, func() error { _, err := m.TryAcquire(nilCtx); return err })
	add("Acquire(nil ctx)", invalidArg, func() error { _, err := m.Acquire(nilCtx); return err })
	add("Release(nil ctx)", invalidArg, func() error { return m.Release(nilCtx) })
	add("Participants(nil ctx)", invalidArg, func() error { _, err := m.Participants(nilCtx); return err })
	add("Holder(nil ctx)", invalidArg, func() error { _, err := m.Holder(nilCtx); return err })
	add("IsHeld(nil ctx)", noError, func() error {
		if m.IsHeld(nilCtx) {
			return errors.New("held")
		}
		return nil
	})
	add("Unlock(nil ctx) keeps the hold", invalidArg, func() error {
		if _, err := m.Acquire(ctx); err != nil {
			return err
		}
		defer m.Release(ctx)
		err := m.Release(nilCtx)
		if !m.IsHeld(ctx) {
			return fmt.Errorf("released (%w)", err)
		}
		return err
	})
	add("Lease.Release(nil ctx) keeps the hold", invalidArg, func() error {
		l, err := m.Acquire(ctx)
		if err != nil {
			return err
		}
		defer l.Release(ctx)
		err = l.Release(nilCtx)
		if l.Count() == 0 {
			return fmt.Errorf("released (%w)", err)
		}
		return err
	})
	tolerate("Lease.Token(nil ctx)", invalidArg, func() error {
		l, err := m.Acquire(ctx)
		if err != nil {
			return err
		}
		defer l.Release(ctx)
		_, err = l.Token(nilCtx)
		return err
	})
	tolerate("Lease.Token(nil ctx) with the reply lost", invalidArg, func() error {
		pm := newMutex(t, pc, "/misuse/token/lost")
		l, err := pm.Acquire(ctx)
		if err != nil {
			return err
		}
		defer l.Release(ctx)
		return lostReply(l.Node(), func() error { _, err := l.Token(nilCtx); return err })()
	})
	tolerate("Lease.Fenced(nil ctx)", invalidArg, func() error {
		l, err := m.Acquire(ctx)
		if err != nil {
			return err
		}
		defer l.Release(ctx)
		_, err = l.Fenced(nilCtx)
		return err
	})

	// Nil and zero values not in TestBadInput.
	var nilM *mutex.Mutex
	var zero mutex.Mutex
	for _, mm := range []struct {
		what string
		m    *mutex.Mutex
	}{{"nil Mutex", nilM}, {"zero Mutex", &zero}} {
		add(mm.what+" calls", noError, misuseEach(invalidArg, []misuseSub{
			{Name: "TryAcquire", Call: func() error { _, err := mm.m.TryAcquire(ctx); return err }},
			{Name: "Acquire", Call: func() error { _, err := mm.m.Acquire(ctx); return err }},
			{Name: "Release", Call: func() error { return mm.m.Release(ctx) }},
			{Name: "Participants", Call: func() error { _, err := mm.m.Participants(ctx); return err }},
			{Name: "Holder", Call: func() error { _, err := mm.m.Holder(ctx); return err }},
		}))
		add(mm.what+" queries", noError, func() error {
			if mm.m.IsHeld(ctx) || mm.m.IsHeldInProcess() {
				return errors.New("held")
			}
			return nil
		})
	}
	add("zero Mutex accessors", noError, func() error { _ = zero.Path(); return nil })
	add("nil and zero Lease", noError, misuseEach(invalidArg, []misuseSub{
		{Name: "nil Count", Call: func() error { _ = (*mutex.Lease)(nil).Count(); return recipes.ErrInvalidArgument }},
		{Name: "zero Count", Call: func() error { _ = new(mutex.Lease).Count(); return recipes.ErrInvalidArgument }},
		{Name: "zero Token", Call: func() error { _, err := new(mutex.Lease).Token(ctx); return err }},
		{Name: "zero Fenced", Call: func() error { _, err := new(mutex.Lease).Fenced(ctx); return err }},
	}))

	// MultiLock.
	var nilML *mutex.MultiLock
	for _, ml := range []struct {
		what string
		ml   *mutex.MultiLock
	}{{"nil MultiLock", nilML}, {"zero MultiLock", new(mutex.MultiLock)}} {
		add(ml.what+" calls", noError, misuseEach(invalidArg, []misuseSub{
			{Name: "Acquire", Call: func() error { _, err := ml.ml.Acquire(ctx); return err }},
		}))
	}
	add("NewMultiLock(typed nil *Mutex) then Lock", invalidArg, func() error {
		ml, err := mutex.NewMultiLock(newMutex(t, c, "/misuse/ml/a"), nilM)
		if err != nil {
			return err
		}
		_, err = ml.Acquire(ctx)
		return err
	})
	add("MultiLock.Acquire(nil ctx)", invalidArg, func() error {
		ml, err := mutex.NewMultiLock(newMutex(t, c, "/misuse/ml/a"), newMutex(t, c, "/misuse/ml/b"))
		if err != nil {
			return err
		}
		_, err = ml.Acquire(nilCtx)
		return err
	})
	add("zero MultiLease.Release", invalidArg, func() error { return new(mutex.MultiLease).Release(ctx) })
	add("MultiLock.Lock on a closed client", []error{recipes.ErrClosed}, func() error {
		ml, err := mutex.NewMultiLock(closedM)
		if err != nil {
			return err
		}
		_, err = ml.Acquire(ctx)
		return err
	})

	// A closed client (TestBadInput has Lock, New and Revoke).
	add("closed client: Mutex calls", noError, misuseEach([]error{recipes.ErrClosed}, []misuseSub{
		{Name: "TryAcquire", Call: func() error { _, err := closedM.TryAcquire(ctx); return err }},
		{Name: "Acquire", Call: func() error { _, err := closedM.Acquire(ctx); return err }},
		{Name: "Participants", Call: func() error { _, err := closedM.Participants(ctx); return err }},
		{Name: "Holder", Call: func() error { _, err := closedM.Holder(ctx); return err }},
	}))
	add("Unlock after the client closed", []error{recipes.ErrClosed, recipes.ErrLockLost}, func() error {
		cc := connect(t, servers)
		cm := newMutex(t, cc, "/misuse/closedhold")
		if _, err := cm.Acquire(ctx); err != nil {
			return err
		}
		if err := cc.Close(context.Background()); err != nil {
			return err
		}
		return cm.Release(ctx)
	})
	add("Lease.Unlock after the client closed", []error{recipes.ErrClosed, recipes.ErrLockLost}, func() error {
		cc := connect(t, servers)
		cm := newMutex(t, cc, "/misuse/closedhold")
		l, err := cm.Acquire(ctx)
		if err != nil {
			return err
		}
		if err := cc.Close(context.Background()); err != nil {
			return err
		}
		return l.Release(ctx)
	})
	add("Lease.Token after the client closed", []error{recipes.ErrClosed}, func() error {
		cc := connect(t, servers)
		cm := newMutex(t, cc, "/misuse/closedhold")
		l, err := cm.Acquire(ctx)
		if err != nil {
			return err
		}
		if err := cc.Close(context.Background()); err != nil {
			return err
		}
		_, err = l.Token(ctx)
		return err
	})

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

// newInternal makes a Mutex with rules of its own, as the rwlock does.
func newInternal(c *recipes.Client, path string, spec lockspec.Spec, opts ...mutex.Option) (*mutex.Mutex, error) {
	anyOpts := make([]any, len(opts))
	for i, o := range opts {
		anyOpts[i] = o
	}
	m, err := lockspec.NewMutex(c, path, spec, anyOpts)
	if err != nil {
		return nil, err
	}
	return m.(*mutex.Mutex), nil
}
