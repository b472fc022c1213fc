// Package lifecycle holds the one lifecycle of every long-lived recipe:
// latent, then started, then closed, each step one compare-and-set, as
// Curator's CuratorCacheImpl keeps its State, and the goroutine the
// recipe runs between Start and Close. It is a leaf of the core: the
// recipes share it, so that Start, Close and every call between them
// answer alike everywhere.
package lifecycle

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// State is a long-lived recipe's life: latent, then started, then
// closed, and the goroutine it runs meanwhile (Go, Stop). The zero value
// is latent, with no goroutine. Every long-lived recipe keeps one.
type State struct {
	s atomic.Int32

	mu     sync.Mutex         // Go and Stop: a Close during Start finds the goroutine
	cancel context.CancelFunc // ends the goroutine's ctx; nil: none started
	ended  chan struct{}      // closed once it has returned
}

const (
	latent int32 = iota
	started
	closed
)

// Start moves latent to started. Otherwise it returns an error named
// what: ErrAlreadyStarted ("<what>: already started"), or ErrClosed
// ("<what>: start: closed").
func (l *State) Start(what string) error {
	if l.s.CompareAndSwap(latent, started) {
		return nil
	}
	if l.s.Load() == closed {
		return zkerr.Namedf(what, "start: %w", zkerr.ErrClosed)
	}
	return zkerr.Named(what, zkerr.ErrAlreadyStarted)
}

// Abort moves started back to latent: the Start that moved it failed and
// left nothing, so Start may be called again. It does nothing once
// closed, and then reports false: a Close came during the failed Start
// and took it for started.
func (l *State) Abort() bool { return l.s.CompareAndSwap(started, latent) }

// Close moves to closed. first reports whether this call did (not an
// earlier one); wasStarted whether Start had succeeded before it.
func (l *State) Close() (first, wasStarted bool) {
	prev := l.s.Swap(closed)
	return prev != closed, prev == started
}

// Running returns nil while started, else an error named what for op
// ("": none) wrapping ErrNotStarted or ErrClosed.
func (l *State) Running(what, op string) error {
	var err error
	switch l.s.Load() {
	case started:
		return nil
	case closed:
		err = zkerr.ErrClosed
	default:
		err = zkerr.ErrNotStarted
	}
	if op != "" {
		err = fmt.Errorf("%s: %w", op, err)
	}
	return zkerr.Named(what, err)
}

// Closed reports whether Close was called.
func (l *State) Closed() bool { return l.s.Load() == closed }

// Started reports whether Start succeeded and Close was not called.
func (l *State) Started() bool { return l.s.Load() == started }

// Go runs fn on the recipe's goroutine, with a ctx that keeps ctx's
// values and ends at Stop (or Cancel). When l is closed already (a Close
// came during Start and found no goroutine to stop) fn does not run, and
// Go returns an error named what wrapping ErrClosed ("<what>: start:
// closed"). Call it once per successful Start.
func (l *State) Go(ctx context.Context, what string, fn func(context.Context)) error {
	l.mu.Lock() // a Close after the check below finds cancel set
	defer l.mu.Unlock()
	if l.Closed() {
		return zkerr.Namedf(what, "start: %w", zkerr.ErrClosed)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ended := make(chan struct{})
	l.cancel, l.ended = cancel, ended
	go func() {
		defer close(ended)
		fn(rctx)
	}()
	return nil
}

// Ended returns a channel closed once the goroutine Go started has
// returned; nil while Go has started none.
func (l *State) Ended() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended
}

// Cancel ends the goroutine's ctx, if Go started one, without waiting
// for it to return: for a Close that has work to do meanwhile, or that
// runs on the goroutine itself. Call it after Close, so that no Go starts
// another.
func (l *State) Cancel() {
	l.mu.Lock()
	cancel := l.cancel
	l.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Stop ends the goroutine Go started, if any, and waits until it has
// returned, or until ctx ends: then it returns an error named what
// wrapping ctx.Err() ("<what>: close: context canceled"). Call it after
// Close, so that no Go starts another.
func (l *State) Stop(ctx context.Context, what string) error {
	l.Cancel()
	ended := l.Ended()
	if ended == nil {
		return nil
	}
	select {
	case <-ended:
		return nil
	case <-ctx.Done():
		return zkerr.Namedf(what, "close: %w", ctx.Err())
	}
}
