package recipes

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
)

// Limit gives the current maximum of a count-based wait, and a channel
// that closes when the maximum may have changed (nil when it never
// changes).
type Limit func() (max int, changed <-chan struct{})

// FixedLimit is a Limit that never changes.
func FixedLimit(n int) Limit { return func() (int, <-chan struct{}) { return n, nil } }

// AwaitCount is the count-based wait of Curator's InterProcessSemaphoreV2.
// The caller holds the semaphore's internal lock and has made its lease
// node ours (a name) under parent in session sid; AwaitCount returns nil
// once parent has at most limit() children, ours among them. It lists the
// children with a watch and, while there are too many, waits for that
// watch (any lease going), for the limit to change, or for a connection
// state change; only the internal lock's holder waits, so the wait is fair
// and herd-free. It returns an error wrapping ErrSessionLost when the
// session ends, ErrLockLost when our node is gone, ctx.Err() when ctx
// ends and ErrClosed when the client closes.
func (c *Client) AwaitCount(ctx context.Context, parent, ours string, sid int64, limit Limit) error {
	if limit == nil {
		return fmt.Errorf("%w: nil limit", ErrInvalidArgument)
	}
	for {
		if err := c.check(); err != nil {
			return err
		}
		snap := c.Snapshot()
		if snap.SessionID == sid && snap.State == StateLost || snap.State.IsConnected() && snap.SessionID != sid {
			return fmt.Errorf("%w: waiting for a lease under %s", ErrSessionLost, parent)
		}
		if !snap.State.IsConnected() {
			if err := waitOn(ctx, c, snap.Changed, parent); err != nil {
				return err
			}
			continue
		}
		max, changed := limit()
		kids, _, watch, err := c.ChildrenW(parent)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("%w: %s is gone", ErrLockLost, parent)
		case IsRetryable(err):
			if err := c.sleep(ctx, retryPause); err != nil {
				return fmt.Errorf("zkrecipes: waiting for a lease under %s: %w", parent, err)
			}
			continue
		case err != nil:
			return fmt.Errorf("zkrecipes: waiting for a lease under %s: %w", parent, err)
		}
		if !slices.Contains(kids, ours) {
			return fmt.Errorf("%w: lease node %s is gone", ErrLockLost, JoinPath(parent, ours))
		}
		if len(kids) <= max {
			return nil
		}
		select {
		case <-watch:
		case <-changed:
		case <-snap.Changed:
		case <-ctx.Done():
			return fmt.Errorf("zkrecipes: waiting for a lease under %s: %w", parent, ctx.Err())
		case <-c.closeCh:
			return ErrClosed
		}
	}
}

// waitOn waits for ch, ctx or the client's close.
func waitOn(ctx context.Context, c *Client, ch <-chan struct{}, what string) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("zkrecipes: waiting for %s: %w", what, ctx.Err())
	case <-c.closeCh:
		return ErrClosed
	}
}
