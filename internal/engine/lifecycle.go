package engine

import (
	"fmt"
	"sync/atomic"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// Lifecycle is a long-lived recipe's life: latent, then started, then
// closed, each step one compare-and-set (Curator's CuratorCacheImpl
// State). The zero value is latent. Every long-lived recipe keeps one,
// so that Start, Close and the calls between them answer alike
// everywhere.
type Lifecycle struct{ s atomic.Int32 }

const (
	latent int32 = iota
	started
	closed
)

// Start moves latent to started. Otherwise it returns an error named
// what: ErrAlreadyStarted ("<what>: already started"), or ErrClosed
// ("<what>: start: closed").
func (l *Lifecycle) Start(what string) error {
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
func (l *Lifecycle) Abort() bool { return l.s.CompareAndSwap(started, latent) }

// Close moves to closed. first reports whether this call did (not an
// earlier one); wasStarted whether Start had succeeded before it.
func (l *Lifecycle) Close() (first, wasStarted bool) {
	prev := l.s.Swap(closed)
	return prev != closed, prev == started
}

// Running returns nil while started, else an error named what for op
// ("": none) wrapping ErrNotStarted or ErrClosed.
func (l *Lifecycle) Running(what, op string) error {
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
func (l *Lifecycle) Closed() bool { return l.s.Load() == closed }

// Started reports whether Start succeeded and Close was not called.
func (l *Lifecycle) Started() bool { return l.s.Load() == started }
