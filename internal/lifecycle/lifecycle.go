// Package lifecycle holds the one lifecycle of every long-lived recipe:
// latent, then started, then closed, each step one compare-and-set, as
// Curator's CuratorCacheImpl keeps its State. It is a leaf of the core:
// the recipes share it, so that Start, Close and every call between them
// answer alike everywhere.
package lifecycle

import (
	"fmt"
	"sync/atomic"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// State is a long-lived recipe's life: latent, then started, then
// closed. The zero value is latent. Every long-lived recipe keeps one.
type State struct{ s atomic.Int32 }

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
