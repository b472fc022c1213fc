package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// TestCreateMisuse feeds the protected create and the container create,
// which recipes reach only through Enter and Own, their invalid inputs: a
// nil, zero or closed client, bad server paths and names, a nil context.
// Each returns an error matching the right sentinel; none panics or hangs.
// (recipes' TestMisuse does the same for Enter, Own and the rest.)
func TestCreateMisuse(t *testing.T) {
	zkc := zktest.Start(t)
	servers := zkc.Servers()
	c := (*engine.Client)(connect(t, servers))
	ctx := context.Background()
	rc, err := testutil.Dial(ctx, servers)
	require.NoError(t, err)
	require.NoError(t, rc.Close(ctx))
	closed := (*engine.Client)(rc)
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 3*time.Second) }

	var cases testutil.MisuseTable
	add, tolerate := cases.Add, cases.Tolerate
	invalidArg := []error{recipes.ErrInvalidArgument}
	for _, cl := range []struct {
		what string
		c    *engine.Client
		want error
	}{
		{"nil Client", nil, recipes.ErrNilClient},
		{"zero Client", new(engine.Client), recipes.ErrNilClient},
		{"closed Client", closed, recipes.ErrClosed},
	} {
		want := []error{cl.want}
		add(cl.what+".CreateProtected", want, func() error {
			_, _, err := engine.CreateProtected(cl.c, ctx, "/misuse", "lock-", nil)
			return err
		})
		add(cl.what+".CreateProtectedFixed", want, func() error {
			_, _, err := engine.CreateProtectedFixed(cl.c, ctx, "/misuse", "fixed", nil)
			return err
		})
		add(cl.what+".CreateContainer", want, func() error { _, err := engine.CreateContainer(cl.c, ctx, "/misuse"); return err })
	}

	// Server paths that go-zookeeper or the server would refuse.
	for _, p := range []string{"", "rel", "/trailing/", "/a//b", "/a/./b", "/a/../b", "/nul\x00"} {
		bad := []error{recipes.ErrInvalidPath}
		add(fmt.Sprintf("CreateProtected(%q)", p), bad, func() error {
			ctx, cancel := short()
			defer cancel()
			_, _, err := engine.CreateProtected(c, ctx, p, "lock-", nil)
			return err
		})
		add(fmt.Sprintf("CreateProtectedFixed(%q)", p), bad, func() error {
			ctx, cancel := short()
			defer cancel()
			_, _, err := engine.CreateProtectedFixed(c, ctx, p, "fixed", nil)
			return err
		})
	}
	// Names a recipe builds its node names from.
	for _, name := range []string{"a/b", "nul\x00"} {
		add(fmt.Sprintf("CreateProtected(name %q)", name), []error{recipes.ErrInvalidArgument, recipes.ErrInvalidPath}, func() error {
			ctx, cancel := short()
			defer cancel()
			_, _, err := engine.CreateProtected(c, ctx, "/misuse/names", name, nil)
			return err
		})
	}
	// A nil context: refused, or taken as context.Background().
	var nilCtx context.Context
	tolerate("CreateProtected(nil ctx)", invalidArg, func() error {
		p, sid, err := engine.CreateProtected(c, nilCtx, "/misuse/nilctx", "lock-", nil)
		if err == nil {
			_ = c.GuaranteedDelete(ctx, p, sid)
		}
		return err
	})
	tolerate("CreateProtectedFixed(nil ctx)", invalidArg, func() error {
		p, sid, err := engine.CreateProtectedFixed(c, nilCtx, "/misuse/nilctx", "fixed", nil)
		if err == nil {
			_ = c.GuaranteedDelete(ctx, p, sid)
		}
		return err
	})
	testutil.RunMisuse(t, cases)
}
