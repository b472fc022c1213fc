package barrier_test

import (
	"context"
	"testing"

	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// TestMisuse calls every method of every type of package barrier on a nil
// pointer and a zero value, with bad arguments, out of order and on a
// closed client, and checks that each returns an error matching the right
// sentinel (the same "not made" error from every method of a nil or zero
// barrier), never panics and never hangs.
func TestMisuse(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ns := recipes.WithNamespace(testutil.Namespace(t))
	c := connect(t, zkc.Servers(), ns)
	ctx := context.Background()
	var nilCtx context.Context
	invalidArg := []error{recipes.ErrInvalidArgument}
	invalidPath := []error{recipes.ErrInvalidPath}
	nilClient := []error{recipes.ErrNilClient}
	var cases testutil.MisuseTable
	add := cases.Add
	addNotMade(&cases)

	add("New(nil client)", nilClient, func() error { _, err := barrier.New(nil, "/b"); return err })
	add("New(relative path)", invalidPath, func() error { _, err := barrier.New(c, "b"); return err })
	add("New(empty path)", invalidPath, func() error { _, err := barrier.New(c, ""); return err })
	add("NewDouble(nil client)", nilClient, func() error { _, err := barrier.NewDouble(nil, "/d", 1); return err })
	add("NewDouble(relative path)", invalidPath, func() error { _, err := barrier.NewDouble(c, "d", 1); return err })
	add("NewDouble(0 members)", invalidArg, func() error { _, err := barrier.NewDouble(c, "/d", 0); return err })
	add("NewDouble(-1 members)", invalidArg, func() error { _, err := barrier.NewDouble(c, "/d", -1); return err })

	b, err := barrier.New(c, "/b")
	if err != nil {
		t.Fatal(err)
	}
	add("Barrier nil ctx", nil, testutil.MisuseEach(invalidArg, []testutil.MisuseSub{
		{Name: "Set", Call: func() error { return b.Set(nilCtx) }},
		{Name: "Remove", Call: func() error { return b.Remove(nilCtx) }},
		{Name: "IsSet", Call: func() error { _, err := b.IsSet(nilCtx); return err }},
		{Name: "Wait", Call: func() error { return b.Wait(nilCtx) }},
	}))
	add("Barrier.Remove before Set", nil, func() error { return b.Remove(ctx) })
	add("Barrier.Set twice", nil, func() error {
		if err := b.Set(ctx); err != nil {
			return err
		}
		return b.Set(ctx)
	})
	add("Barrier.Remove twice", nil, func() error {
		if err := b.Remove(ctx); err != nil {
			return err
		}
		return b.Remove(ctx)
	})

	d, err := barrier.NewDouble(c, "/d", 1)
	if err != nil {
		t.Fatal(err)
	}
	add("DoubleBarrier nil ctx", nil, testutil.MisuseEach(invalidArg, []testutil.MisuseSub{
		{Name: "Enter", Call: func() error { return d.Enter(nilCtx) }},
		{Name: "Leave", Call: func() error { return d.Leave(nilCtx) }},
		{Name: "Members", Call: func() error { _, _, err := d.Members(nilCtx); return err }},
	}))
	add("DoubleBarrier.Members before Enter", nil, func() error { _, _, err := d.Members(ctx); return err })
	add("DoubleBarrier.Leave before Enter", []error{recipes.ErrNotHeld}, func() error { return d.Leave(ctx) })
	add("DoubleBarrier.Enter twice", invalidArg, func() error {
		if err := d.Enter(ctx); err != nil {
			return err
		}
		return d.Enter(ctx)
	})
	add("DoubleBarrier.Leave twice", []error{recipes.ErrNotHeld}, func() error {
		if err := d.Leave(ctx); err != nil {
			return err
		}
		return d.Leave(ctx)
	})

	// A closed client.
	closed, err := testutil.Dial(ctx, zkc.Servers(), ns)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := barrier.New(closed, "/closed")
	if err != nil {
		t.Fatal(err)
	}
	cd, err := barrier.NewDouble(closed, "/closed2", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(ctx); err != nil {
		t.Fatal(err)
	}
	add("on a closed client", nil, testutil.MisuseEach([]error{recipes.ErrClientClosed}, []testutil.MisuseSub{
		{Name: "Barrier.Set", Call: func() error { return cb.Set(ctx) }},
		{Name: "Barrier.Remove", Call: func() error { return cb.Remove(ctx) }},
		{Name: "Barrier.IsSet", Call: func() error { _, err := cb.IsSet(ctx); return err }},
		{Name: "Barrier.Wait", Call: func() error { return cb.Wait(ctx) }},
		{Name: "DoubleBarrier.Enter", Call: func() error { return cd.Enter(ctx) }},
		{Name: "DoubleBarrier.Leave", Call: func() error { return cd.Leave(ctx) }},
		{Name: "DoubleBarrier.Members", Call: func() error { _, _, err := cd.Members(ctx); return err }},
	}))
	testutil.RunMisuse(t, cases)
}

// addNotMade adds a row for every method of every type on a nil pointer
// and a zero value: each returns the not-made error (ErrInvalidArgument),
// or nothing, and never panics.
func addNotMade(cases *testutil.MisuseTable) {
	ctx := context.Background()
	invalidArg := []error{recipes.ErrInvalidArgument}
	add := cases.Add
	for name, b := range map[string]*barrier.Barrier{"nil": nil, "zero": {}} {
		add(name+" Barrier.Set", invalidArg, func() error { return b.Set(ctx) })
		add(name+" Barrier.Remove", invalidArg, func() error { return b.Remove(ctx) })
		add(name+" Barrier.IsSet", invalidArg, func() error { _, err := b.IsSet(ctx); return err })
		add(name+" Barrier.Wait", invalidArg, func() error { return b.Wait(ctx) })
		add(name+" Barrier reads", nil, func() error { _ = b.Path(); return nil })
	}
	for name, d := range map[string]*barrier.DoubleBarrier{"nil": nil, "zero": {}} {
		add(name+" DoubleBarrier.Enter", invalidArg, func() error { return d.Enter(ctx) })
		add(name+" DoubleBarrier.Leave", invalidArg, func() error { return d.Leave(ctx) })
		add(name+" DoubleBarrier.Members", invalidArg, func() error { _, _, err := d.Members(ctx); return err })
		add(name+" DoubleBarrier reads", nil, func() error { _, _ = d.Path(), d.Node(); return nil })
	}
}
