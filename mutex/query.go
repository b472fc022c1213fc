package mutex

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Participants returns the contenders for the lock in queue order: the
// first holds it (Holds). Nodes of other clients with a recognised lock
// name are included, as Curator includes them. ID is each node's data
// (by default its holder's IP address), read with one request per node.
func (m *Mutex) Participants(ctx context.Context) ([]recipes.Participant, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	ms, err := m.e.ReadQueue(ctx, m.full, m.driver, nil)
	if err != nil {
		return nil, m.errorf("participants: %w", err)
	}
	return recipeargs.Participants(ms, nil), nil
}

// Holder returns the current holder. It returns an error wrapping
// ErrNotHeld when nobody holds the lock.
func (m *Mutex) Holder(ctx context.Context) (recipes.Participant, error) {
	ps, err := m.Participants(ctx)
	if err != nil {
		return recipes.Participant{}, err
	}
	if len(ps) == 0 {
		return recipes.Participant{}, m.errorf("%w", recipes.ErrNotHeld)
	}
	return ps[0], nil
}

// Revoke asks the holder of the lock node at node (a recipe path, as
// Participants and Lease.Node return it) to release it, by writing
// RevokeMessage into the node. Holders that registered a revocation
// listener are told.
func Revoke(ctx context.Context, c *recipes.Client, node string) error {
	if err := recipeargs.Client(c); err != nil {
		return err
	}
	full, err := c.FullPath(node)
	if err != nil {
		return err
	}
	if node == "/" {
		return fmt.Errorf("%w: the root is not a lock node", recipes.ErrInvalidPath)
	}
	err = c.Retry(ctx, func() error {
		_, err := engine.Of(c).Set(ctx, full, []byte(RevokeMessage), -1)
		return err
	})
	if err != nil {
		return fmt.Errorf("zkrecipes: mutex revoke %s: %w", node, err)
	}
	return nil
}

// watchRevocation waits for RevokeMessage in our node's data. It ends when
// the node is deleted (release) or the watch ends with the session.
func (l *Lease) watchRevocation() {
	c := l.m.e
	for {
		data, _, ch, err := c.GetW(context.Background(), l.hold.Path())
		if err != nil {
			if !recipes.IsRetryable(err) {
				return
			}
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-l.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		if string(data) == RevokeMessage {
			l.m.opts.onRevoke(l)
			return
		}
		ev := <-ch
		if ev.Type != zk.EventNodeDataChanged {
			return
		}
	}
}
