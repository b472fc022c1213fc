package lifecycle

import (
	"context"
	"sync"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// Task is the goroutine a long-lived recipe runs between Start and Close
// (a queue's consumer, a sharder's counts), kept beside its State: Go
// starts it unless Close came first, and Stop ends it and waits for it.
// The zero value has no goroutine.
type Task struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Go runs fn on a goroutine of its own, with a ctx that keeps ctx's
// values and ends at Stop. When l is closed already (a Close came during
// Start and found no goroutine to stop) fn does not run, and Go returns
// an error named what wrapping ErrClosed ("<what>: start: closed").
func (t *Task) Go(ctx context.Context, l *State, what string, fn func(context.Context)) error {
	t.mu.Lock() // a Close after the check below finds cancel set
	defer t.mu.Unlock()
	if l.Closed() {
		return zkerr.Namedf(what, "start: %w", zkerr.ErrClosed)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	t.cancel, t.done = cancel, done
	go func() {
		defer close(done)
		fn(rctx)
	}()
	return nil
}

// Stop ends the goroutine Go started, if any, and waits until it has
// returned, or until ctx ends: then it returns an error named what
// wrapping ctx.Err() ("<what>: close: context canceled"). Call it after
// the State's Close, so that no Go starts another.
func (t *Task) Stop(ctx context.Context, what string) error {
	t.mu.Lock()
	cancel, done := t.cancel, t.done
	t.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return zkerr.Namedf(what, "close: %w", ctx.Err())
	}
}
