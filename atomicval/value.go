package atomicval

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Value is Curator's DistributedAtomicValue: bytes in the node at its
// path, as they are, that any number of processes set atomically. A
// missing node and an empty one read as nil. It keeps no state between
// calls and needs no Start or Close; its methods are safe for concurrent
// use.
type Value struct {
	v cell[[]byte]
}

// NewValue returns the atomic value at path. It does not touch ZooKeeper.
// Bad options are refused (recipes.ErrInvalidArgument), a bad path too
// (recipes.ErrInvalidPath).
func NewValue(c *recipes.Client, path string, opts ...Option) (*Value, error) {
	n := &Value{}
	if err := n.v.init(c, path, "atomic value", valueFormat, opts); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *Value) ok() error {
	if n == nil || n.v.C == nil {
		return notMade("Value", "NewValue")
	}
	return nil
}

// Path returns the path as given to NewValue.
func (n *Value) Path() string {
	if n.ok() != nil {
		return ""
	}
	return n.v.Path
}

// Get reads the value, after a barrier through a quorum (it sees every
// write acknowledged before the call): nil when the node does not exist or is empty.
func (n *Value) Get(ctx context.Context) ([]byte, error) {
	if err := n.ok(); err != nil {
		return nil, err
	}
	return n.v.get(ctx)
}

// CompareAndSet sets the value to v if it is expected (nil and empty are
// equal), in one try; it never creates the node. When the value is
// another, the node does not exist, or another writer changed it between
// the read and the write, it writes nothing and returns an error wrapping
// recipes.ErrConflict, with the value it read in Result.PreValue.
func (n *Value) CompareAndSet(ctx context.Context, expected, v []byte) (Result[[]byte], error) {
	if err := n.ok(); err != nil {
		return Result[[]byte]{}, err
	}
	return n.v.compareAndSet(ctx, expected, v)
}

// TrySet sets the value to v, atomically with respect to the other
// updates, creating the node if need be: optimistic tries, then, with
// WithPromotedToLock, tries holding the lock. Result.PreValue is the value
// it replaced. When other writers came first on every try allowed, it
// returns an error wrapping recipes.ErrConflict.
func (n *Value) TrySet(ctx context.Context, v []byte) (Result[[]byte], error) {
	if err := n.ok(); err != nil {
		return Result[[]byte]{}, err
	}
	return n.v.update(ctx, "try-set", func([]byte) []byte { return v })
}

// Update sets the value to next(current), atomically, creating the node
// if need be (current is nil then): optimistic tries, then, with
// WithPromotedToLock, tries holding the lock. next is called once per try,
// with a copy of the bytes read, and must not keep or change the slice
// it returns afterwards. When other
// writers came first on every try allowed, it returns an error wrapping
// recipes.ErrConflict.
func (n *Value) Update(ctx context.Context, next func(current []byte) []byte) (Result[[]byte], error) {
	if err := n.ok(); err != nil {
		return Result[[]byte]{}, err
	}
	if next == nil {
		return Result[[]byte]{}, fmt.Errorf("%w: nil update function", recipes.ErrInvalidArgument)
	}
	return n.v.update(ctx, "update", next)
}

// Initialize creates the node with v if it does not exist, and reports
// whether it did; an existing node is left as it is. (A create whose
// reply was lost and that is tried again reports false for its own
// node.)
func (n *Value) Initialize(ctx context.Context, v []byte) (bool, error) {
	if err := n.ok(); err != nil {
		return false, err
	}
	return n.v.initialize(ctx, v)
}

// Set writes v whatever the value and its version (not atomic with
// respect to the other updates), creating the node if need be.
func (n *Value) Set(ctx context.Context, v []byte) error {
	if err := n.ok(); err != nil {
		return err
	}
	return n.v.forceSet(ctx, v)
}
