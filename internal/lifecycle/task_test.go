package lifecycle

import (
	"context"
	"errors"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// Go runs the goroutine with a ctx that keeps the caller's values and
// ends at Stop, which waits for it; Stop without a goroutine does
// nothing; a Go after Close refuses, and a Stop whose ctx ends gives up
// waiting with an error wrapping ctx.Err().
func TestTask(t *testing.T) {
	var (
		l    State
		task Task
	)
	if err := task.Stop(context.Background(), "queue"); err != nil {
		t.Fatalf("Stop with no goroutine = %v", err)
	}
	type key struct{}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	cancel() // Start's ctx ending does not end the goroutine
	got, ended := make(chan any, 1), make(chan struct{})
	if err := task.Go(ctx, &l, "queue", func(ctx context.Context) {
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
	if err := task.Stop(context.Background(), "queue"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("Stop returned before the goroutine")
	}
	if err := task.Go(context.Background(), &l, "queue", func(context.Context) { t.Error("ran after Close") }); !errors.Is(err, zkerr.ErrClosed) {
		t.Fatalf("Go after Close = %v", err)
	}

	var stuck Task
	release := make(chan struct{})
	defer close(release)
	if err := stuck.Go(context.Background(), &State{}, "queue", func(context.Context) { <-release }); err != nil {
		t.Fatal(err)
	}
	if err := stuck.Stop(ctx, "queue"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop with an ended ctx = %v", err)
	}
}
