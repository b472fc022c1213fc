// Package rmw is the one read-modify-write cell of the value recipes
// (package shared, package atomicval): one node holding a value in a
// codec's format (package codec), that is read, created unless it
// exists, written at a version, written whatever the version, and
// updated by one compare-and-set loop varied by options (the retry
// policy of lost tries, a bound, creating the node, a promoted lock when
// the loop gives up), as etcd's STM is one loop varied by options. shared
// follows the node around its cell and keeps a cache; atomicval keeps no
// state between calls.
package rmw

import (
	"bytes"
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/codec"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Cell is one value's node. The zero Cell is not made (C is nil).
type Cell[T any] struct {
	C     *recipes.Client
	E     *engine.Client
	Kind  string // "atomic long", "shared count": names the recipe in errors
	Path  string // as given
	Full  string // with the namespace
	Codec codec.Codec[T]
}

// New returns the cell of kind at path; what names the path in a bad
// path's error ("an atomic value's path").
func New[T any](c *recipes.Client, path, kind, what string, cd codec.Codec[T]) (Cell[T], error) {
	full, err := recipeargs.Path(c, path, what)
	if err != nil {
		return Cell[T]{}, err
	}
	return Cell[T]{C: c, E: (*engine.Client)(c), Kind: kind, Path: path, Full: full, Codec: cd}, nil
}

// Name names the recipe and its path in errors: "atomic long /a/b".
func (s *Cell[T]) Name() string { return s.Kind + " " + s.Path }

// Check refuses a nil ctx and a closed client.
func (s *Cell[T]) Check(ctx context.Context) error {
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	if err := s.E.Check(); err != nil {
		return zkerr.Named(s.Name(), err)
	}
	return nil
}

// Encode is the node data of v, naming the recipe in an error.
func (s *Cell[T]) Encode(v T) ([]byte, error) {
	data, err := s.Codec.Encode(v)
	return data, zkerr.Named(s.Name(), err)
}

// Decode reads data, naming the recipe in a corruption error.
func (s *Cell[T]) Decode(data []byte) (T, error) {
	v, err := s.Codec.Decode(data)
	return v, zkerr.Named(s.Name(), err)
}

// Read reads the node's data and stat (exists false when there is none),
// retrying connection problems under the client's policy; with fresh it
// first passes a Barrier, so that the read sees every write acknowledged
// before the call (a server serves reads from its own copy, which may lag
// behind, the leader's too).
func (s *Cell[T]) Read(ctx context.Context, fresh bool) (data []byte, st *zk.Stat, exists bool, _ error) {
	err := s.E.Retry(ctx, func() error {
		if fresh {
			if err := s.E.Barrier(ctx, s.Full); err != nil {
				return err
			}
		}
		var err error
		data, st, err = s.E.Get(ctx, s.Full)
		exists = err == nil
		if errors.Is(err, zk.ErrNoNode) {
			data, err = nil, nil
		}
		return err
	})
	return data, st, exists, err
}

// Create makes the node with data, its missing parents as containers,
// retrying connection problems; an error wrapping zk.ErrNodeExists when
// the node exists (a create whose reply was lost, tried again, meets its
// own node so).
func (s *Cell[T]) Create(ctx context.Context, data []byte) error {
	return s.E.Retry(ctx, func() error { return s.create(ctx, data) })
}

// create is one try of Create: the node, its missing parents as
// containers (again when one goes between the two).
func (s *Cell[T]) create(ctx context.Context, data []byte) error {
	_, err := s.E.CreateWithParents(ctx, s.Full, data, 0)
	return err
}

// SetAt writes data on condition that the node is at version, in one
// write (connection problems retried); an error wrapping
// recipes.ErrConflict when it is not (or is gone).
func (s *Cell[T]) SetAt(ctx context.Context, version int32, data []byte) (*zk.Stat, error) {
	var st *zk.Stat
	err := s.E.Retry(ctx, func() error {
		var err error
		st, err = s.E.Set(ctx, s.Full, data, version)
		return err
	})
	if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
		return nil, zkerr.Namedf(s.Name(), "%w: the node is no longer at version %d", recipes.ErrConflict, version)
	}
	return st, zkerr.Named(s.Name(), err)
}

// ForceSet writes data whatever the node's version, making the node
// again (its missing parents as containers) when it is gone; connection
// problems are retried. It returns the node's stat after the write, or
// nil when a node it made could not be read back as it made it.
func (s *Cell[T]) ForceSet(ctx context.Context, data []byte) (*zk.Stat, error) {
	var st *zk.Stat
	err := s.E.Retry(ctx, func() error {
		for {
			var err error
			st, err = s.E.Set(ctx, s.Full, data, -1)
			if !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			err = s.create(ctx, data)
			if err == nil {
				// The create reply has no stat: read it, and keep it
				// only while it is our write's (version 0, our data).
				got, gst, gerr := s.E.Get(ctx, s.Full)
				if st = nil; gerr == nil && gst.Version == 0 && bytes.Equal(got, data) {
					st = gst
				}
				return nil
			}
			if !errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			// Made or deleted meanwhile: set again.
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	})
	return st, err
}
