package barrier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// DoubleBarrier is Curator's DistributedDoubleBarrier: members enter
// together once memberQty of them are present, and leave together. One
// DoubleBarrier is one member; it may enter and leave again, with a new
// node each time.
type DoubleBarrier struct {
	c     *recipes.Client
	e     *engine.Client
	path  string // as given
	full  string // on the server
	ready string // <full>/ready
	qty   int

	mu   sync.Mutex
	node string // our member node while entered (server path), "" otherwise
}

// NewDouble returns a double barrier at path for groups of memberQty
// (at least 1). It does not touch ZooKeeper.
func NewDouble(c *recipes.Client, path string, memberQty int) (*DoubleBarrier, error) {
	full, err := recipeargs.Path(c, path, "a barrier path")
	if err != nil {
		return nil, err
	}
	if memberQty < 1 {
		return nil, zkerr.Namedf("double barrier "+path, "%w: memberQty %d", recipes.ErrInvalidArgument, memberQty)
	}
	return &DoubleBarrier{c: c, e: (*engine.Client)(c), path: path, full: full, ready: zkpath.JoinPath(full, ReadyNode), qty: memberQty}, nil
}

// Path returns the barrier's path as given to NewDouble.
func (d *DoubleBarrier) Path() string {
	if d == nil {
		return ""
	}
	return d.path
}

