package shared_test

// Interop tests: the Go Count shares paths with real Apache Curator
// 5.4 Count processes (Java, driven through internal/interop),
// against the same ZooKeeper server.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/zkrecipes/zkrecipes/internal/interop"
	"github.com/zkrecipes/zkrecipes/internal/testutil"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
	"github.com/zkrecipes/zkrecipes/shared"
)

// ioConnect connects a Client that is closed at the end of the test.
func ioConnect(t *testing.T, zkc *zktest.Cluster) *recipes.Client {
	t.Helper()
	return connect(t, zkc.Servers(), recipes.WithSessionTimeout(4*time.Second))
}

// ioOutput returns the non-empty stdout lines of a finished process.
func ioOutput(t *testing.T, p *interop.Proc) []string {
	t.Helper()
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range p.Lines() {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestCuratorInterop runs the Go Count against Curator 5.4's.
func TestCuratorInterop(t *testing.T) {
	zkc := testutil.CuratorServer(t)
	dir := t.TempDir() // the driver program is written here once
	interopSharedCount(t, zkc, dir)
}

// ioCuratorCounts reads the shared counts at paths with Curator's
// Count, in one process, and returns their values and versions.
func ioCuratorCounts(ctx context.Context, t *testing.T, zkc *zktest.Cluster, dir string, paths ...string) []shared.VersionedValue[int] {
	t.Helper()
	out := ioOutput(t, testutil.Curator(t, ctx, dir, append([]string{"sharedcount-get", zkc.ConnectString()}, paths...)...))
	if len(out) != len(paths) {
		t.Fatalf("sharedcount-get printed %q, want %d lines", out, len(paths))
	}
	vs := make([]shared.VersionedValue[int], len(out))
	for i, l := range out {
		if _, err := fmt.Sscanf(l, "%d %d", &vs[i].Value, &vs[i].Version); err != nil {
			t.Fatalf("sharedcount-get printed %q: %v", l, err)
		}
	}
	return vs
}

// interopSharedCount: Curator's SharedCount reads the values (a negative
// one and a large one too) the Go Count set, with the same version;
// the Go Count, watching, sees the value Curator sets; a Go
// Count opened afterwards reads Curator's value; and a count Curator
// creates is read by Go. (Each Curator process costs a JVM start, so one
// process reads, or sets, several counts.)
func interopSharedCount(t *testing.T, zkc *zktest.Cluster, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := "/interop/count-" + uuid.NewString()[:8]
	c := ioConnect(t, zkc)

	// Go writes: a seed, and values set after a seed.
	writes := []struct {
		seed, set int
		doSet     bool
	}{{seed: 7}, {seed: 1, set: 42, doSet: true}, {seed: 1, set: -5, doSet: true}, {seed: 0, set: 1 << 30, doSet: true}, {seed: -(1 << 31)}}
	paths := make([]string, len(writes))
	want := make([]shared.VersionedValue[int], len(writes))
	counts := make([]*shared.Count, len(writes))
	for i, w := range writes {
		paths[i] = fmt.Sprintf("%s/go%d", base, i)
		sc := startCount(t, c, paths[i], w.seed)
		if w.doSet {
			if err := sc.Set(ctx, w.set); err != nil {
				t.Fatal(err)
			}
		}
		counts[i], want[i] = sc, sc.GetVersioned()
	}
	if got := ioCuratorCounts(ctx, t, zkc, dir, paths...); !slices.Equal(got, want) {
		t.Errorf("Curator reads the counts Go wrote as %+v, want %+v", got, want)
	}

	// Curator writes: one of the counts above, which Go watches, and a
	// count Curator creates.
	sc := counts[0]
	changes, stop := sc.Subscribe()
	defer stop()
	if got := <-changes; got != want[0] {
		t.Errorf("Subscribe gave %+v first, want the current %+v", got, want[0])
	}
	fresh := base + "/curator"
	out := ioOutput(t, testutil.Curator(t, ctx, dir, "sharedcount-set", zkc.ConnectString(), paths[0], "-1000", fresh, "12345"))
	if len(out) != 2 {
		t.Fatalf("sharedcount-set printed %q", out)
	}
	select {
	case got := <-changes:
		if got.Value != -1000 {
			t.Errorf("Go's watching Count saw %+v after Curator set -1000", got)
		}
	case <-ctx.Done():
		t.Fatalf("Go's watching Count never saw Curator's -1000: %v", ctx.Err())
	}
	if got := sc.Get(); got != -1000 {
		t.Errorf("Get = %d after Curator set -1000", got)
	}
	other := startCount(t, ioConnect(t, zkc), paths[0], 0)
	if a, b := other.GetVersioned(), sc.GetVersioned(); a != b || a.Value != -1000 || a.Version != want[0].Version+1 {
		t.Errorf("a new Go Count reads %+v, the watching one %+v; want -1000 at version %d", a, b, want[0].Version+1)
	}
	fc := startCount(t, c, fresh, 1)
	if got := fc.GetVersioned(); got.Value != 12345 || got.Version != 1 {
		t.Errorf("Go reads the count Curator created as %+v, want 12345 at version 1 (seeded, then set)", got)
	}
}
