// Package cleanup keeps lock parents from piling up in ZooKeeper.
//
// Per-key lock paths (/locks/order/<id>, one per order, user or job) leave
// a parent behind for every key ever locked unless something removes it.
// The recipes of this module create their parents as container nodes,
// which the server deletes once they are empty. Older clients do not:
// go-zookeeper's zk.Lock, Kazoo's ensure_path and Curator 2.x make
// persistent parents, and Curator 5 dropped its Reaper and ChildReaper in
// favour of containers, so nobody removes theirs; nor does anything remove
// the parents of a Client made WithoutContainers (for servers older than
// 3.5.3). A Reaper does, and Scan tells an operator whether one is needed.
//
// # What it does not guarantee
//
// A Reaper deletes a parent only when it saw it empty and unchanged at
// several checks in a row (WithThreshold, WithChecks), and ZooKeeper
// refuses to delete a node with children, so it never deletes a lock that
// is held or waited on. A contender of another
// library that creates its parent and its node in two steps may find the
// parent gone between them and must create it again (Curator, Kazoo and
// this module do). Scan reads a snapshot: the tree may have changed when it
// returns.
package cleanup

import (
	"context"
	"errors"
	"math"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// containerOwner is the ephemeralOwner the server reports for a container
// node (ZooKeeper's EphemeralType.CONTAINER): Long.MIN_VALUE.
const containerOwner = math.MinInt64

// Kind of a node, by its ephemeralOwner.
func isContainer(st *zk.Stat) bool { return st.EphemeralOwner == containerOwner }

// isPersistent reports whether a node is plain persistent: not ephemeral,
// not a container, not a TTL node (whose owner field carries 0xFF in its
// top byte).
func isPersistent(st *zk.Stat) bool { return st.EphemeralOwner == 0 }

// ScanResult is what Scan found under a path.
type ScanResult struct {
	Nodes int // nodes under the path (the path itself not counted)
	// EmptyParents counts the empty persistent nodes under the path: the
	// lock parents nobody will remove without a Reaper.
	EmptyParents int
	// EmptyContainers counts the empty containers, which the server removes
	// by itself at its next container check.
	EmptyContainers int
	// Examples holds up to ten of the empty persistent nodes' paths.
	Examples []string
}

// Scan walks the tree under path (one children request per node) and
// counts the empty persistent nodes, the lock parents that only a Reaper
// would remove, beside the total.
func Scan(ctx context.Context, c *recipes.Client, path string) (ScanResult, error) {
	var res ScanResult
	full, err := recipeargs.ReadPath(ctx, c, path)
	if err != nil {
		return res, err
	}
	queue := []string{full}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		var (
			kids []string
			st   *zk.Stat
		)
		err := c.Retry(ctx, func() error {
			var err error
			kids, st, err = (*engine.Client)(c).Children(ctx, p)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone while we walked
		}
		if err != nil {
			return res, zkerr.Namedf("cleanup scan "+p, "%w", err)
		}
		if p != full {
			res.Nodes++
			if len(kids) == 0 {
				switch {
				case isPersistent(st):
					res.EmptyParents++
					if len(res.Examples) < 10 {
						res.Examples = append(res.Examples, p)
					}
				case isContainer(st):
					res.EmptyContainers++
				}
			}
		}
		for _, k := range kids {
			queue = append(queue, zkpath.JoinPath(p, k))
		}
	}
	return res, nil
}
