package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// parentData is a parent's data: empty, not null, as Curator's
// creatingParentContainersIfNeeded writes it (ZKPaths.mkdirs).
var parentData = []byte{}

// EnsureContainers makes sure dir and all its ancestors exist, creating the
// missing ones as container nodes (which the server deletes once they have
// had children and are empty again), or as persistent nodes when the
// client was made WithoutContainers.
func (c *Client) EnsureContainers(ctx context.Context, dir string) error {
	if err := c.Check(); err != nil {
		return err
	}
	if err := zkpath.ValidatePath(dir); err != nil {
		return err
	}
	if dir == "/" {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		err := c.Retry(ctx, func() error {
			var err error
			if c.cfg.NoContainers {
				_, err = c.create(ctx, reqCreateParent, dir, parentData, 0, 0)
			} else {
				_, err = createContainer(c, ctx, reqCreateParent, dir)
			}
			return err
		})
		switch {
		case err == nil || errors.Is(err, zk.ErrNodeExists):
			return nil
		case errors.Is(err, zk.ErrNoNode):
			parent, _ := zkpath.SplitPath(dir)
			if err := c.EnsureContainers(ctx, parent); err != nil {
				return err
			}
		default:
			return fmt.Errorf("zkrecipes: create parent %s: %w", dir, zkerr.Explain(err))
		}
	}
}

// UsesContainers reports whether the recipes create parents as containers
// (false WithoutContainers).
func (c *Client) UsesContainers() bool { return c != nil && !c.cfg.NoContainers }

// ephemeralMode is the create mode of a contest's node: ephemeral, and
// sequential unless its sequence is fixed.
func ephemeralMode(sequential bool) int32 {
	if sequential {
		return zk.FlagEphemeral | zk.FlagSequence
	}
	return zk.FlagEphemeral
}

// awaitConnection returns once the client is connected, waiting no longer
// than the create's retry policy allows: a create on a client that never
// connects fails with ErrNotConnected instead of waiting for ever in
// go-zookeeper's queue.
func (pc *protectedCreate) awaitConnection() error {
	c, ctx, retry := pc.c, pc.ctx, &pc.retry
	for {
		snap := c.Snapshot()
		if snap.State.IsConnected() {
			return nil
		}
		d, ok := retry.next()
		if !ok {
			return fmt.Errorf("%w (%v): no connection before the retry policy gave up", zkerr.ErrNotConnected, snap.State)
		}
		t := time.NewTimer(d)
		select {
		case <-snap.Changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-c.closeCh:
			t.Stop()
			return zkerr.ErrClientClosed
		}
		t.Stop()
	}
}

// checkCreate validates a protected create's arguments: a context, a
// server path for the parent, a name that makes one path segment.
func checkCreate(ctx context.Context, parent, name string) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", zkerr.ErrInvalidArgument)
	}
	if err := zkpath.ValidatePath(parent); err != nil {
		return err
	}
	return zkpath.ValidateName(zkpath.ProtectedPrefix + name)
}

// protectedPath returns the path of the protected node
// _c_<uuid>-<name> under parent, and its "_c_<uuid>-" prefix, in one
// allocation.
func protectedPath(parent, uuid, name string) (path, prefix string) {
	sep := "/"
	if parent == "/" {
		sep = ""
	}
	path = parent + sep + zkpath.ProtectedPrefix + uuid + "-" + name
	start := len(parent) + len(sep)
	return path, path[start : start+len(zkpath.ProtectedPrefix)+len(uuid)+1]
}

// ownerOf returns the session that owns the ephemeral node at path.
func ownerOf(ctx context.Context, c *Client, path string) (int64, error) {
	var st *zk.Stat
	err := c.Retry(ctx, func() error {
		ok, s, err := c.Exists(ctx, path)
		if err == nil && !ok {
			return zk.ErrNoNode
		}
		st = s
		return err
	})
	if err != nil {
		return 0, err
	}
	return st.EphemeralOwner, nil
}

// find looks for the node of a protected create whose reply was
// lost: it syncs parent first, so that a lagging follower cannot answer
// "not there" for a create that has committed (and have a second node made
// in the same session: a ghost that blocks the queue). If it finds more
// than one node with the prefix, it keeps the first in queue order and
// deletes the others. It returns "" when there is none (or no parent).
func (pc *protectedCreate) find() (string, error) {
	c, ctx, parent, prefix, name := pc.c, pc.ctx, pc.parent, pc.prefix, pc.name
	if err := c.Sync(ctx, parent); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return "", nil
		}
		return "", err
	}
	kids, _, err := c.Children(ctx, parent)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	mine := findPrefixed(kids, prefix)
	if len(mine) == 0 {
		return "", nil
	}
	keep := mine[0]
	for _, m := range mine[1:] {
		if contend.SortKey(m, name) < contend.SortKey(keep, name) {
			keep = m
		}
	}
	for _, m := range mine {
		if m != keep {
			_ = c.GuaranteedDelete(context.Background(), zkpath.JoinPath(parent, m), 0)
		}
	}
	return keep, nil
}

// findPrefixed returns the children whose names start with prefix.
func findPrefixed(kids []string, prefix string) []string {
	var out []string
	for _, k := range kids {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// sweepProtected looks, in the background, for a node whose creation
// reply was lost and deletes it (syncing first, as protectedCreate.find does); it
// stops when the session sid ends.
func (d *deleter) sweepProtected(parent, prefix string, sid int64) {
	c := d.c
	c.background(func() {
		d.retryForever(sid, func() error {
			if err := c.Sync(context.Background(), parent); err != nil {
				if errors.Is(err, zk.ErrNoNode) {
					return nil
				}
				return err
			}
			kids, _, err := c.Children(context.Background(), parent)
			if err != nil {
				if errors.Is(err, zk.ErrNoNode) {
					return nil
				}
				return err
			}
			for _, found := range findPrefixed(kids, prefix) {
				if err := d.once(zkpath.JoinPath(parent, found)); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// CreateWithParents creates path, making its missing parents first
// (EnsureContainers: containers, or persistent nodes WithoutContainers),
// again when a parent goes between the two steps. A missing parent is a
// step of the create, counted as no_parent in metrics.
func (c *Client) CreateWithParents(ctx context.Context, path string, data []byte, flags int32) (string, error) {
	parent, _ := zkpath.SplitPath(path)
	for tries := 0; ; tries++ {
		p, err := c.create(ctx, reqCreateMakingParents, path, data, flags, 0)
		if err == nil || !errors.Is(err, zk.ErrNoNode) || tries >= 5 {
			return p, err
		}
		if err := c.EnsureContainers(ctx, parent); err != nil {
			return "", err
		}
	}
}
