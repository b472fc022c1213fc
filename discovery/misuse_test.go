package discovery_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// TestMisuse feeds package discovery its invalid inputs — nil clients and
// contexts, bad paths, names and service types, calls before Start and
// after Close, bad options — and checks that each returns an error
// matching the right sentinel and that none panics or hangs.
func TestMisuse(t *testing.T) {
	zkc := zktest.Start(t)
	c := connect(t, zkc.Servers())
	ctx := context.Background()
	var nilCtx context.Context
	invalidArg := []error{recipes.ErrInvalidArgument}
	var cases testutil.MisuseTable
	add := cases.Add

	add("New(nil client)", []error{recipes.ErrNilClient}, func() error { _, err := discovery.New(nil, "/s"); return err })
	add("New(relative path)", []error{recipes.ErrInvalidPath}, func() error { _, err := discovery.New(c, "s"); return err })
	add("New(WithLogger(nil))", invalidArg, func() error { _, err := discovery.New(c, "/s", discovery.WithLogger(nil)); return err })

	fresh, err := discovery.New(c, "/misuse")
	if err != nil {
		t.Fatal(err)
	}
	add("Register before Start", []error{recipes.ErrNotStarted}, func() error {
		return fresh.Register(ctx, &discovery.Instance{Name: "s", ID: "i"})
	})
	add("QueryForInstances before Start", []error{recipes.ErrNotStarted}, func() error { _, err := fresh.QueryForInstances(ctx, "s"); return err })
	add("Start(nil ctx)", invalidArg, func() error { return fresh.Start(nilCtx) })

	d := newDiscovery(t, c, "/misuse")
	add("Start twice", []error{recipes.ErrAlreadyStarted}, func() error { return d.Start(ctx) })
	add("Register(nil ctx)", invalidArg, func() error { return d.Register(nilCtx, &discovery.Instance{Name: "s", ID: "i"}) })
	add("Register(nil)", invalidArg, func() error { return d.Register(ctx, nil) })
	for _, in := range []discovery.Instance{{Name: "", ID: "i"}, {Name: "s", ID: ""}, {Name: "a/b", ID: "i"}, {Name: "s", ID: ".."}, {Name: "s", ID: "i", ServiceType: "WEIRD"}} {
		add("Register("+in.Name+"/"+in.ID+" "+string(in.ServiceType)+")", invalidArg, func() error { return d.Register(ctx, &in) })
	}
	add("Register with an invalid payload", invalidArg, func() error {
		return d.Register(ctx, &discovery.Instance{Name: "s", ID: "i", Payload: []byte("{")})
	})
	add("Update not registered", invalidArg, func() error { return d.Update(ctx, &discovery.Instance{Name: "s", ID: "nope"}) })
	add("Update(nil)", invalidArg, func() error { return d.Update(ctx, nil) })
	add("Unregister(bad id)", invalidArg, func() error { return d.Unregister(ctx, "s", "a/b") })
	add("QueryForInstance(bad name)", invalidArg, func() error { _, err := d.QueryForInstance(ctx, "", "i"); return err })
	add("NewServiceCache(bad name)", invalidArg, func() error { _, err := d.NewServiceCache("a/b"); return err })
	add("NewProvider(WithStrategy(nil))", invalidArg, func() error { _, err := d.NewProvider("s", discovery.WithStrategy(nil)); return err })
	add("NewProvider(WithFilter(nil))", invalidArg, func() error { _, err := d.NewProvider("s", discovery.WithFilter(nil)); return err })
	add("NewProvider(WithDownInstancePolicy(0, 1s))", invalidArg, func() error {
		_, err := d.NewProvider("s", discovery.WithDownInstancePolicy(0, time.Second))
		return err
	})
	add("ParseURISpec(x}y)", invalidArg, func() error { _, err := discovery.ParseURISpec("x}y"); return err })
	var noClass discovery.Payload[zone]
	add("New(WithPayload without a class)", invalidArg, func() error { _, err := discovery.New(c, "/s", discovery.WithPayload(noClass)); return err })
	add("Payload without a class: Set", invalidArg, func() error { return noClass.Set(&discovery.Instance{}, zone{}) })
	add("Payload without a class: Get", invalidArg, func() error { _, err := noClass.Get(&discovery.Instance{}); return err })
	add("Payload.Set(nil instance)", invalidArg, func() error { return detailsPayload.Set(nil, zone{}) })
	add("Payload.Get(nil instance)", invalidArg, func() error { _, err := detailsPayload.Get(nil); return err })
	add("Payload.Set(a channel)", invalidArg, func() error {
		return discovery.Payload[chan int]{Class: "C"}.Set(&discovery.Instance{}, make(chan int))
	})
	add("EncodePayload(a channel)", invalidArg, func() error { _, err := discovery.EncodePayload(make(chan int), ""); return err })

	sc, err := d.NewServiceCache("s")
	if err != nil {
		t.Fatal(err)
	}
	add("ServiceCache.Start(nil ctx)", invalidArg, func() error { return sc.Start(nilCtx) })
	add("ServiceCache.WaitReady before Start", []error{recipes.ErrNotStarted}, func() error { return sc.WaitReady(ctx) })
	closedCache, err := d.NewServiceCache("s")
	if err != nil {
		t.Fatal(err)
	}
	add("ServiceCache.Start after Close", []error{recipes.ErrClosed}, func() error {
		if err := closedCache.Close(ctx); err != nil {
			return err
		}
		return closedCache.Start(ctx)
	})
	closed, err := discovery.New(c, "/misuse")
	if err != nil {
		t.Fatal(err)
	}
	add("Register after Close", []error{recipes.ErrClosed}, func() error {
		if err := closed.Start(ctx); err != nil {
			return err
		}
		if err := closed.Close(ctx); err != nil {
			return err
		}
		return closed.Register(ctx, &discovery.Instance{Name: "s", ID: "i"})
	})
	add("Close twice", nil, func() error {
		if err := closed.Close(ctx); err != nil {
			return err
		}
		return closed.Close(ctx)
	})
	addNotMade(&cases)
	testutil.RunMisuse(t, cases)
}