// Node returns the path of this member's node while it is entered
// (inside the client's namespace), "" otherwise.
func (d *DoubleBarrier) Node() string {
	if d == nil {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.node == "" {
		return ""
	}
	return d.e.Namespace().Strip(d.node)
}

func (d *DoubleBarrier) what() string { return "double barrier " + d.path }

func (d *DoubleBarrier) check(ctx context.Context) error {
	if d == nil || d.c == nil {
		return zkerr.NotMade("DoubleBarrier", "NewDouble")
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	return zkerr.Named(d.what(), d.e.Check())
}

// members returns the member names among kids (ready left out), sorted.
func members(kids []string) []string {
	out := make([]string, 0, len(kids))
	for _, k := range kids {
		if k != ReadyNode {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Enter joins the group and blocks until at least memberQty members are
// present (or were: the ready node exists), ctx ends or the session is
// lost. It counts the members again after every wake-up. On any failure,
// ctx's end included, it deletes its node before it returns, so that it
// does not count for the others. Entering twice without Leave returns
// an error wrapping recipes.ErrInvalidArgument.
func (d *DoubleBarrier) Enter(ctx context.Context) error {
	if err := d.check(ctx); err != nil {
		return err
	}
	d.mu.Lock()
	if d.node != "" {
		d.mu.Unlock()
		return zkerr.Namedf(d.what(), "%w: already entered (Leave first)", recipes.ErrInvalidArgument)
	}
	node := zkpath.JoinPath(d.full, zkpath.NewUUID())
	d.node = node
	d.mu.Unlock()
	if err := d.enter(ctx, node); err != nil {
		d.drop(ctx, node)
		return zkerr.Named(d.what(), err)
	}
	return nil
}

func (d *DoubleBarrier) enter(ctx context.Context, node string) error {
	var sid int64
	err := d.e.Retry(ctx, func() error {
		sid = d.e.SessionID()
		_, err := d.e.CreateWithParents(ctx, node, []byte(recipeargs.LocalIP()), zk.FlagEphemeral)
		if errors.Is(err, zk.ErrNodeExists) { // an attempt of ours whose reply was lost
			ok, st, xerr := d.e.Exists(ctx, node)
			if xerr != nil {
				return xerr
			}
			if ok && st.EphemeralOwner == d.e.SessionID() {
				sid = st.EphemeralOwner
				return nil
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("enter: %w", err)
	}
	_, err = d.e.Await(ctx, engine.Wait{What: d.full, Session: sid}, func(engine.Snapshot, engine.Wake) (engine.Look, error) {
		kids, _, ch, err := d.e.ChildrenW(ctx, d.full)
		if err != nil {
			return engine.Look{}, err
		}
		mine := members(kids)
		if _, found := slices.BinarySearch(mine, pathBase(node)); !found {
			return engine.Look{}, fmt.Errorf("%w: our member node %s is gone", recipes.ErrSessionLost, d.e.Namespace().Strip(node))
		}
		if slices.Contains(kids, ReadyNode) {
			return engine.Look{Done: true}, nil
		}
		if len(mine) < d.qty {
			return engine.Look{Watch: ch}, nil // a join, a leave, or ready: count again
		}
		_, err = d.e.Create(ctx, d.ready, []byte(recipeargs.LocalIP()), 0)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return engine.Look{}, err
		}
		return engine.Look{Done: true}, nil
	})
	if err != nil {
		return fmt.Errorf("enter: %w", err)
	}
	return nil
}

// drop deletes our member node after a failed Enter or Leave, in the
// background when ctx has ended (the engine's guaranteed delete).
func (d *DoubleBarrier) drop(ctx context.Context, node string) {
	d.forget(node)
	_ = d.e.GuaranteedDelete(context.WithoutCancel(ctx), node, d.e.SessionID())
}

// forget records that this member is out.
func (d *DoubleBarrier) forget(node string) {
	d.mu.Lock()
	if d.node == node {
		d.node = ""
	}
	d.mu.Unlock()
}

// Leave blocks until every member has left (the standard recipe: each
// deletes its node, the lowest by name last), then deletes the ready
// node. It returns when ctx ends, deleting this member's node first so
// that the others can finish; the error wraps ctx.Err(). A member whose
// node went with its session (so that the others may have left before it
// was done) gets an error wrapping recipes.ErrSessionLost. Leave without
// Enter returns an error wrapping recipes.ErrNotHeld.
func (d *DoubleBarrier) Leave(ctx context.Context) error {
	if err := d.check(ctx); err != nil {
		return err
	}
	d.mu.Lock()
	node := d.node
	d.mu.Unlock()
	if node == "" {
		return zkerr.Namedf(d.what(), "%w: not entered", recipes.ErrNotHeld)
	}
	present := true // our node still exists
	err := d.leave(ctx, node, &present)
	if present {
		d.drop(ctx, node)
	} else {
		d.forget(node)
	}
	if err != nil {
		return zkerr.Named(d.what(), err)
	}
	err = d.e.Retry(ctx, func() error { return d.e.Delete(ctx, d.ready, -1) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return zkerr.Namedf(d.what(), "leave: delete %s: %w", ReadyNode, err)
	}
	return nil
}

func (d *DoubleBarrier) leave(ctx context.Context, node string, present *bool) error {
	ours := pathBase(node)
	_, err := d.e.Await(ctx, engine.Wait{What: d.full}, func(engine.Snapshot, engine.Wake) (engine.Look, error) {
		kids, _, err := d.e.Children(ctx, d.full)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return engine.Look{}, err
		}
		mine := members(kids)
		i, found := slices.BinarySearch(mine, ours)
		switch {
		case !found && *present:
			// Gone without our delete: with our session, so the others
			// may have left before we were done. Checked before "nobody
			// left", which would hide it once they have.
			return engine.Look{}, fmt.Errorf("%w: our member node %s is gone", recipes.ErrSessionLost, d.e.Namespace().Strip(node))
		case len(mine) == 0:
			return engine.Look{Done: true}, nil
		case len(mine) == 1 && found:
			return engine.Look{Done: true}, d.deleteOurs(ctx, node, present) // the last one
		}
		// The lowest waits for the highest; the others delete theirs and
		// wait for the lowest.
		next := mine[0]
		if found && i == 0 {
			next = mine[len(mine)-1]
		} else if err := d.deleteOurs(ctx, node, present); err != nil {
			return engine.Look{}, err
		}
		// getData, not exists: a node gone meanwhile leaves no watch.
		_, _, ch, err := d.e.GetW(ctx, zkpath.JoinPath(d.full, next))
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return engine.Look{Again: true}, nil
		case err != nil:
			return engine.Look{}, err
		}
		return engine.Look{Watch: ch}, nil
	})
	if err != nil {
		return fmt.Errorf("leave: %w", err)
	}
	return nil
}

// deleteOurs deletes our member node once.
func (d *DoubleBarrier) deleteOurs(ctx context.Context, node string, present *bool) error {
	if !*present {
		return nil
	}
	if err := d.e.Delete(ctx, node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	*present = false
	return nil
}

// Members returns the member nodes present now (inside the client's
// namespace), sorted by name, and whether the ready node exists.
func (d *DoubleBarrier) Members(ctx context.Context) ([]string, bool, error) {
	if err := d.check(ctx); err != nil {
		return nil, false, err
	}
	var kids []string
	err := d.e.Retry(ctx, func() error {
		var err error
		kids, _, err = d.e.Children(ctx, d.full)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, zkerr.Namedf(d.what(), "members: %w", err)
	}
	out := members(kids)
	for i, m := range out {
		out[i] = d.e.Namespace().Strip(zkpath.JoinPath(d.full, m))
	}
	return out, slices.Contains(kids, ReadyNode), nil
}

// pathBase returns the last segment of a server path.
func pathBase(p string) string {
	_, name := zkpath.SplitPath(p)
	return name
}
