package shared

import (
	"context"

	"github.com/zkrecipes/zkrecipes/internal/codec"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Count is Curator's SharedCount: an int shared by every process,
// kept in a persistent node as Curator keeps it (4 bytes, big-endian, so
// a value fits in 32 bits), on top of the same machinery as Value.
// Start it before use and Close it when done.
type Count struct {
	v cell[int]
}

// NewCount returns the shared count at path, whose node Start
// creates with seed when it does not exist. It does not touch ZooKeeper.
// A seed that does not fit in 32 bits is refused (ErrInvalidArgument).
func NewCount(c *recipes.Client, path string, seed int, opts ...Option) (*Count, error) {
	data, err := countFormat.Encode(seed)
	if err != nil {
		return nil, err
	}
	s := &Count{}
	if err := s.v.init(c, path, "shared count", data, seed, countFormat, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// countFormat is Curator's SharedCount format (package codec): 4 bytes,
// big-endian, exactly.
var countFormat = codec.Int{Int32: codec.Int32{What: "a shared count"}}

func decodeCount(b []byte) (int, error) { return countFormat.Decode(b) }

func (s *Count) ok() bool { return s != nil && s.v.C != nil }

func (s *Count) notMade() error { return notMade("Count", "NewCount") }

// Start creates the node with the seed when it does not exist (its
// missing parents as containers, as Curator does), reads the count and
// starts following the node: the cache is read again at every change and
// after every reconnection. It returns ErrAlreadyStarted when started,
// ErrClosed after Close, and an error wrapping ctx.Err() when ctx ends
// first; a node that does not hold 4 bytes is refused as corrupt
// (ErrCorrupt, as atomicval refuses it). A failed Start creates nothing.
func (s *Count) Start(ctx context.Context) error {
	if !s.ok() {
		return s.notMade()
	}
	return s.v.start(ctx)
}

// Close stops following the node and removes the listeners, waiting for
// that within ctx. The node stays. It is safe to call more than once, and
// before Start.
func (s *Count) Close(ctx context.Context) error {
	if !s.ok() {
		return s.notMade()
	}
	return s.v.close(ctx)
}

// Path returns the path as given to NewCount.
func (s *Count) Path() string {
	if !s.ok() {
		return ""
	}
	return s.v.Path
}

// Get returns the current value (cached; refreshed by a watch). Before
// Start it is the seed.
func (s *Count) Get() int { return s.GetVersioned().Value }

// GetVersioned returns the current value with its node version, for
// CompareAndSet. Before Start it is the seed, at version -1.
func (s *Count) GetVersioned() VersionedValue[int] {
	if !s.ok() {
		return VersionedValue[int]{Version: -1}
	}
	return s.v.getVersioned()
}

// CompareAndSet sets the count to v only if the node is still at prev's
// version (optimistic concurrency: of several clients setting from the
// same version, exactly one wins; Curator's trySetCount). A loser gets an
// error wrapping recipes.ErrConflict, and the cache is read again, so
// GetVersioned gives the value to try from next. It returns ErrNotStarted
// before Start, ErrClosed after Close and ErrInvalidArgument for a value
// that does not fit in 32 bits.
func (s *Count) CompareAndSet(ctx context.Context, prev VersionedValue[int], v int) error {
	if !s.ok() {
		return s.notMade()
	}
	return s.v.compareAndSet(ctx, prev, v)
}

// Set sets the count to v whatever the version (making the node again,
// with its parents, if it was deleted). It returns ErrNotStarted before
// Start, ErrClosed after Close and ErrInvalidArgument for a value that
// does not fit in 32 bits.
func (s *Count) Set(ctx context.Context, v int) error {
	if !s.ok() {
		return s.notMade()
	}
	return s.v.set(ctx, v)
}

// Listen calls fn with the current count (once known: after Start), then
// with every new version of the node, in order, on a goroutine of its own
// (a slow fn never blocks the count or the client). The returned function
// removes the listener; Close removes them all.
func (s *Count) Listen(fn func(VersionedValue[int])) (remove func()) {
	if !s.ok() {
		return func() {}
	}
	return s.v.listen(fn)
}

// Subscribe returns a channel that receives the current count (once
// known: after Start), then every new version, in order, queued without
// bound; the returned function, or Close, closes it.
func (s *Count) Subscribe() (<-chan VersionedValue[int], func()) {
	if !s.ok() {
		return closedChan[VersionedValue[int]](), func() {}
	}
	return s.v.subscribe()
}
