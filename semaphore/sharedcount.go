package semaphore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// VersionedValue is a shared count's value with the version of the node
// it was read from, for TrySet.
type VersionedValue struct {
	Value   int
	Version int32
}

// SharedCount is Curator's SharedCount: an int shared by every process, in
// a persistent node holding it as 4 big-endian bytes. Each SharedCount
// keeps the current value cached, watched and refreshed after every
// reconnection; Get reads the cache. Close it when done.
type SharedCount struct {
	c    *recipes.Client
	path string
	full string

	mu      sync.Mutex
	val     VersionedValue
	czxid   int64         // of the node val was read from (0: none yet)
	changed chan struct{} // closed at the next change

	listeners engine.Listeners[VersionedValue]
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// NewSharedCount returns the shared count at path, creating the node with
// seed when it does not exist (its missing parents as containers, as
// Curator does), and starts watching it.
func NewSharedCount(ctx context.Context, c *recipes.Client, path string, seed int) (*SharedCount, error) {
	if c == nil {
		return nil, recipes.ErrNilClient
	}
	if err := recipeargs.Context(ctx); err != nil {
		return nil, err
	}
	full, err := recipeargs.Path(c, path, "a shared count")
	if err != nil {
		return nil, err
	}
	data, err := encodeCount(seed)
	if err != nil {
		return nil, err
	}
	err = c.Retry(ctx, func() error {
		_, err := engine.Of(c).CreateMakingParents(ctx, full, data, 0)
		if errors.Is(err, zk.ErrNoNode) {
			parent, _ := engine.SplitPath(full)
			if err := engine.Of(c).EnsureContainers(ctx, parent); err != nil {
				return err
			}
			_, err = engine.Of(c).Create(ctx, full, data, 0)
		}
		return err
	})
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return nil, engine.Namedf("shared count "+path, "%w", err)
	}
	s := &SharedCount{c: c, path: path, full: full, changed: make(chan struct{}), done: make(chan struct{})}
	if err := s.refresh(ctx); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.run(wctx)
	return s, nil
}

// encodeCount is Curator's format: 4 bytes, big-endian.
func encodeCount(v int) ([]byte, error) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return nil, fmt.Errorf("%w: shared count %d does not fit in 32 bits", recipes.ErrInvalidArgument, v)
	}
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, uint32(int32(v)))
	return b, nil
}

func decodeCount(b []byte) (int, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("%w: a shared count is 4 bytes, not %d", recipes.ErrInvalidArgument, len(b))
	}
	return int(int32(binary.BigEndian.Uint32(b))), nil
}

