package mutex

import (
	"context"
	"fmt"

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
		_, err := (*engine.Client)(c).Set(ctx, full, []byte(RevokeMessage), -1)
		return err
	})
	if err != nil {
		return fmt.Errorf("zkrecipes: mutex revoke %s: %w", node, err)
	}
	return nil
}

// armRevocation follows the data of node, the lock node of a hold that
// has just begun, when the Mutex is revocable: a RevokeMessage written
// into it reaches the lease that holds the node at that moment (holder
// says which: under WithLocalHandoff the node passes between leases), and
// no other. It follows on the client's shared Follower (no goroutine per
// lease) until disarmRevocation, called when the node is left. A node
// that is gone keeps no watch.
func (m *Mutex) armRevocation(node string, holder func() *Lease) {
	if m.opts.onRevoke == nil {
		return
	}
	f, err := m.e.SharedFollower()
	if err != nil {
		return // the client closed: the hold is over
	}
	var last int64 // the Mzxid of the revocation last told
	f.Add(revocationKey(node), func(ctx context.Context, w *engine.Watches) error {
		v, err := m.e.ReadData(ctx, node, w, false)
		if err != nil || !v.Exists || string(v.Data) != RevokeMessage || v.Stat.Mzxid == last {
			return err
		}
		last = v.Stat.Mzxid
		m.mu.Lock()
		defer m.mu.Unlock()
		if l := holder(); l != nil && l.count > 0 {
			// Under m.mu: a release that comes first disarms it, one
			// that comes after finds the listener started while held.
			go m.opts.onRevoke(l)
		}
		return nil
	})
}

// disarmRevocation stops following node: it is left.
func (m *Mutex) disarmRevocation(node string) {
	if m.opts.onRevoke == nil {
		return
	}
	if f, err := m.e.SharedFollower(); err == nil {
		f.Remove(revocationKey(node))
	}
}

func revocationKey(node string) string { return "mutex revocation " + node }
