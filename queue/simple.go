package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// SimpleQueue is Curator's SimpleDistributedQueue, which is ZooKeeper's
// own contrib queue recipe: each item is a persistent sequential node
// <path>/qn-<seq> holding the item's bytes as they are, and items are
// taken in sequence order. Go, Curator and ZooKeeper's contrib queue
// (Java) processes can offer to and take from one path. The directory is
// a container (made by the first Offer, with its missing parents), so the
// server deletes it once it is empty; the queue makes it again.
//
// A SimpleQueue is safe for concurrent use, and any number of
// SimpleQueues, in any number of processes, may share a path. It keeps
// the last listing of the directory (the names only) and walks it, taking
// the first item still there, so that a take costs a read and a delete,
// not a listing of the whole backlog; it lists again only once the walk
// is used up. The order holds: an item offered since the listing has a
// higher sequence than every listed one, so the first listed item still
// there is the head of the queue (a node of the same name in a directory
// made again since, which was not listed, is told by its creation zxid).
type SimpleQueue struct {
	c    *recipes.Client
	e    *engine.Client
	path string // as given
	full string // on the server

	mu     sync.Mutex // held by head, across its requests
	listed []string   // the rest of the last listing, in sequence order
	pzxid  int64      // the directory's pzxid at that listing
}

// NewSimple returns the simple queue at path. It does not touch
// ZooKeeper.
func NewSimple(c *recipes.Client, path string) (*SimpleQueue, error) {
	full, err := recipeargs.Path(c, path, "a queue path")
	if err != nil {
		return nil, err
	}
	return &SimpleQueue{c: c, e: (*engine.Client)(c), path: path, full: full}, nil
}

// Path returns the queue's path as given to NewSimple.
func (q *SimpleQueue) Path() string {
	if q == nil {
		return ""
	}
	return q.path
}

func (q *SimpleQueue) what() string { return "simple queue " + q.path }

func (q *SimpleQueue) check(ctx context.Context) error {
	if q == nil || q.c == nil {
		return zkerr.NotMade("SimpleQueue", "NewSimple")
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	return zkerr.Named(q.what(), q.e.Check())
}

// Offer adds an item at the tail of the queue (Curator's offer): a node
// qn-<seq> holding data, the directory and its missing parents made as
// containers when they are missing. A create whose reply is lost to a
// connection problem is made again, so an item may be queued twice then
// (as with Curator's): offers are at-least-once.
func (q *SimpleQueue) Offer(ctx context.Context, data []byte) error {
	if err := q.check(ctx); err != nil {
		return err
	}
	err := q.e.Retry(ctx, func() error {
		_, err := q.e.CreateWithParents(ctx, zkpath.JoinPath(q.full, SimplePrefix), data, zk.FlagSequence)
		return err
	})
	if err != nil {
		return zkerr.Namedf(q.what(), "offer: %w", err)
	}
	return nil
}

// Take removes the item at the head of the queue and returns it, waiting
// for one as long as it takes (Curator's take; its poll with a timeout is
// Take with a ctx deadline). It waits on a watch of the directory's
// children (or, while the directory does not exist, on its creation), so
// an idle Take costs no requests. It returns an error wrapping ctx.Err()
// when ctx ends, and recipes.ErrClientClosed when the client closes.
func (q *SimpleQueue) Take(ctx context.Context) ([]byte, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	var got []byte
	_, err := q.e.Await(ctx, engine.Wait{What: q.path}, func(engine.Snapshot, engine.Wake) (engine.Look, error) {
		data, ok, err := q.head(ctx, true)
		switch {
		case err != nil:
			return engine.Look{}, err
		case ok:
			got = data
			return engine.Look{Done: true}, nil
		}
		// Nothing to take: watch the children, or the directory's
		// creation (a reaped container: CURATOR-308), and look again.
		kids, exists, ch, err := q.e.ChildrenOrCreation(ctx, q.full)
		if err != nil || !exists {
			return engine.Look{Watch: ch}, err
		}
		if len(sortItems(kids, SimplePrefix, kindPlain)) > 0 {
			return engine.Look{Again: true}, nil // one came meanwhile
		}
		return engine.Look{Watch: ch}, nil
	})
	if err != nil {
		return nil, zkerr.Namedf(q.what(), "take: %w", err)
	}
	return got, nil
}

// Poll removes the item at the head of the queue and returns it, or
// returns false when the queue is empty (Curator's poll without a
// timeout). It does not wait.
func (q *SimpleQueue) Poll(ctx context.Context) ([]byte, bool, error) {
	if err := q.check(ctx); err != nil {
		return nil, false, err
	}
	var (
		data []byte
		ok   bool
	)
	err := q.e.Retry(ctx, func() error {
		var err error
		data, ok, err = q.head(ctx, true)
		return err
	})
	if err != nil {
		return nil, false, zkerr.Namedf(q.what(), "poll: %w", err)
	}
	return data, ok, nil
}

// Peek returns the item at the head of the queue without removing it, or
// false when the queue is empty (Curator's peek).
func (q *SimpleQueue) Peek(ctx context.Context) ([]byte, bool, error) {
	if err := q.check(ctx); err != nil {
		return nil, false, err
	}
	var (
		data []byte
		ok   bool
	)
	err := q.e.Retry(ctx, func() error {
		var err error
		data, ok, err = q.head(ctx, false)
		return err
	})
	if err != nil {
		return nil, false, zkerr.Namedf(q.what(), "peek: %w", err)
	}
	return data, ok, nil
}

// Len returns the number of items in the queue now (0 when its directory
// does not exist).
func (q *SimpleQueue) Len(ctx context.Context) (int, error) {
	if err := q.check(ctx); err != nil {
		return 0, err
	}
	return countItems(ctx, q.e, q.full, SimplePrefix, q.what())
}

// head reads, and with remove deletes, the first item it can: the items
// in sequence order, each read and then deleted, the next one tried when
// another consumer took it first (NoNode). It walks the listing kept from
// before and lists the directory again when that is used up; it returns
// false when a fresh listing is used up (or there is no directory).
func (q *SimpleQueue) head(ctx context.Context, remove bool) ([]byte, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	fresh := false
	for {
		if len(q.listed) == 0 {
			if fresh {
				return nil, false, nil
			}
			kids, st, err := q.e.Children(ctx, q.full)
			if errors.Is(err, zk.ErrNoNode) {
				return nil, false, nil
			}
			if err != nil {
				return nil, false, err
			}
			q.listed, q.pzxid, fresh = sortItems(kids, SimplePrefix, kindPlain), st.Pzxid, true
			continue
		}
		name := q.listed[0]
		node := zkpath.JoinPath(q.full, name)
		data, st, err := q.e.Get(ctx, node)
		if errors.Is(err, zk.ErrNoNode) {
			q.listed = q.listed[1:]
			continue
		}
		if err != nil {
			return nil, false, err
		}
		if st.Czxid > q.pzxid && !fresh {
			// Not the node we listed: the directory was reaped and made
			// again, and its sequence started over. List it again.
			q.listed, fresh = nil, false
			continue
		}
		if !remove {
			return data, true, nil
		}
		err = q.e.Delete(ctx, node, st.Version)
		if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
			q.listed = q.listed[1:]
			continue // another consumer took it
		}
		if err != nil {
			return nil, false, err
		}
		q.listed = q.listed[1:]
		return data, true, nil
	}
}
