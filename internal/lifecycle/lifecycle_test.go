package lifecycle

import (
	"context"
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

// Go runs the goroutine with a ctx that keeps the caller's values and
// ends at Stop, which waits for it (Ended closes as it returns); Stop
// without a goroutine does nothing; a Go after Close refuses, and a Stop
// whose ctx ends gives up waiting with an error wrapping ctx.Err(), while
// Cancel ends the goroutine's ctx without waiting.
func TestGoAndStop(t *testing.T) {
	var l State
	if err := l.Stop(context.Background(), "queue"); err != nil || l.Ended() != nil {
		t.Fatalf("Stop with no goroutine = %v", err)
	}
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	cancel() // Start's ctx ending does not end the goroutine
	got, ended := make(chan any, 1), make(chan struct{})
	if err := l.Go(ctx, "queue", func(ctx context.Context) {
		got <- ctx.Value(key{})
		<-ctx.Done()
		close(ended)
	}); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != "v" {
		t.Fatalf("the goroutine's ctx value = %v", v)
	}
	l.Close()
	if err := l.Stop(context.Background(), "queue"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("Stop returned before the goroutine")
	}
	<-l.Ended()
	if err := l.Go(context.Background(), "queue", func(context.Context) { t.Error("ran after Close") }); !errors.Is(err, zkerr.ErrClosed) {
		t.Fatalf("Go after Close = %v", err)
	}

	var stuck State
	release := make(chan struct{})
	defer close(release)
	if err := stuck.Go(context.Background(), "queue", func(context.Context) { <-release }); err != nil {
		t.Fatal(err)
	}
	if err := stuck.Stop(ctx, "queue"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop with an ended ctx = %v", err)
	}

	var own State // Cancel from the goroutine itself: it does not wait for itself
	if err := own.Go(context.Background(), "selector", func(ctx context.Context) {
		own.Cancel()
		<-ctx.Done()
	}); err != nil {
		t.Fatal(err)
	}
	<-own.Ended()
}
