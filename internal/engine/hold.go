package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkop"
)

// Hold is what every acquisition shares: the node that proves it, the
// signals that say when it may be gone, and fencing. Recipes embed it in
// their lease types.
type Hold struct {
	c    *Client
	path string
	sig  Signals
	what string // names the recipe and its path in errors ("mutex /a")

	mu         sync.Mutex
	isReleased bool
	released   chan struct{} // made by the first Done call; closed on release
	done       chan struct{} // made by the first Done call
	doneClosed bool

	tokenMu sync.Mutex
	token   int64
}

// NewHold returns the hold proven by the node at path (a server path).
func NewHold(c *Client, path string, sig Signals) *Hold {
	return &Hold{c: c, path: path, sig: sig}
}

// Named sets what names the hold's recipe and path in its errors
// ("mutex /locks/a"), and returns h.
func (h *Hold) Named(what string) *Hold {
	h.what = what
	return h
}

// errorf is Namedf with the hold's name, or a plain "zkrecipes: " error
// for a hold without one.
func (h *Hold) errorf(format string, args ...any) error {
	if h.what == "" {
		return fmt.Errorf("zkrecipes: "+format, args...)
	}
	return zkerr.Namedf(h.what, format, args...)
}

// named names err with the hold's recipe and path, if it has a name.
func (h *Hold) named(err error) error {
	if h.what == "" {
		return err
	}
	return zkerr.Named(h.what, err)
}

// Node returns the path of the node that proves the hold as users see it,
// inside the client's namespace.
func (h *Hold) Node() string {
	if h == nil {
		return ""
	}
	return h.c.Namespace().Strip(h.path)
}

// Path returns the server path of the node that proves the hold.
func (h *Hold) Path() string {
	if h == nil {
		return ""
	}
	return h.path
}

// Done returns a channel that closes when the hold may be gone: on LOST,
// on SUSPENDED under the Standard error policy, when the client closes,
// and when the hold is released.
func (h *Hold) Done() <-chan struct{} {
	if h == nil {
		return closedCh // no hold: over before it began
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done == nil {
		h.done = make(chan struct{})
		if h.isReleased || notify.IsClosed(h.sig.Done) {
			h.closeDone() // already over: closed before anyone can look
		} else {
			released := make(chan struct{})
			h.released = released
			go func() {
				select {
				case <-h.sig.Done:
				case <-released:
				}
				h.mu.Lock()
				h.closeDone()
				h.mu.Unlock()
			}()
		}
	}
	return h.done
}

// closeDone closes done once; h.mu is held.
func (h *Hold) closeDone() {
	if !h.doneClosed {
		h.doneClosed = true
		close(h.done)
	}
}

// IsLost reports whether the session that owned the hold was lost (or the
// client closed) since the hold was acquired.
func (h *Hold) IsLost() bool { return h == nil || notify.IsClosed(h.sig.Lost) }

// closedCh is a closed channel.
var closedCh = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// MarkReleased closes Done at once; recipes call it when the hold is
// released.
func (h *Hold) MarkReleased() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.isReleased {
		return
	}
	h.isReleased = true
	if h.released != nil {
		close(h.released)
	}
	if h.done != nil {
		h.closeDone()
	}
}

// Token returns the fencing token of the hold: the creation zxid (czxid)
// of its node. Tokens strictly increase across successive holders of the
// same path, even when the parent was deleted and recreated in between,
// because every create gets a larger zxid. The first call reads the node
// (one exists request); later calls return the cached value.
func (h *Hold) Token(ctx context.Context) (int64, error) {
	if h == nil || h.c == nil {
		return 0, fmt.Errorf("%w: Hold not made by NewHold with a client", zkerr.ErrInvalidArgument)
	}
	if ctx == nil {
		return 0, fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	h.tokenMu.Lock()
	defer h.tokenMu.Unlock()
	if h.token != 0 {
		return h.token, nil
	}
	h.mu.Lock()
	released := h.isReleased
	h.mu.Unlock()
	if released {
		return 0, h.errorf("token: %w: %s was released before its token was read", zkerr.ErrNotHeld, h.Node())
	}
	var st *zk.Stat
	err := h.c.Retry(ctx, func() error {
		ok, s, err := h.c.Exists(ctx, h.path)
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		st = s
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return 0, h.errorf("token: %w: %s is gone", zkerr.ErrLockLost, h.Node())
	}
	if err != nil {
		return 0, h.errorf("token of %s: %w", h.Node(), err)
	}
	h.token = st.Czxid
	return h.token, nil
}

// Fenced runs ops (on recipe paths: the client's namespace is applied) as
// one transaction together with a check that the hold's node still
// exists, so the server refuses the writes of a holder that lost its
// hold. A refusal for that reason, or because the hold was released,
// returns an error wrapping ErrFenced; another refusal names the op and
// its path. The responses returned are for ops only. A zero zkop.Op is refused
// (ErrInvalidArgument). A connection error is returned as is
// (IsRetryable): the transaction may or may not have been applied.
func (h *Hold) Fenced(ctx context.Context, ops ...zkop.Op) ([]zk.MultiResponse, error) {
	if h == nil || h.c == nil {
		return nil, fmt.Errorf("%w: Hold not made by NewHold with a client", zkerr.ErrInvalidArgument)
	}
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	full, err := zkop.OnServer("fenced", ops, h.c.Namespace())
	if err != nil {
		return nil, err
	}
	all := make([]zkop.Op, 0, len(full)+1)
	all = append(all, zkop.Check(h.path, -1))
	all = append(all, full...)
	if err := ctx.Err(); err != nil {
		return nil, h.errorf("fenced multi on %s: %w", h.Node(), err)
	}
	h.mu.Lock()
	released := h.isReleased
	h.mu.Unlock()
	if released { // its node may live on (a local hand-off): refuse here
		return nil, h.errorf("%w: %s was released", zkerr.ErrFenced, h.Node())
	}
	// Not retried: after a connection loss the transaction may have been
	// applied, and the caller's writes need not be idempotent.
	res, err := h.c.Multi(ctx, all...)
	if len(res) > 0 {
		if errors.Is(res[0].Error, zk.ErrNoNode) {
			return res[1:], h.errorf("%w: %s", zkerr.ErrFenced, h.Node())
		}
		res = res[1:]
	}
	for i := range res {
		res[i].String = h.c.Namespace().Strip(res[i].String)
	}
	if err != nil {
		if len(res) > 0 {
			return res, h.named(zkop.Error("fenced multi", ops, res, err))
		}
		return res, h.errorf("fenced multi on %s: %w", h.Node(), err)
	}
	return res, nil
}
