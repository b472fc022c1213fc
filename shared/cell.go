package shared

// What Value and Count share: the node's cell, its cache and follower.

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/codec"
	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/internal/lifecycle"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/recipeargs"
	"github.com/zkrecipes/zkrecipes/internal/rmw"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// cell is what Value and Count share: the read-modify-write cell (package
// rmw) of the node, its cached value, the follower and the listeners.
type cell[T any] struct {
	rmw.Cell[T]                // Kind: "shared value", "shared count"
	codec       codec.Codec[T] // the cache's (Equal, Clone): Cell.Codec
	seed        []byte
	log         *slog.Logger

	life    lifecycle.State // and its goroutine, follow
	mu      sync.Mutex
	known   bool // val was read from (or written to) the node
	val     VersionedValue[T]
	czxid   int64         // of the node val was read from (0: unknown)
	changed chan struct{} // closed when the value changes, then replaced

	listeners notify.Listeners[VersionedValue[T]]
}

func (s *cell[T]) init(c *recipes.Client, path, kind string, seed []byte, seedVal T, cd codec.Codec[T], opts []Option) error {
	rc, err := rmw.New(c, path, kind, "a "+kind, cd)
	if err != nil {
		return err
	}
	o := options{log: c.Logger()}
	if err := recipeargs.Options(&o, opts); err != nil {
		return err
	}
	*s = cell[T]{
		Cell: rc, codec: cd, seed: seed, log: o.log,
		val:     VersionedValue[T]{Value: seedVal, Version: -1},
		changed: make(chan struct{}),
	}
	return nil
}

// notMade is the error of a method called on a value its constructor did
// not make (nil, or the zero value).
func notMade(typ, ctor string) error { return zkerr.NotMade(typ, ctor) }

// Start creates the node with the seed when it does not exist (its
// missing parents as containers, as Curator does), reads the value and
// starts following the node: the cache is read again at every change and
// after every reconnection. It returns ErrAlreadyStarted when started,
// ErrClosed after Close, and an error wrapping ctx.Err() when ctx ends
// first. A failed Start creates nothing.
func (s *cell[T]) start(ctx context.Context) error {
	if err := s.Check(ctx); err != nil {
		return err
	}
	if err := s.life.Start(s.Name()); err != nil {
		return err
	}
	if err := s.create(ctx); err != nil {
		s.life.Abort()
		return err
	}
	return s.life.Go(context.Background(), s.Name(), s.follow) // refused if Close came while the node was being read
}

// create makes the node with the seed unless it exists, and reads it when
// it does.
func (s *cell[T]) create(ctx context.Context) error {
	err := s.Create(ctx, s.seed)
	switch {
	case err == nil:
		// Ours, at version 0, holding the seed: nothing to read (and so
		// nothing after the create that could fail).
		v, derr := s.Decode(s.seed)
		if derr != nil {
			return derr
		}
		s.apply(VersionedValue[T]{Value: v, Version: 0}, 0)
		return nil
	case !errors.Is(err, zk.ErrNodeExists):
		return zkerr.Namedf(s.Name(), "%w", err)
	}
	data, st, exists, err := s.Read(ctx, false)
	if err == nil && !exists {
		err = zk.ErrNoNode // deleted since
	}
	if err != nil {
		return zkerr.Namedf(s.Name(), "%w", err)
	}
	return s.view(engine.NodeView{Exists: true, Data: data, Stat: st})
}

// follow keeps the cache current until Close.
func (s *cell[T]) follow(ctx context.Context) {
	f := s.E.NewFollower(s.Full, nil)
	f.AddNode(s.Full, s.Full, func(v engine.NodeView) {
		if err := s.view(v); err != nil {
			s.log.Warn("zkrecipes: "+s.Kind+": the node holds a value of another kind; keeping the last one", "path", s.Path, "err", err)
		}
	})
	_ = f.Run(ctx)
}

// view applies what was read of the node.
func (s *cell[T]) view(v engine.NodeView) error {
	if !v.Exists {
		s.log.Warn("zkrecipes: "+s.Kind+": the node is gone; keeping the last value until it is back (Set makes it again)", "path", s.Path)
		return nil
	}
	val, err := s.codec.Decode(v.Data)
	if err != nil {
		return zkerr.Named(s.Name(), err)
	}
	s.apply(VersionedValue[T]{Value: val, Version: v.Stat.Version}, v.Stat.Czxid)
	return nil
}