// addNotMade adds a row for every method of every type on a nil pointer
// and a zero value: each returns the not-made error (ErrInvalidArgument),
// or nothing, and never panics.
func addNotMade(cases *testutil.MisuseTable) {
	ctx := context.Background()
	invalidArg := []error{recipes.ErrInvalidArgument}
	add := cases.Add
	in := &discovery.Instance{Name: "s", ID: "i"}
	for name, d := range map[string]*discovery.Discovery{"nil": nil, "zero": {}} {
		add(name+" Discovery.Start", invalidArg, func() error { return d.Start(ctx) })
		add(name+" Discovery.Register", invalidArg, func() error { return d.Register(ctx, in) })
		add(name+" Discovery.Update", invalidArg, func() error { return d.Update(ctx, in) })
		add(name+" Discovery.Unregister", invalidArg, func() error { return d.Unregister(ctx, "s", "i") })
		add(name+" Discovery.QueryForNames", invalidArg, func() error { _, err := d.QueryForNames(ctx); return err })
		add(name+" Discovery.QueryForInstances", invalidArg, func() error { _, err := d.QueryForInstances(ctx, "s"); return err })
		add(name+" Discovery.QueryForInstance", invalidArg, func() error { _, err := d.QueryForInstance(ctx, "s", "i"); return err })
		add(name+" Discovery.NewServiceCache", invalidArg, func() error { _, err := d.NewServiceCache("s"); return err })
		add(name+" Discovery.NewProvider", invalidArg, func() error { _, err := d.NewProvider("s"); return err })
		add(name+" Discovery.Close", invalidArg, func() error { return d.Close(ctx) })
		add(name+" Discovery reads", nil, func() error { _, _, _ = d.BasePath(), d.Registered(), d.Unreadable(); return nil })
	}
	for name, sc := range map[string]*discovery.ServiceCache{"nil": nil, "zero": {}} {
		add(name+" ServiceCache.Start", invalidArg, func() error { return sc.Start(ctx) })
		add(name+" ServiceCache.WaitReady", invalidArg, func() error { return sc.WaitReady(ctx) })
		add(name+" ServiceCache.Close", invalidArg, func() error { return sc.Close(ctx) })
		add(name+" ServiceCache reads", nil, func() error {
			_, _ = sc.Name(), sc.Instances()
			sc.Listen(func([]*discovery.Instance) {})()
			return nil
		})
	}
	for name, p := range map[string]*discovery.Provider{"nil": nil, "zero": {}} {
		add(name+" Provider.Start", invalidArg, func() error { return p.Start(ctx) })
		add(name+" Provider.WaitReady", invalidArg, func() error { return p.WaitReady(ctx) })
		add(name+" Provider.Close", invalidArg, func() error { return p.Close(ctx) })
		add(name+" Provider reads", nil, func() error {
			_, _, _ = p.Cache(), p.Instance(), p.Instances()
			p.NoteError(in)
			return nil
		})
	}
}
