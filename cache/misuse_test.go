package cache_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// TestMisuse calls every method of Cache on a nil pointer and a zero
// value, with bad arguments and options, before Start, after Close, twice
// and on a closed client, and checks that each returns an error matching
// the right sentinel (the same "not made" error from every method of a
// nil or zero cache), never panics and never hangs.
func TestMisuse(t *testing.T) {
	zkc := testutil.SharedServer(t)
	ns := recipes.WithNamespace(testutil.Namespace(t))
	c := connect(t, zkc.Servers(), ns)
	ctx := context.Background()
	var nilCtx context.Context
	invalidArg := []error{recipes.ErrInvalidArgument}
	var cases testutil.MisuseTable
	add := cases.Add
	addNotMade(&cases)
	addConstructors(&cases, connect(t, zkc.Servers())) // no namespace: "/" is the root

	if _, err := c.Create(ctx, "/", nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, "/misuse", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	cc, err := cache.New(c, "/misuse")
	if err != nil {
		t.Fatal(err)
	}
	add("WaitReady before Start", []error{recipes.ErrNotStarted}, func() error { return cc.WaitReady(ctx) })
	add("reads before Start", nil, func() error { return reads(cc) })
	add("nil ctx", nil, testutil.MisuseEach(invalidArg, []testutil.MisuseSub{
		{Name: "Start", Call: func() error { return cc.Start(nilCtx) }},
		{Name: "WaitReady", Call: func() error { return cc.WaitReady(nilCtx) }},
		{Name: "Close", Call: func() error { return cc.Close(nilCtx) }},
	}))
	add("Start twice", []error{recipes.ErrAlreadyStarted}, func() error {
		if err := cc.Start(ctx); err != nil {
			return err
		}
		return cc.Start(ctx)
	})
	add("WaitReady", nil, func() error { return cc.WaitReady(ctx) })
	add("reads while running", nil, func() error { return reads(cc) })
	add("Listen(nil)", nil, func() error { cc.Listen(nil)(); return nil })
	add("Close twice", nil, func() error {
		if err := cc.Close(ctx); err != nil {
			return err
		}
		return cc.Close(ctx)
	})
	add("WaitReady after Close (initialized before)", nil, func() error { return cc.WaitReady(ctx) })
	add("Start after Close", []error{recipes.ErrClosed}, func() error { return cc.Start(ctx) })
	add("reads after Close", nil, func() error { return reads(cc) })

	never, err := cache.New(c, "/misuse2")
	if err != nil {
		t.Fatal(err)
	}
	add("Close before Start", nil, func() error { return never.Close(ctx) })
	add("Start after Close (never started)", []error{recipes.ErrClosed}, func() error { return never.Start(ctx) })
	add("WaitReady after Close (never started)", []error{recipes.ErrClosed}, func() error { return never.WaitReady(ctx) })

	blocked, err := cache.New(c, "/misuse3")
	if err != nil {
		t.Fatal(err)
	}
	add("Start with an ended ctx leaves nothing running", nil, func() error {
		dead, cancel := context.WithCancel(ctx)
		cancel()
		if err := blocked.Start(dead); err != nil {
			if !errors.Is(err, context.Canceled) {
				return fmt.Errorf("not context.Canceled: %w", err)
			}
			if err := blocked.Start(ctx); err != nil {
				return fmt.Errorf("a failed Start cannot be tried again: %w", err)
			}
		}
		return blocked.Close(ctx)
	})

	closed, err := testutil.Dial(ctx, zkc.Servers(), ns)
	if err != nil {
		t.Fatal(err)
	}
	onClosed, err := cache.New(closed, "/misuse4")
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(ctx); err != nil {
		t.Fatal(err)
	}
	add("Start on a closed client", []error{recipes.ErrClientClosed}, func() error { return onClosed.Start(ctx) })
	add("Close on a closed client", nil, func() error { return onClosed.Close(ctx) })
	testutil.RunMisuse(t, cases)
}

// reads calls every method of Cache that returns no error.
func reads(c *cache.Cache) error {
	_, _, _, _ = c.Path(), c.Persistent(), c.Resyncs(), c.Size()
	_, _ = c.Get("/misuse")
	_, _ = c.Children("/misuse")
	_, _ = c.Get("relative")
	_ = c.Snapshot()
	c.Walk(func(cache.Node) bool { return true })
	c.Walk(nil)
	_ = c.Initialized()
	c.Listen(func(cache.Event) {}, cache.ForAll(), nil)()
	_, stop := c.Subscribe(cache.AfterInitialized())
	stop()
	_, _ = cache.Event{}.String(), cache.EventType(99).String()
	return nil
}

// addConstructors adds the rows of bad constructor arguments and options.
func addConstructors(cases *testutil.MisuseTable, c *recipes.Client) {
	ctors := map[string]func(*recipes.Client, string, ...cache.Option) (*cache.Cache, error){
		"New": cache.New, "NewTreeCache": cache.NewTreeCache, "NewNodeCache": cache.NewNodeCache, "NewChildrenCache": cache.NewChildrenCache,
	}
	for name, mk := range ctors {
		call := func(c *recipes.Client, p string, o ...cache.Option) func() error {
			return func() error { _, err := mk(c, p, o...); return err }
		}
		cases.Add(name+"(nil client)", []error{recipes.ErrNilClient}, call(nil, "/x"))
		cases.Add(name+"(bad paths)", nil, testutil.MisuseEach([]error{recipes.ErrInvalidPath}, []testutil.MisuseSub{
			{Name: "relative", Call: call(c, "x")},
			{Name: "empty", Call: call(c, "")},
			{Name: "the root", Call: call(c, "/")},
		}))
		cases.Add(name+"(bad options)", nil, testutil.MisuseEach([]error{recipes.ErrInvalidArgument}, []testutil.MisuseSub{
			{Name: "nil Option", Call: call(c, "/x", nil)},
			{Name: "WithMaxDepth(-2)", Call: call(c, "/x", cache.WithMaxDepth(-2))},
		}))
	}
}

// addNotMade adds a row for every method of Cache on a nil pointer and a
// zero value: each returns the not-made error (ErrInvalidArgument), or
// nothing, and never panics.
func addNotMade(cases *testutil.MisuseTable) {
	ctx := context.Background()
	invalidArg := []error{recipes.ErrInvalidArgument}
	add := cases.Add
	for name, c := range map[string]*cache.Cache{"nil": nil, "zero": {}} {
		add(name+" Cache.Start", invalidArg, func() error { return c.Start(ctx) })
		add(name+" Cache.WaitReady", invalidArg, func() error { return c.WaitReady(ctx) })
		add(name+" Cache.Close", invalidArg, func() error { return c.Close(ctx) })
		add(name+" Cache reads", nil, func() error { return reads(c) })
	}
}
