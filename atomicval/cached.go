package atomicval

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// CachedInt64 is Curator's CachedAtomicLong: a block allocator of ids on
// an Int64. It takes a block of ids at a time from the shared counter
// (one Add of the block size) and hands them out one by one from memory,
// so that a process making many ids touches ZooKeeper once a block. Ids
// are unique across every process that takes them from the same counter
// this way (or by Int64.Add of a block, whose ids are the PreValue and the
// block's size-1 after it), but not in order across processes, and a
// process that stops leaves the rest of its block unused: ids have gaps.
//
// A block whose Add failed is never used: after recipes.ErrConflict
// nothing was taken; after recipes.ErrUnknownOutcome the block may have
// been taken, and its ids are skipped (a gap) rather than risk handing
// one out twice. The next call takes a new block.
//
// Its methods are safe for concurrent use; the goroutines of one process
// share its blocks.
type CachedInt64 struct {
	n     *Int64
	block int64
	// lock is held while handing out an id (and fetching a block); a
	// channel so that a waiter's ctx can end the wait.
	lock       chan struct{}
	next, left int64 // the next id of the current block, and how many remain
}

// NewCachedInt64 returns an allocator taking blocks of size ids from n.
// A size below 1 or a nil n is refused (recipes.ErrInvalidArgument). It
// does not touch ZooKeeper.
func NewCachedInt64(n *Int64, size int64) (*CachedInt64, error) {
	if err := n.ok(); err != nil {
		return nil, err
	}
	if size < 1 {
		return nil, fmt.Errorf("%w: a block of %d ids (at least 1)", recipes.ErrInvalidArgument, size)
	}
	return &CachedInt64{n: n, block: size, lock: make(chan struct{}, 1)}, nil
}

// Next returns an id no other caller of this counter's blocks got: the
// next of the current block, taking a new block (Int64.Add of the size,
// with the Int64's retry policy and promotion) when this one is used up.
// When taking a block fails, it returns the error (wrapping
// recipes.ErrConflict, recipes.ErrUnknownOutcome, recipes.ErrCorrupt, or
// ctx's) and no id; a later call tries again.
func (c *CachedInt64) Next(ctx context.Context) (int64, error) {
	if c == nil || c.n == nil {
		return 0, notMade("CachedInt64", "NewCachedInt64")
	}
	if err := recipeargs.Context(ctx); err != nil {
		return 0, err
	}
	select {
	case c.lock <- struct{}{}:
	case <-ctx.Done():
		return 0, zkerr.Namedf(c.n.v.Name(), "cached next: %w", ctx.Err())
	}
	defer func() { <-c.lock }()
	if c.left == 0 {
		res, err := c.n.Add(ctx, c.block)
		if err != nil {
			return 0, err
		}
		c.next, c.left = res.PreValue, c.block
	}
	id := c.next
	c.next++
	c.left--
	return id, nil
}

// Remaining returns how many ids of the current block are left (0 when
// the next call takes a new block).
func (c *CachedInt64) Remaining() int64 {
	if c == nil || c.lock == nil {
		return 0
	}
	c.lock <- struct{}{}
	defer func() { <-c.lock }()
	return c.left
}
