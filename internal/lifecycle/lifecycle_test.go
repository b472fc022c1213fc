package lifecycle

import (
	"errors"
	"strings"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// Each step is one compare-and-set: latent -> started -> closed, Abort
// back to latent only from started, and every refusal names the recipe.
func TestSteps(t *testing.T) {
	var l State
	if err := l.Running("cache", "get"); !errors.Is(err, zkerr.ErrNotStarted) || !strings.Contains(err.Error(), "get") {
		t.Fatalf("latent Running = %v", err)
	}
	if err := l.Start("cache"); err != nil {
		t.Fatal(err)
	}
	if err := l.Start("cache"); !errors.Is(err, zkerr.ErrAlreadyStarted) {
		t.Fatalf("second Start = %v", err)
	}
	if !l.Started() || l.Closed() || l.Running("cache", "") != nil {
		t.Fatal("started: not running")
	}
	if !l.Abort() || l.Started() {
		t.Fatal("Abort from started did not go back to latent")
	}
	if err := l.Start("cache"); err != nil {
		t.Fatal(err)
	}
	if first, was := l.Close(); !first || !was {
		t.Fatalf("Close = %v, %v", first, was)
	}
	if first, was := l.Close(); first || was {
		t.Fatalf("second Close = %v, %v", first, was)
	}
	if l.Abort() {
		t.Fatal("Abort after Close moved the state")
	}
	if err := l.Start("cache"); !errors.Is(err, zkerr.ErrClosed) {
		t.Fatalf("Start after Close = %v", err)
	}
	if err := l.Running("cache", "get"); !errors.Is(err, zkerr.ErrClosed) {
		t.Fatalf("Running after Close = %v", err)
	}
}
