package atomicval

import (
	"context"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Int64 is Curator's DistributedAtomicLong: an int64 in the node at its
// path, 8 bytes big-endian, that any number of processes update
// atomically. It keeps no state between calls and needs no Start or
// Close; its methods are safe for concurrent use.
type Int64 struct {
	v cell[int64]
}

// NewInt64 returns the atomic long at path. It does not touch ZooKeeper.
// Bad options are refused (recipes.ErrInvalidArgument), a bad path too
// (recipes.ErrInvalidPath).
func NewInt64(c *recipes.Client, path string, opts ...Option) (*Int64, error) {
	n := &Int64{}
	if err := n.v.init(c, path, "atomic long", longFormat, opts); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *Int64) ok() error {
	if n == nil || n.v.C == nil {
		return notMade("Int64", "NewInt64")
	}
	return nil
}

// Path returns the path as given to NewInt64.
func (n *Int64) Path() string {
	if n.ok() != nil {
		return ""
	}
	return n.v.Path
}

// Get reads the value, after a barrier through a quorum (it sees every
// write acknowledged before the call): 0 when the node does not exist or is empty; data
// that is not 8 bytes is an error wrapping recipes.ErrCorrupt.
func (n *Int64) Get(ctx context.Context) (int64, error) {
	if err := n.ok(); err != nil {
		return 0, err
	}
	return n.v.get(ctx)
}

// CompareAndSet sets the value to v if it is expected (an empty node is
// 0), in one try; it never creates the node. When the value is another,
// the node does not exist, or another writer changed it between the read
// and the write, it writes nothing and returns an error wrapping
// recipes.ErrConflict, with the value it read in Result.PreValue.
func (n *Int64) CompareAndSet(ctx context.Context, expected, v int64) (Result[int64], error) {
	if err := n.ok(); err != nil {
		return Result[int64]{}, err
	}
	return n.v.compareAndSet(ctx, expected, v)
}

// TrySet sets the value to v, atomically with respect to the other
// updates, creating the node if need be: optimistic tries, then, with
// WithPromotedToLock, tries holding the lock. When other writers came
// first on every try allowed, it returns an error wrapping
// recipes.ErrConflict.
func (n *Int64) TrySet(ctx context.Context, v int64) (Result[int64], error) {
	if err := n.ok(); err != nil {
		return Result[int64]{}, err
	}
	return n.v.update(ctx, "try-set", func(int64) int64 { return v })
}

// Initialize creates the node with v if it does not exist, and reports
// whether it did; an existing node is left as it is. (A create whose
// reply was lost and that is tried again reports false for its own
// node.)
func (n *Int64) Initialize(ctx context.Context, v int64) (bool, error) {
	if err := n.ok(); err != nil {
		return false, err
	}
	return n.v.initialize(ctx, v)
}

// Set writes v whatever the value and its version (not atomic with
// respect to the other updates), creating the node if need be.
func (n *Int64) Set(ctx context.Context, v int64) error {
	if err := n.ok(); err != nil {
		return err
	}
	return n.v.forceSet(ctx, v)
}

// Increment adds 1, as Add does.
func (n *Int64) Increment(ctx context.Context) (Result[int64], error) {
	return n.add(ctx, "increment", 1)
}

// Decrement subtracts 1, as Add does.
func (n *Int64) Decrement(ctx context.Context) (Result[int64], error) {
	return n.add(ctx, "decrement", -1)
}

// Add adds delta to the value (wrapping around as Java's long does),
// atomically, creating the node (from 0) if need be: optimistic tries,
// then, with WithPromotedToLock, tries holding the lock. Result.PreValue
// and PostValue are the value before and after. When other writers came
// first on every try allowed, it adds nothing and returns an error
// wrapping recipes.ErrConflict.
func (n *Int64) Add(ctx context.Context, delta int64) (Result[int64], error) {
	return n.add(ctx, "add", delta)
}

// Subtract subtracts delta, as Add does.
func (n *Int64) Subtract(ctx context.Context, delta int64) (Result[int64], error) {
	return n.add(ctx, "subtract", -delta)
}

func (n *Int64) add(ctx context.Context, op string, delta int64) (Result[int64], error) {
	if err := n.ok(); err != nil {
		return Result[int64]{}, err
	}
	return n.v.update(ctx, op, func(v int64) int64 { return v + delta })
}
