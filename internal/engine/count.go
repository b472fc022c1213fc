package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// Limit gives the current maximum of a count-based wait, and a channel
// that closes when the maximum may have changed (nil when it never
// changes).
type Limit func() (max int, changed <-chan struct{})

// FixedLimit is a Limit that never changes.
func FixedLimit(n int) Limit { return func() (int, <-chan struct{}) { return n, nil } }

// AwaitCount is the count-based wait of Curator's InterProcessSemaphoreV2,
// for a contest whose node is a lease: the caller holds the semaphore's
// internal lock and entered the lease's contest under the leases parent.
// AwaitCount returns the signals of the lease once the parent has at most
// limit() children, our node among them. It lists the children with a
// watch and, while there are too many, waits for that watch (any lease
// going), for the limit to change, or for a connection state change; only
// the internal lock's holder waits, so the wait is fair and herd-free.
// Ghosts of our own node (see Contest) are deleted and not counted. With
// wait false it checks once and returns ErrNotAcquired when there are too
// many. It returns an error wrapping ErrSessionLost when the session ends,
// ErrLockLost when our node is gone, ctx.Err() when ctx ends, ErrClosed
// when the client closes. It does not leave the contest.
func (ct *Contest) AwaitCount(ctx context.Context, limit Limit, wait bool) (Signals, error) {
	if ct == nil || ct.c == nil {
		return Signals{}, fmt.Errorf("%w: Contest not made by Enter", zkerr.ErrInvalidArgument)
	}
	if ctx == nil {
		return Signals{}, fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	if limit == nil {
		return Signals{}, fmt.Errorf("%w: nil limit", zkerr.ErrInvalidArgument)
	}
	var sig Signals
	_, err := ct.c.Await(ctx, Wait{What: ct.path, Session: ct.sid, Once: !wait}, func(snap Snapshot, _ Wake) (Look, error) {
		max, changed := limit()
		kids, _, watch, err := ct.c.ChildrenW(ctx, ct.parent)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return Look{}, ct.nodeGone()
		case err != nil:
			return Look{}, fmt.Errorf("zkrecipes: waiting for %s: %w", ct.path, err)
		}
		kids = ct.dropGhosts(kids)
		if !slices.Contains(kids, ct.me.Name) {
			return Look{}, ct.nodeGone()
		}
		ct.met.queue(len(kids) - 1)
		if len(kids) <= max {
			hold := ct.c.HoldSignal(snap)
			if notify.IsClosed(hold) || notify.IsClosed(snap.Changed) {
				return Look{Again: true}, nil // the connection blinked while we looked
			}
			sig = Signals{Done: hold, Lost: snap.Lost}
			return Look{Done: true}, nil
		}
		if !wait {
			return Look{}, fmt.Errorf("%w: %d of %d leases taken", zkerr.ErrNotAcquired, len(kids)-1, max)
		}
		return Look{Watch: watch, Also: changed}, nil
	})
	ct.met.acquired(err == nil, err)
	if err != nil {
		return Signals{}, err
	}
	return sig, nil
}
