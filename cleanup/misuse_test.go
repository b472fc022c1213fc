package cleanup_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/cleanup"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
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
	add, tolerate := cases.Add, cases.Tolerate

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
			subs = append(subs, misuseSub{Name: fmt.Sprintf("%q", p), Call: func() error { return call(p) }})
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
	t.Cleanup(func() { r.Close(ctx) })
	pathRow("AddPath", []string{"", "rel", "/trail/", "/a//b", "/a/./b", "/a/../b", "/nul\x00", "/"}, r.AddPath)
	add("AddPath after Close", closedErr, func() error {
		r, err := cleanup.New(c)
		if err != nil {
			return err
		}
		if err := r.Close(ctx); err != nil {
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
		defer r.Close(ctx)
		return r.Start(nilCtx)
	})
	add("Start(nil ctx) with leader election", invalidArg, func() error {
		r, err := cleanup.New(c, cleanup.WithThreshold(time.Hour), cleanup.WithLeaderElection("/misuse/reapers", "id"))
		if err != nil {
			return err
		}
		defer r.Close(ctx)
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
		if err := r.Close(ctx); err != nil {
			return err
		}
		return r.Close(ctx)
	})
	add("Close after a failed Start", noError, func() error {
		r, err := cleanup.New(c, cleanup.WithThreshold(time.Hour), cleanup.WithLeaderElection("/misuse/reapers", "id"))
		if err != nil {
			return err
		}
		sctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := r.Start(sctx); err == nil {
			_ = r.Close(ctx)
			return errors.New("Start with a cancelled ctx succeeded")
		}
		return r.Close(ctx)
	})
	add("Start after the client closed", closedErr, func() error {
		cc := connect(t, servers)
		r, err := cleanup.New(cc, cleanup.WithThreshold(time.Hour), cleanup.WithPaths("/misuse/x"))
		if err != nil {
			return err
		}
		defer r.Close(ctx)
		if err := cc.Close(context.Background()); err != nil {
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
		defer r.Close(ctx)
		if err := cc.Close(context.Background()); err != nil {
			return err
		}
		return r.AddPath("/misuse/x")
	})

	// Nil and zero Reapers (TestBadInput has a zero Reaper's Start and Close).
	var nilR *cleanup.Reaper
	add("nil Reaper calls", noError, misuseEach(invalidArg, []misuseSub{
		{Name: "Start", Call: func() error { return nilR.Start(ctx) }},
		{Name: "Close", Call: func() error { return nilR.Close(ctx) }},
		{Name: "AddPath", Call: func() error { return nilR.AddPath("/misuse/x") }},
	}))
	add("zero Reaper.AddPath", invalidArg, func() error { return new(cleanup.Reaper).AddPath("/misuse/x") })
	add("zero Reaper queries", noError, func() error {
		var z cleanup.Reaper
		_, _ = z.Stats(), z.Tracked()
		return nil
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