// apply records a value read from (or written to) the node created at
// czxid (0: not known, for the node our Start created), if newer than the
// cache: a later version, or a node created again (whose versions start
// afresh). Listeners hear every newer version (as Curator's do); the
// change channel closes when the value itself changed.
func (s *cell[T]) apply(v VersionedValue[T], czxid int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	newer := s.newer(v, czxid)
	if czxid != 0 && (newer || s.czxid == 0) {
		s.czxid = czxid
	}
	if !newer {
		return
	}
	changed := !s.known || !s.codec.Equal(v.Value, s.val.Value)
	s.known, s.val = true, v
	if changed {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.listeners.Post(VersionedValue[T]{Value: s.codec.Clone(v.Value), Version: v.Version})
}

// newer reports whether v, read from the node created at czxid, is newer
// than the cache; s.mu is held.
func (s *cell[T]) newer(v VersionedValue[T], czxid int64) bool {
	switch {
	case !s.known:
		return true
	case czxid == 0 || czxid == s.czxid:
		return versionAfter(v.Version, s.val.Version)
	case s.czxid == 0:
		// The first read of the node our Start created (at version 0,
		// holding the seed): the same version and data is the same
		// write; anything else is newer (a write, or the node made again).
		return v.Version != s.val.Version || !s.codec.Equal(v.Value, s.val.Value)
	}
	return czxid > s.czxid // a node made again starts its versions afresh
}

// versionAfter reports whether node version a comes after b. Versions are
// int32 and wrap from MaxInt32 to MinInt32 (CURATOR-688: a count whose
// version wrapped stopped updating), so a is after b when it is less than
// 2^31 steps ahead of it.
func versionAfter(a, b int32) bool { return int32(uint32(a)-uint32(b)) > 0 }

// GetVersioned returns the current value with its node version (cached;
// refreshed by a watch). Before Start it is the seed, at version -1.
func (s *cell[T]) getVersioned() VersionedValue[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	return VersionedValue[T]{Value: s.codec.Clone(s.val.Value), Version: s.val.Version}
}

// current returns the value and the channel that closes when it changes.
func (s *cell[T]) current() (T, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.val.Value, s.changed
}

// writable refuses writes before Start, after Close and on a closed
// client.
func (s *cell[T]) writable(ctx context.Context) error {
	if err := s.Check(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.life.Running(s.Name(), ""); err != nil {
		return err
	}
	if s.life.Ended() == nil { // Start is still reading the node
		return zkerr.Named(s.Name(), recipes.ErrNotStarted)
	}
	return nil
}

// compareAndSet writes v on condition that the node is still at prev's
// version; ErrConflict when it is not.
func (s *cell[T]) compareAndSet(ctx context.Context, prev VersionedValue[T], v T) error {
	if err := s.writable(ctx); err != nil {
		return err
	}
	data, err := s.Encode(v)
	if err != nil {
		return err
	}
	st, err := s.SetAt(ctx, prev.Version, data)
	if errors.Is(err, recipes.ErrConflict) {
		s.refresh(ctx)
	}
	if err != nil {
		return err
	}
	s.apply(VersionedValue[T]{Value: s.codec.Clone(v), Version: st.Version}, st.Czxid)
	return nil
}

// refresh reads the node once, after a stale CompareAndSet, so that GetVersioned
// gives the version to try from next.
func (s *cell[T]) refresh(ctx context.Context) {
	data, st, err := s.E.Get(ctx, s.Full)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return
	case err != nil:
		s.log.Warn("zkrecipes: "+s.Kind+": reading after a stale version failed", "path", s.Path, "err", err)
		return
	}
	if err := s.view(engine.NodeView{Exists: true, Data: data, Stat: st}); err != nil {
		s.log.Warn("zkrecipes: "+s.Kind+": the node holds a value of another kind", "path", s.Path, "err", err)
	}
}

// set writes v whatever the version, making the node again (with its
// parents) if it was deleted.
func (s *cell[T]) set(ctx context.Context, v T) error {
	if err := s.writable(ctx); err != nil {
		return err
	}
	data, err := s.Encode(v)
	if err != nil {
		return err
	}
	st, err := s.ForceSet(ctx, data)
	if err != nil {
		return zkerr.Named(s.Name(), err)
	}
	if st != nil {
		s.apply(VersionedValue[T]{Value: s.codec.Clone(v), Version: st.Version}, st.Czxid)
	}
	return nil
}

// Listen calls fn with the current value (once known: after Start), then
// with every new version of the node, in order, on a goroutine of its own
// (a slow fn never blocks the value or the client). The returned function
// removes the listener; Close removes them all.
func (s *cell[T]) listen(fn func(VersionedValue[T])) (remove func()) {
	if fn == nil {
		return func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.known {
		return s.listeners.Listen(fn)
	}
	return s.listeners.ListenFirst(fn, VersionedValue[T]{Value: s.codec.Clone(s.val.Value), Version: s.val.Version})
}

// Subscribe returns a channel that receives the current value (once
// known), then every new version, in order, queued without bound; the
// returned function, or Close, closes it.
func (s *cell[T]) subscribe() (<-chan VersionedValue[T], func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.known {
		return s.listeners.Subscribe()
	}
	return s.listeners.SubscribeFirst(VersionedValue[T]{Value: s.codec.Clone(s.val.Value), Version: s.val.Version})
}

// Close stops following the node and removes the listeners, waiting for
// that within ctx. The node stays. It is safe to call more than once, and
// before Start.
func (s *cell[T]) close(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if first, _ := s.life.Close(); !first {
		return nil
	}
	if err := s.life.Stop(ctx, s.Name()); err != nil {
		ended := s.life.Ended()
		go func() { <-ended; s.listeners.Close() }()
		return err
	}
	s.listeners.Close()
	return nil
}
