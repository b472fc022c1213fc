package atomicval_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// TestMisuse feeds the constructors and methods their invalid inputs —
// bad paths and options, nil and zero values, a nil context, a closed
// client — and checks that each returns an error matching the right
// sentinel and that none panics or hangs.
func TestMisuse(t *testing.T) {
	srv := servers(t)
	c := connect(t, srv)
	ctx := context.Background()
	var nilCtx context.Context
	badPaths := []string{"", "rel", "/trailing/", "/a//b", "/a/./b", "/a/../b", "/nul\x00", "/", "/zookeeper/x"}
	invalidPath := []error{recipes.ErrInvalidPath}
	invalidArg := []error{recipes.ErrInvalidArgument}
	noError := []error(nil)

	closed, err := testutil.Dial(context.Background(), srv)
	require.NoError(t, err)
	closedN, err := atomicval.NewInt64(closed, "/misuse/atomic/closed")
	require.NoError(t, err)
	require.NoError(t, closed.Close(context.Background()))
	n, err := atomicval.NewInt64(c, "/misuse/atomic/n")
	require.NoError(t, err)

	var cases testutil.MisuseTable
	add := cases.Add
	var subs []testutil.MisuseSub
	for _, p := range badPaths {
		subs = append(subs,
			testutil.MisuseSub{Name: fmt.Sprintf("Int64 %q", p), Call: func() error { _, err := atomicval.NewInt64(c, p); return err }},
			testutil.MisuseSub{Name: fmt.Sprintf("Int32 %q", p), Call: func() error { _, err := atomicval.NewInt32(c, p); return err }},
			testutil.MisuseSub{Name: fmt.Sprintf("Value %q", p), Call: func() error { _, err := atomicval.NewValue(c, p); return err }},
			testutil.MisuseSub{Name: fmt.Sprintf("lock %q", p), Call: func() error {
				_, err := atomicval.NewInt64(c, "/a", atomicval.WithPromotedToLock(atomicval.PromotedToLock{Path: p}))
				return err
			}},
		)
	}
	add("New(bad paths)", noError, testutil.MisuseEach(invalidPath, subs))
	add("NewInt64(nil client)", []error{recipes.ErrNilClient}, func() error { _, err := atomicval.NewInt64(nil, "/a"); return err })
	add("NewValue(nil client)", []error{recipes.ErrNilClient}, func() error { _, err := atomicval.NewValue(nil, "/a"); return err })
	add("NewInt64(closed client)", []error{recipes.ErrClosed}, func() error { _, err := atomicval.NewInt64(closed, "/a"); return err })
	add("nil option", invalidArg, func() error { _, err := atomicval.NewInt32(c, "/a", nil); return err })
	add("WithLogger(nil)", invalidArg, func() error { _, err := atomicval.NewInt64(c, "/a", atomicval.WithLogger(nil)); return err })
	add("WithRetryPolicy(nil)", invalidArg, func() error { _, err := atomicval.NewInt64(c, "/a", atomicval.WithRetryPolicy(nil)); return err })
	add("negative lock timeout", invalidArg, func() error {
		_, err := atomicval.NewInt64(c, "/a", atomicval.WithPromotedToLock(atomicval.PromotedToLock{Path: "/l", Timeout: -time.Second}))
		return err
	})
	for _, lp := range []string{"/a", "/a/lock"} {
		add("lock path "+lp+" at or under /a", invalidArg, func() error {
			_, err := atomicval.NewInt64(c, "/a", atomicval.WithPromotedToLock(atomicval.PromotedToLock{Path: lp}))
			return err
		})
	}
	add("lock path /ab beside /a", noError, func() error {
		_, err := atomicval.NewInt64(c, "/a", atomicval.WithPromotedToLock(atomicval.PromotedToLock{Path: "/ab"}))
		return err
	})

	var zero64 atomicval.Int64
	var nil32 *atomicval.Int32
	var zeroV atomicval.Value
	add("zero Int64", invalidArg, func() error { _, err := zero64.Increment(ctx); return err })
	add("zero Int64 Get", invalidArg, func() error { _, err := zero64.Get(ctx); return err })
	add("nil Int32", invalidArg, func() error { _, err := nil32.CompareAndSet(ctx, 1, 2); return err })
	add("nil Int32 Set", invalidArg, func() error { return nil32.Set(ctx, 1) })
	add("zero Value", invalidArg, func() error { _, err := zeroV.TrySet(ctx, nil); return err })
	add("zero Value Initialize", invalidArg, func() error { _, err := zeroV.Initialize(ctx, nil); return err })
	add("Path of zero", noError, func() error {
		if zero64.Path() != "" || nil32.Path() != "" || zeroV.Path() != "" {
			return fmt.Errorf("a zero value has a path")
		}
		return nil
	})
	add("nil ctx", noError, testutil.MisuseEach(invalidArg, []testutil.MisuseSub{
		{Name: "Get", Call: func() error { _, err := n.Get(nilCtx); return err }},
		{Name: "Increment", Call: func() error { _, err := n.Increment(nilCtx); return err }},
		{Name: "CompareAndSet", Call: func() error { _, err := n.CompareAndSet(nilCtx, 0, 1); return err }},
		{Name: "Initialize", Call: func() error { _, err := n.Initialize(nilCtx, 0); return err }},
		{Name: "Set", Call: func() error { return n.Set(nilCtx, 0) }},
	}))
	add("Value.Update(nil)", invalidArg, func() error {
		v, err := atomicval.NewValue(c, "/misuse/atomic/v")
		if err != nil {
			return err
		}
		_, err = v.Update(ctx, nil)
		return err
	})
	add("closed client", noError, testutil.MisuseEach([]error{recipes.ErrClientClosed}, []testutil.MisuseSub{
		{Name: "Get", Call: func() error { _, err := closedN.Get(ctx); return err }},
		{Name: "Add", Call: func() error { _, err := closedN.Add(ctx, 2); return err }},
		{Name: "CompareAndSet", Call: func() error { _, err := closedN.CompareAndSet(ctx, 0, 1); return err }},
		{Name: "Initialize", Call: func() error { _, err := closedN.Initialize(ctx, 0); return err }},
		{Name: "Set", Call: func() error { return closedN.Set(ctx, 0) }},
	}))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	add("ended ctx", noError, testutil.MisuseEach([]error{context.Canceled}, []testutil.MisuseSub{
		{Name: "Get", Call: func() error { _, err := n.Get(cctx); return err }},
		{Name: "Increment", Call: func() error { _, err := n.Increment(cctx); return err }},
	}))
	testutil.RunMisuse(t, cases)
}
