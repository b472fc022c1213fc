package shared

import (
	"bytes"
	"context"
	"log/slog"

	"github.com/zkrecipes/zkrecipes/internal/codec"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// VersionedValue is a value with the version of the node it was read from
// (Curator's VersionedValue), for CompareAndSet. Before Start the version is -1
// (Curator's UNINITIALIZED_VERSION) and the value is the seed.
type VersionedValue[T any] struct {
	Value   T
	Version int32
}

// Option configures a Value or a Count.
type Option func(*options) error

type options struct{ log *slog.Logger }

// WithLogger sets the logger of what happens away from the caller (a node
// gone, a value of another kind), at warn; the Client's by default.
func WithLogger(l *slog.Logger) Option {
	return recipeargs.Logger(l, func(o *options, l *slog.Logger) { o.log = l })
}

// Value is Curator's SharedValue: bytes in a persistent node,
// shared by every process. Start it before use and Close it when done.
type Value struct {
	v cell[[]byte]
}

// NewValue returns the shared value at path, whose node Start
// creates with seed when it does not exist. It does not touch ZooKeeper.
func NewValue(c *recipes.Client, path string, seed []byte, opts ...Option) (*Value, error) {
	s := &Value{}
	seed = bytes.Clone(seed)
	if seed == nil {
		seed = []byte{}
	}
	if err := s.v.init(c, path, "shared value", seed, seed, codec.Bytes{}, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// ok reports whether s was made by NewValue.
func (s *Value) ok() bool { return s != nil && s.v.C != nil }

func (s *Value) notMade() error { return notMade("Value", "NewValue") }

// Start creates the node with the seed when it does not exist (its
// missing parents as containers, as Curator does), reads the value and
// starts following the node: the cache is read again at every change and
// after every reconnection. It returns ErrAlreadyStarted when started,
// ErrClosed after Close, and an error wrapping ctx.Err() when ctx ends
// first. A failed Start creates nothing.
func (s *Value) Start(ctx context.Context) error {
	if !s.ok() {
		return s.notMade()
	}
	return s.v.start(ctx)
}

// Close stops following the node and removes the listeners, waiting for
// that within ctx. The node stays. It is safe to call more than once, and
// before Start.
func (s *Value) Close(ctx context.Context) error {
	if !s.ok() {
		return s.notMade()
	}
	return s.v.close(ctx)
}

// Path returns the path as given to NewValue.
func (s *Value) Path() string {
	if !s.ok() {
		return ""
	}
	return s.v.Path
}

// Get returns the current value (cached; refreshed by a watch). Before
// Start it is the seed. The slice is the caller's.
func (s *Value) Get() []byte { return s.GetVersioned().Value }

// GetVersioned returns the current value with its node version, for
// CompareAndSet. Before Start it is the seed, at version -1.
func (s *Value) GetVersioned() VersionedValue[[]byte] {
	if !s.ok() {
		return VersionedValue[[]byte]{Version: -1}
	}
	return s.v.getVersioned()
}

// CompareAndSet sets the value to v only if the node is still at prev's
// version (optimistic concurrency: of several clients setting from the
// same version, exactly one wins; Curator's trySetValue). A loser gets an
// error wrapping recipes.ErrConflict, and the cache is read again, so
// GetVersioned gives the value to try from next. It returns ErrNotStarted
// before Start and ErrClosed after Close.
func (s *Value) CompareAndSet(ctx context.Context, prev VersionedValue[[]byte], v []byte) error {
	if !s.ok() {
		return s.notMade()
	}
	return s.v.compareAndSet(ctx, prev, v)
}

// Set sets the value to v whatever the version (making the node again,
// with its parents, if it was deleted). It returns ErrNotStarted before
// Start and ErrClosed after Close.
func (s *Value) Set(ctx context.Context, v []byte) error {
	if !s.ok() {
		return s.notMade()
	}
	return s.v.set(ctx, v)
}

// Listen calls fn with the current value (once known: after Start), then
// with every new version of the node, in order, on a goroutine of its own
// (a slow fn never blocks the value or the client). The slice fn gets is
// shared by every listener: fn must not modify it. The returned function
// removes the listener; Close removes them all.
func (s *Value) Listen(fn func(VersionedValue[[]byte])) (remove func()) {
	if !s.ok() {
		return func() {}
	}
	return s.v.listen(fn)
}

// Subscribe returns a channel that receives the current value (once
// known: after Start), then every new version, in order, queued without
// bound; the returned function, or Close, closes it.
func (s *Value) Subscribe() (<-chan VersionedValue[[]byte], func()) {
	if !s.ok() {
		return closedChan[VersionedValue[[]byte]](), func() {}
	}
	return s.v.subscribe()
}

func closedChan[T any]() <-chan T {
	ch := make(chan T)
	close(ch)
	return ch
}