// refresh reads the node once and applies what it finds.
func (s *SharedCount) refresh(ctx context.Context) error {
	var (
		data []byte
		st   *zk.Stat
	)
	err := s.c.Retry(ctx, func() error {
		var err error
		data, st, err = engine.Of(s.c).Get(ctx, s.full)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil // keep the last value; the follower says so
	}
	if err != nil {
		return engine.Namedf("shared count "+s.path, "%w", err)
	}
	return s.view(engine.NodeView{Exists: true, Data: data, Stat: st})
}

// view applies what was read of the node.
func (s *SharedCount) view(v engine.NodeView) error {
	if !v.Exists {
		s.c.Logger().Warn("zkrecipes: shared count: the node is gone; keeping the last value until it is back", "path", s.path)
		return nil
	}
	n, err := decodeCount(v.Data)
	if err != nil {
		return engine.Namedf("shared count "+s.path, "%w", err)
	}
	s.apply(VersionedValue{Value: n, Version: v.Stat.Version}, v.Stat.Czxid)
	return nil
}

// apply records a value read from (or written to) the node created at
// czxid, if newer than the cache: a later version, or a node created again
// (whose versions start afresh).
func (s *SharedCount) apply(v VersionedValue, czxid int64) {
	s.mu.Lock()
	if czxid < s.czxid || czxid == s.czxid && !versionAfter(v.Version, s.val.Version) {
		s.mu.Unlock()
		return
	}
	old := s.val
	s.val, s.czxid = v, czxid
	changed := old.Value != v.Value
	if changed {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	if changed {
		s.listeners.Post(v)
	}
}

// versionAfter reports whether node version a comes after b. Versions are
// int32 and wrap from MaxInt32 to MinInt32 (CURATOR-688: a count whose
// version wrapped stopped updating), so a is after b when it is less than
// 2^31 steps ahead of it.
func versionAfter(a, b int32) bool { return int32(uint32(a)-uint32(b)) > 0 }

// run keeps the cache current until Close: it follows the node (re-read
// at every change and after every reconnection).
func (s *SharedCount) run(ctx context.Context) {
	defer close(s.done)
	_ = engine.Of(s.c).FollowNode(ctx, s.full, func(v engine.NodeView) {
		if err := s.view(v); err != nil {
			s.c.Logger().Warn("zkrecipes: shared count: a value that is not a count", "path", s.path, "err", err)
		}
	})
}

// Path returns the path as given to NewSharedCount.
func (s *SharedCount) Path() string { return s.path }

// Get returns the current value (cached; refreshed by a watch).
func (s *SharedCount) Get() int { return s.GetVersioned().Value }

// GetVersioned returns the current value with its node version.
func (s *SharedCount) GetVersioned() VersionedValue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.val
}

// limit makes the count a engine.Limit.
func (s *SharedCount) limit() (int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.val.Value, s.changed
}

// TrySet sets the value to v only if the node is still at prev's version
// (optimistic concurrency: of several clients setting from the same
// version, exactly one wins). It reports whether it won; on a stale
// version the cache is refreshed, so GetVersioned gives the value to try
// from next.
func (s *SharedCount) TrySet(ctx context.Context, prev VersionedValue, v int) (bool, error) {
	if err := s.writable(); err != nil {
		return false, err
	}
	data, err := encodeCount(v)
	if err != nil {
		return false, err
	}
	var st *zk.Stat
	err = s.c.Retry(ctx, func() error {
		var err error
		st, err = engine.Of(s.c).Set(ctx, s.full, data, prev.Version)
		return err
	})
	if errors.Is(err, zk.ErrBadVersion) {
		if rerr := s.refresh(ctx); rerr != nil {
			s.c.Logger().Warn("zkrecipes: shared count: refresh after a stale version failed", "path", s.path, "err", rerr)
		}
		return false, nil
	}
	if err != nil {
		return false, engine.Namedf("shared count "+s.path, "%w", err)
	}
	s.apply(VersionedValue{Value: v, Version: st.Version}, st.Czxid)
	return true, nil
}

// Set sets the value whatever the version.
func (s *SharedCount) Set(ctx context.Context, v int) error {
	if err := s.writable(); err != nil {
		return err
	}
	data, err := encodeCount(v)
	if err != nil {
		return err
	}
	var st *zk.Stat
	err = s.c.Retry(ctx, func() error {
		var err error
		st, err = engine.Of(s.c).Set(ctx, s.full, data, -1)
		return err
	})
	if err != nil {
		return engine.Namedf("shared count "+s.path, "%w", err)
	}
	s.apply(VersionedValue{Value: v, Version: st.Version}, st.Czxid)
	return nil
}

// writable refuses writes through a SharedCount not made by
// NewSharedCount, or closed (as Curator's does).
func (s *SharedCount) writable() error {
	if s == nil || s.c == nil || s.cancel == nil {
		return fmt.Errorf("%w: SharedCount not made by NewSharedCount", recipes.ErrInvalidArgument)
	}
	if err := engine.Of(s.c).Check(); err != nil {
		return engine.Namedf("shared count "+s.path, "%w", err) // a closed client: ErrClientClosed
	}
	select {
	case <-s.done:
		return engine.Namedf("shared count "+s.path, "%w", recipes.ErrClosed)
	default:
	}
	return nil
}

// Listen calls fn with every new value, with the version it was read
// from (what TrySet wants), in order, on a goroutine of its own (a slow fn
// never blocks the count or the client). The returned function removes
// the listener.
func (s *SharedCount) Listen(fn func(VersionedValue)) (remove func()) {
	return s.listeners.Listen(fn)
}

// Subscribe returns a channel of the new values, in order, queued without
// bound; the returned function (or Close) closes it.
func (s *SharedCount) Subscribe() (<-chan VersionedValue, func()) {
	return s.listeners.Subscribe()
}

// Close stops watching and removes the listeners, waiting for that within
// ctx. The node stays. It is safe to call more than once.
func (s *SharedCount) Close(ctx context.Context) error {
	if s == nil || s.cancel == nil {
		return fmt.Errorf("%w: SharedCount not made by NewSharedCount", recipes.ErrInvalidArgument)
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	var err error
	s.closeOnce.Do(func() {
		s.cancel()
		select {
		case <-s.done:
		case <-ctx.Done():
			err = engine.Namedf("shared count "+s.path, "close: %w", ctx.Err())
			go func() { <-s.done; s.listeners.Close() }()
			return
		}
		s.listeners.Close()
	})
	return err
}
