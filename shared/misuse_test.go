package shared_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/shared"
)

// TestMisuse feeds every exported function and method of package shared
// its invalid inputs — bad paths, seeds and values out of range, nil and
// zero values, a nil context, a closed client, a closed value, writes
// before Start — and checks that each returns an error matching the right
// sentinel and that none panics or hangs.
func TestMisuse(t *testing.T) {
	zkc := zktest.Start(t)
	servers := zkc.Servers()
	c := connect(t, servers)
	ctx := context.Background()
	var nilCtx context.Context
	badPaths := []string{"", "rel", "/trailing/", "/a//b", "/a/./b", "/a/../b", "/nul\x00", "/", "/zookeeper/x"}
	invalidPath := []error{recipes.ErrInvalidPath}
	invalidArg := []error{recipes.ErrInvalidArgument}
	closedErr := []error{recipes.ErrClosed}
	notStarted := []error{recipes.ErrNotStarted}
	noError := []error(nil)

	count := startCount(t, c, "/misuse/count", 2)
	value := startValue(t, c, "/misuse/value", []byte("v"))

	closed, err := testutil.Dial(context.Background(), servers)
	require.NoError(t, err)
	closedCount := startCount(t, closed, "/misuse/closedcount", 1)
	closedValue := startValue(t, closed, "/misuse/closedvalue", nil)
	require.NoError(t, closed.Close(context.Background()))

	proxy := zktest.NewProxy(t, servers[0])
	pc := connect(t, []string{proxy.Addr()})
	lostReply := func(path string, call func() error) error {
		proxy.CutAfterClientSends([]byte(path)) // the call's request carries path
		return call()
	}

	var cases testutil.MisuseTable
	add, tolerate := cases.Add, cases.Tolerate

	// Constructors.
	pathRow := func(name string, call func(p string) error) {
		var subs []testutil.MisuseSub
		for _, p := range badPaths {
			subs = append(subs, testutil.MisuseSub{Name: fmt.Sprintf("%q", p), Call: func() error { return call(p) }})
		}
		add(name+"(bad paths)", noError, testutil.MisuseEach(invalidPath, subs))
	}
	pathRow("NewCount", func(p string) error { _, err := shared.NewCount(c, p, 1); return err })
	pathRow("NewValue", func(p string) error { _, err := shared.NewValue(c, p, nil); return err })
	add("constructors with a nil client", noError, testutil.MisuseEach([]error{recipes.ErrNilClient}, []testutil.MisuseSub{
		{Name: "NewCount", Call: func() error { _, err := shared.NewCount(nil, "/misuse/x", 1); return err }},
		{Name: "NewValue", Call: func() error { _, err := shared.NewValue(nil, "/misuse/x", nil); return err }},
	}))
	add("constructors with a closed client", noError, testutil.MisuseEach(closedErr, []testutil.MisuseSub{
		{Name: "NewCount", Call: func() error { _, err := shared.NewCount(closed, "/misuse/x", 1); return err }},
		{Name: "NewValue", Call: func() error { _, err := shared.NewValue(closed, "/misuse/x", nil); return err }},
	}))
	add("constructors with a nil option", noError, testutil.MisuseEach(invalidArg, []testutil.MisuseSub{
		{Name: "NewCount", Call: func() error { _, err := shared.NewCount(c, "/misuse/x", 1, nil); return err }},
		{Name: "NewValue", Call: func() error { _, err := shared.NewValue(c, "/misuse/x", nil, nil); return err }},
		{Name: "WithLogger(nil)", Call: func() error { _, err := shared.NewCount(c, "/misuse/x", 1, shared.WithLogger(nil)); return err }},
	}))
	for _, seed := range []int{math.MinInt32 - 1, math.MaxInt32 + 1, math.MinInt} {
		add(fmt.Sprintf("NewCount(seed %d)", seed), invalidArg, func() error {
			_, err := shared.NewCount(c, "/misuse/bigseed", seed)
			return err
		})
	}

	// Start.
	add("Start(nil ctx)", noError, testutil.MisuseEach(invalidArg, []testutil.MisuseSub{
		{Name: "Count", Call: func() error {
			sc, err := shared.NewCount(c, "/misuse/x", 1)
			if err != nil {
				return err
			}
			return sc.Start(nilCtx)
		}},
		{Name: "Value", Call: func() error {
			sv, err := shared.NewValue(c, "/misuse/x", nil)
			if err != nil {
				return err
			}
			return sv.Start(nilCtx)
		}},
	}))
	add("Start twice", []error{recipes.ErrAlreadyStarted}, func() error { return count.Start(ctx) })
	add("Start on a closed client", closedErr, func() error { return closedCount.Start(ctx) })

	// Nil and zero values.
	var nilCount *shared.Count
	var nilValue *shared.Value
	zeroCount, zeroValue := new(shared.Count), new(shared.Value)
	for name, sc := range map[string]*shared.Count{"nil": nilCount, "zero": zeroCount} {
		add(name+" Count calls", noError, testutil.MisuseEach(invalidArg, []testutil.MisuseSub{
			{Name: "Start", Call: func() error { return sc.Start(ctx) }},
			{Name: "Close", Call: func() error { return sc.Close(ctx) }},
			{Name: "Set", Call: func() error { return sc.Set(ctx, 1) }},
			{Name: "CompareAndSet", Call: func() error { err := sc.CompareAndSet(ctx, shared.VersionedValue[int]{}, 1); return err }},
		}))
		add(name+" Count queries", noError, func() error {
			_, _, _ = sc.Get(), sc.GetVersioned(), sc.Path()
			sc.Listen(func(shared.VersionedValue[int]) {})()
			ch, cancel := sc.Subscribe()
			cancel()
			<-ch // closed
			return nil
		})
	}
	for name, sv := range map[string]*shared.Value{"nil": nilValue, "zero": zeroValue} {
		add(name+" Value calls", noError, testutil.MisuseEach(invalidArg, []testutil.MisuseSub{
			{Name: "Start", Call: func() error { return sv.Start(ctx) }},
			{Name: "Close", Call: func() error { return sv.Close(ctx) }},
			{Name: "Set", Call: func() error { return sv.Set(ctx, nil) }},
			{Name: "CompareAndSet", Call: func() error { err := sv.CompareAndSet(ctx, shared.VersionedValue[[]byte]{}, nil); return err }},
		}))
		add(name+" Value queries", noError, func() error {
			_, _, _ = sv.Get(), sv.GetVersioned(), sv.Path()
			sv.Listen(func(shared.VersionedValue[[]byte]) {})()
			ch, cancel := sv.Subscribe()
			cancel()
			<-ch
			return nil
		})
	}

	// Writes.
	for _, v := range []int{math.MinInt32 - 1, math.MaxInt32 + 1} {
		add(fmt.Sprintf("Count.Set(%d)", v), invalidArg, func() error { return count.Set(ctx, v) })
		add(fmt.Sprintf("Count.CompareAndSet(%d)", v), invalidArg, func() error {
			err := count.CompareAndSet(ctx, count.GetVersioned(), v)
			return err
		})
	}
	tolerate("Count.Set(nil ctx)", invalidArg, func() error { return count.Set(nilCtx, 2) })
	tolerate("Count.CompareAndSet(nil ctx)", invalidArg, func() error {
		err := count.CompareAndSet(nilCtx, count.GetVersioned(), 2)
		return err
	})
	tolerate("Value.Set(nil ctx)", invalidArg, func() error { return value.Set(nilCtx, nil) })
	tolerate("Count.Set(nil ctx) with the reply lost", invalidArg, func() error {
		pcount := startCount(t, pc, "/misuse/count/lost", 1)
		return lostReply("/misuse/count/lost", func() error { return pcount.Set(nilCtx, 2) })
	})
	add("writes before Start", noError, func() error {
		sc, err := shared.NewCount(c, "/misuse/count/unstarted", 1)
		if err != nil {
			return err
		}
		sv, err := shared.NewValue(c, "/misuse/value/unstarted", nil)
		if err != nil {
			return err
		}
		defer sc.Close(ctx)
		defer sv.Close(ctx)
		return testutil.MisuseEach(notStarted, []testutil.MisuseSub{
			{Name: "Count.Set", Call: func() error { return sc.Set(ctx, 2) }},
			{Name: "Count.CompareAndSet", Call: func() error { err := sc.CompareAndSet(ctx, sc.GetVersioned(), 3); return err }},
			{Name: "Value.Set", Call: func() error { return sv.Set(ctx, nil) }},
			{Name: "Value.CompareAndSet", Call: func() error { err := sv.CompareAndSet(ctx, sv.GetVersioned(), nil); return err }},
		})()
	})
	add("Close twice, and before Start", noError, func() error {
		sc, err := shared.NewCount(c, "/misuse/count/twice", 1)
		if err != nil {
			return err
		}
		if err := sc.Close(ctx); err != nil {
			return err
		}
		return sc.Close(ctx)
	})
	add("writes after Close", noError, func() error {
		sc := startCount(t, c, "/misuse/count/afterclose", 1)
		sv := startValue(t, c, "/misuse/value/afterclose", nil)
		if err := sc.Close(ctx); err != nil {
			return err
		}
		if err := sv.Close(ctx); err != nil {
			return err
		}
		return testutil.MisuseEach(closedErr, []testutil.MisuseSub{
			{Name: "Count.Set", Call: func() error { return sc.Set(ctx, 2) }},
			{Name: "Count.CompareAndSet", Call: func() error { err := sc.CompareAndSet(ctx, sc.GetVersioned(), 3); return err }},
			{Name: "Count.Start", Call: func() error { return sc.Start(ctx) }},
			{Name: "Value.Set", Call: func() error { return sv.Set(ctx, nil) }},
		})()
	})
	add("closed client: writes", noError, testutil.MisuseEach(closedErr, []testutil.MisuseSub{
		{Name: "Count.Set", Call: func() error { return closedCount.Set(ctx, 2) }},
		{Name: "Count.CompareAndSet", Call: func() error {
			err := closedCount.CompareAndSet(ctx, closedCount.GetVersioned(), 2)
			return err
		}},
		{Name: "Value.Set", Call: func() error { return closedValue.Set(ctx, nil) }},
	}))
	add("Count.Listen(nil) then a change", noError, misuseChildren.InChild("sharedcount-listen-nil", servers))

	testutil.RunMisuse(t, cases)
}

var misuseChildren = testutil.MisuseChildren{
	"sharedcount-listen-nil": func(t *testing.T, servers []string) {
		c, err := testutil.Dial(context.Background(), servers)
		require.NoError(t, err)
		defer c.Close(context.Background())
		ctx := context.Background()
		sc := startCount(t, c, "/misuse/child/count", 1)
		sc.Listen(nil)
		ch, cancel := sc.Subscribe()
		defer cancel()
		<-ch // the current value
		require.NoError(t, sc.Set(ctx, 2))
		<-ch // the nil listener has had the value too
	},
}

// TestMisuseChild runs one of misuseChildren when the environment names it
// (testutil.MisuseChildren), and is skipped otherwise.
func TestMisuseChild(t *testing.T) { misuseChildren.RunChild(t) }
