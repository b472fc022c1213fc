package apicheck

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite api/zkrecipes.txt from the source")

// TestAPI compares the public API with the checked-in api/zkrecipes.txt.
// From 1.0 on, changes only add: a line removed or changed fails the test
// (run with -update only for a deliberate addition, and review the diff).
func TestAPI(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	got, err := List(root)
	require.NoError(t, err)
	golden := filepath.Join(root, "api", "zkrecipes.txt")
	if *update {
		require.NoError(t, Write(golden, got))
	}
	b, err := os.ReadFile(golden)
	require.NoError(t, err, "api/zkrecipes.txt: run go test ./internal/apicheck -update")
	want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	gotSet := map[string]bool{}
	for _, l := range got {
		gotSet[l] = true
	}
	wantSet := map[string]bool{}
	for _, l := range want {
		wantSet[l] = true
	}
	var removed, added []string
	for _, l := range want {
		if !gotSet[l] {
			removed = append(removed, l)
		}
	}
	for _, l := range got {
		if !wantSet[l] {
			added = append(added, l)
		}
	}
	if len(removed) > 0 || len(added) > 0 {
		t.Errorf("the public API differs from api/zkrecipes.txt (a deliberate addition: go test ./internal/apicheck -update, and review the diff)\nremoved or changed:\n  %s\nadded:\n  %s",
			strings.Join(removed, "\n  "), strings.Join(added, "\n  "))
	}
}

// TestSkipDir keeps internal packages and programs off the list.
func TestSkipDir(t *testing.T) {
	for rel, skip := range map[string]bool{
		"mutex": false, "recipes/zktest": false, "metrics/prommetrics": false,
		"internal/engine": true, "examples/bench": true, "cmd/zkinspect": true,
		"recipes/zktest/internal/launcher": true, "recipes/testdata": true, ".git": true,
	} {
		if got := skipDir(filepath.FromSlash(rel)); got != skip {
			t.Errorf("skipDir(%q) = %v, want %v", rel, got, skip)
		}
	}
}

// TestUnderlying prints a type defined on a type of another package of
// the module as Go's cmd/api does, by its underlying type: the other
// package may be internal, and its name says nothing to a user.
func TestUnderlying(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		dir := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644))
	}
	write("internal/b", `package b
type S struct {
	X, y int
	Y    *S
	Embedded
	hidden
	z chan Embedded
}
type Embedded struct{}
type hidden struct{}
type N int
type Via S
`)
	write("a", `package a
import (
	"time"
	"`+Module+`/internal/b"
)
type T b.S
type U b.N
type V b.Via
type W time.Duration
`)
	got, err := listDir(root, filepath.Join(root, "a"), "a")
	require.NoError(t, err)
	p := "pkg " + Module + "/a, "
	require.ElementsMatch(t, []string{
		p + "type T struct", p + "type T struct, X int", p + "type T struct, Y *b.S", p + "type T struct, embedded b.Embedded",
		p + "type U int",
		p + "type V struct", p + "type V struct, X int", p + "type V struct, Y *b.S", p + "type V struct, embedded b.Embedded",
		p + "type W time.Duration",
	}, got)
}
