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
