// Package barrier is Curator's DistributedBarrier and
// DistributedDoubleBarrier on ZooKeeper, with Curator's znodes, so Go and
// Java processes (and, for the Barrier, Kazoo's) can meet at the same
// barrier.
//
// A Barrier is up while its node exists: Set creates it (a persistent
// node, with Curator's default data, the local IP address), Remove
// deletes it, Wait blocks until it is gone. It holds no session state, so
// any process can raise or lower it.
//
// A DoubleBarrier lets a group start together and finish together.
// Enter adds an ephemeral member node <path>/<uuid> and waits until at
// least memberQty members are present, then creates the persistent flag
// <path>/ready, which lets every member in (memberQty is a threshold,
// not a limit, as in Curator). Leave is the standard ZooKeeper recipe:
// members delete their nodes, the lowest (by name) last, each waiting on
// the lowest or the highest; then ready is deleted.
//
// # Better than Curator
//
//   - Enter counts the members again after every wake-up, children and
//     session events alike: a timed enter never returns with too few
//     members (Curator's GH-1290).
//   - A member whose Enter fails, or whose ctx ends, deletes its own node
//     before returning, so it does not count for later arrivals (Curator's
//     CURATOR-318 and CURATOR-80, open there).
//   - Leave honours its ctx (CURATOR-536: Curator's looped past its
//     timeout) and, when it gives up, deletes the member's node so that
//     the others can finish.
//
// # What it does not guarantee
//
// A member whose session is lost while it waits in Enter is out: its node
// is gone, and Enter returns an error wrapping recipes.ErrSessionLost. A
// member that enters and then crashes is counted until its session
// expires. A group larger than memberQty enters as soon as memberQty of
// it are present; the others enter at once once ready exists. memberQty
// is not stored in ZooKeeper: every member must be given the same.
// Kazoo's DoubleBarrier has another layout and does not meet this one
// (its Barrier does meet Barrier). docs/counters-and-barriers.md has the
// guarantees with the evidence.
//
// # ACLs
//
// A barrier's node, a double barrier's member and ready nodes, and their
// missing parents get the Client's ACLs (recipes.WithACLProvider); Set,
// Wait, Remove and Enter refused by the server fail at once with an error
// wrapping recipes.ErrNoAuth. See docs/security.md.
package barrier

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// ReadyNode is the name of a DoubleBarrier's flag node under its path, as
// Curator names it.
const ReadyNode = "ready"

// Barrier is Curator's DistributedBarrier (Kazoo's Barrier uses the same
// node): up while the node at its path exists.
type Barrier struct {
	c    *recipes.Client
	e    *engine.Client
	path string // as given
	full string // on the server
}

// New returns a barrier at path. It does not touch ZooKeeper.
func New(c *recipes.Client, path string) (*Barrier, error) {
	full, err := recipeargs.Path(c, path, "a barrier path")
	if err != nil {
		return nil, err
	}
	return &Barrier{c: c, e: (*engine.Client)(c), path: path, full: full}, nil
}

// Path returns the barrier's path as given to New.
func (b *Barrier) Path() string {
	if b == nil {
		return ""
	}
	return b.path
}

func (b *Barrier) check(ctx context.Context) error {
	if b == nil || b.c == nil {
		return zkerr.NotMade("Barrier", "New")
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	return zkerr.Named("barrier "+b.path, b.e.Check())
}

// Set raises the barrier: it creates the node (its missing parents as
// containers), unless it exists already (Curator's setBarrier).
func (b *Barrier) Set(ctx context.Context) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	err := b.e.Retry(ctx, func() error {
		_, err := b.e.CreateWithParents(ctx, b.full, []byte(recipeargs.LocalIP()), 0)
		return err
	})
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return zkerr.Namedf("barrier "+b.path, "set: %w", err)
	}
	return nil
}

// Remove lowers the barrier: it deletes the node, if it exists (Curator's
// removeBarrier). Every Wait returns.
func (b *Barrier) Remove(ctx context.Context) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	err := b.e.Retry(ctx, func() error { return b.e.Delete(ctx, b.full, -1) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return zkerr.Namedf("barrier "+b.path, "remove: %w", err)
	}
	return nil
}

// IsSet reports whether the barrier is up now.
func (b *Barrier) IsSet(ctx context.Context) (bool, error) {
	if err := b.check(ctx); err != nil {
		return false, err
	}
	var ok bool
	err := b.e.Retry(ctx, func() error {
		var err error
		ok, _, err = b.e.Exists(ctx, b.full)
		return err
	})
	if err != nil {
		return false, zkerr.Namedf("barrier "+b.path, "%w", err)
	}
	return ok, nil
}

// Wait blocks until the barrier is down (its node does not exist), ctx
// ends (the error wraps ctx.Err()) or the client closes (Curator's
// waitOnBarrier). A barrier that is not up returns at once.
func (b *Barrier) Wait(ctx context.Context) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	_, err := b.e.Await(ctx, engine.Wait{What: b.full}, func(engine.Snapshot, engine.Wake) (engine.Look, error) {
		// getData, not exists: a barrier already down leaves no watch.
		_, _, ch, err := b.e.GetW(ctx, b.full)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return engine.Look{Done: true}, nil
		case err != nil:
			return engine.Look{}, err
		}
		return engine.Look{Watch: ch}, nil
	})
	if err != nil {
		return zkerr.Namedf("barrier "+b.path, "wait: %w", err)
	}
	return nil
}
