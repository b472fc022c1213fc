package mutex

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Participant is one contender in the queue.
type Participant struct {
	Name string // node name
	Node string // server path
}

// Participants returns the contenders for the lock in queue order: the
// first holds it. Nodes of other clients with a recognised lock name are
// included, as Curator includes them.
func (m *Mutex) Participants(ctx context.Context) ([]Participant, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	var kids []string
	err := m.c.Retry(ctx, func() error {
		var err error
		kids, _, err = engine.Of(m.c).Children(ctx, m.full)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, m.errorf("participants: %w", err)
	}
	sorted := engine.SortContenders(kids, m.driver)
	out := make([]Participant, len(sorted))
	for i, s := range sorted {
		out[i] = Participant{Name: s.Name, Node: engine.JoinPath(m.full, s.Name)}
	}
	return out, nil
}

// Holder returns the node of the current holder and its data (by default
// the holder's IP address). It returns ErrNotHeld when nobody holds the
// lock.
func (m *Mutex) Holder(ctx context.Context) (Participant, []byte, error) {
	for {
		ps, err := m.Participants(ctx)
		if err != nil {
			return Participant{}, nil, err
		}
		if len(ps) == 0 {
			return Participant{}, nil, m.errorf("%w", ErrNotHeld)
		}
		var data []byte
		err = m.c.Retry(ctx, func() error {
			var err error
			data, _, err = engine.Of(m.c).Get(ctx, ps[0].Node)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue // released meanwhile: look again
		}
		if err != nil {
			return Participant{}, nil, m.errorf("holder: %w", err)
		}
		return ps[0], data, nil
	}
}

// Revoke asks the holder of the lock node at nodePath (a server path, see
// Participants) to release it, by writing RevokeMessage into the node.
// Holders that registered a revocation listener are told.
func Revoke(ctx context.Context, c *recipes.Client, nodePath string) error {
	if err := recipeargs.Client(c); err != nil {
		return err
	}
	if err := recipes.ValidatePath(nodePath); err != nil {
		return err
	}
	if nodePath == "/" {
		return fmt.Errorf("%w: the root is not a lock node", recipes.ErrInvalidPath)
	}
	err := c.Retry(ctx, func() error {
		_, err := engine.Of(c).Set(ctx, nodePath, []byte(RevokeMessage), -1)
		return err
	})
	if err != nil {
		return fmt.Errorf("mutex: revoke %s: %w", nodePath, err)
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
