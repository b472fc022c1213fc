package discovery

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/lifecycle"
	"github.com/zkrecipes/zkrecipes/internal/notify"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// ServiceCache is a local, watched copy of one service's instances
// (Curator's ServiceCache): a children cache (package cache) of
// basePath/<name>, the service node itself left out (CURATOR-574). An
// instance node that cannot be read is left out, logged at warn and
// counted on the Discovery (Unreadable), never dropped in silence (Curator
// drops every instance whose payload class it cannot resolve).
//
// Make it with Discovery.NewServiceCache, then Start and Close.
type ServiceCache struct {
	d    *Discovery
	name string
	cc   *cache.Cache

	mu        sync.Mutex
	byNode    map[string]*Instance // by node name
	names     []string             // once loaded: byNode's names, sorted, as *snap's instances (under mu)
	snap      atomic.Pointer[[]*Instance]
	version   atomic.Uint64 // bumped by every change of the instances
	loaded    bool          // the cache's initial load is in (under mu)
	ready     chan struct{} // closed once Instances has the initial load
	readyOnce sync.Once
	remove    func()
	listeners notify.Listeners[[]*Instance]
	life      lifecycle.State
}

// NewServiceCache returns a cache of service name's instances; it
// touches nothing until Start.
func (d *Discovery) NewServiceCache(name string) (*ServiceCache, error) {
	if !d.made() {
		return nil, notMade()
	}
	if err := checkName("service name", name); err != nil {
		return nil, err
	}
	cc, err := cache.NewChildrenCache(d.c, zkpath.JoinPath(d.base, name))
	if err != nil {
		return nil, err
	}
	s := &ServiceCache{d: d, name: name, cc: cc, byNode: map[string]*Instance{}, ready: make(chan struct{})}
	empty := []*Instance{}
	s.snap.Store(&empty)
	return s, nil
}

// Name returns the service's name.
func (s *ServiceCache) Name() string {
	if !s.made() {
		return ""
	}
	return s.name
}

func (s *ServiceCache) made() bool { return s != nil && s.snap.Load() != nil }

func notMadeCache() error { return zkerr.NotMade("ServiceCache", "Discovery.NewServiceCache") }

func (s *ServiceCache) what() string { return "service cache " + zkpath.JoinPath(s.d.base, s.name) }

// Start starts the cache and waits within ctx for the initial load (as
// Curator's start). A Start that fails leaves nothing running.
func (s *ServiceCache) Start(ctx context.Context) error {
	if !s.made() {
		return notMadeCache()
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	if err := s.life.Start(s.what()); err != nil {
		return err
	}
	if err := s.cc.Start(ctx); err != nil {
		s.life.Abort()
		return err
	}
	remove := s.cc.Listen(s.event)
	s.mu.Lock()
	s.remove = remove
	s.mu.Unlock()
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		_ = s.Close(context.Background())
		return zkerr.Namedf(s.what(), "start: %w", ctx.Err())
	}
}

// WaitReady waits until the initial load is in: every Instances after it
// lists the instances the load read (Start waits for it too). It returns
// ErrNotStarted before Start, ErrClosed after Close, and an error wrapping
// ctx.Err() when ctx ends first.
func (s *ServiceCache) WaitReady(ctx context.Context) error {
	if !s.made() {
		return notMadeCache()
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	if err := s.life.Running(s.what(), "waiting for the instances"); err != nil {
		return err
	}
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return zkerr.Namedf(s.what(), "waiting for the instances: %w", ctx.Err())
	}
}

// event applies one cache event. Once the initial load is in, a change
// makes the new list from the last by one insertion, replacement or
// removal at its place in the sorted names: a copy of the list, not a
// sort of every instance per change (which made a change to a service
// of 10,000 instances cost each cache about a millisecond).
func (s *ServiceCache) event(ev cache.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var (
		list    []*Instance
		changed bool
	)
	switch ev.Type {
	case cache.NodeCreated, cache.NodeChanged:
		_, node := zkpath.SplitPath(ev.Path)
		inst, err := s.d.decode(ev.Path, ev.New.Data)
		if err != nil {
			list, changed = s.drop(node)
			break
		}
		list, changed = s.put(node, inst)
	case cache.NodeDeleted:
		_, node := zkpath.SplitPath(ev.Path)
		list, changed = s.drop(node)
	case cache.Initialized:
		s.loaded = true
		list, changed = s.rebuild(), true
	}
	if !changed || !s.loaded {
		return // the initial load is published once complete
	}
	s.snap.Store(&list)
	s.version.Add(1)
	s.listeners.Post(list)
	// Ready only now: Start returns once Instances has the load.
	s.readyOnce.Do(func() { close(s.ready) })
}

// put records inst at node and, once loaded, returns the new list (under
// mu).
func (s *ServiceCache) put(node string, inst *Instance) ([]*Instance, bool) {
	if old, had := s.byNode[node]; had && reflect.DeepEqual(old, inst) {
		return nil, false // the same bytes written again: the same state
	}
	s.byNode[node] = inst
	if !s.loaded {
		return nil, true
	}
	cur := *s.snap.Load()
	i, found := slices.BinarySearch(s.names, node)
	list := make([]*Instance, 0, len(cur)+1)
	list = append(append(list, cur[:i]...), inst)
	if found {
		return append(list, cur[i+1:]...), true
	}
	s.names = slices.Insert(s.names, i, node)
	return append(list, cur[i:]...), true
}

// drop forgets node and, once loaded, returns the new list (under mu).
func (s *ServiceCache) drop(node string) ([]*Instance, bool) {
	if _, had := s.byNode[node]; !had {
		return nil, false
	}
	delete(s.byNode, node)
	if !s.loaded {
		return nil, true
	}
	cur := *s.snap.Load()
	i, found := slices.BinarySearch(s.names, node)
	if !found { // cannot be: names holds byNode's names
		return s.rebuild(), true
	}
	s.names = slices.Delete(s.names, i, i+1)
	list := make([]*Instance, 0, len(cur)-1)
	return append(append(list, cur[:i]...), cur[i+1:]...), true
}

// rebuild makes names and the list from byNode (under mu).
func (s *ServiceCache) rebuild() []*Instance {
	s.names = make([]string, 0, len(s.byNode))
	for n := range s.byNode {
		s.names = append(s.names, n)
	}
	slices.Sort(s.names)
	list := make([]*Instance, len(s.names))
	for k, n := range s.names {
		list[k] = s.byNode[n]
	}
	return list
}

// Instances returns the service's instances, sorted by node name. The
// slice and the instances are shared: do not modify them (Clone one to
// change it).
func (s *ServiceCache) Instances() []*Instance {
	if !s.made() {
		return nil
	}
	return *s.snap.Load()
}

// Listen calls fn with the current instances (once loaded), then with
// the instances after each change, in order, on a goroutine of its own;
// the slices are shared as Instances'. The returned function removes the
// listener.
func (s *ServiceCache) Listen(fn func([]*Instance)) (remove func()) {
	if !s.made() {
		return func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.ready:
		return s.listeners.ListenFirst(fn, *s.snap.Load())
	default:
		return s.listeners.Listen(fn)
	}
}

// Subscribe is Listen for a channel: it receives the current instances
// (once loaded), then the instances after each change, in order, queued
// without bound while the reader is slow. The returned function, or
// Close, closes the channel.
func (s *ServiceCache) Subscribe() (<-chan []*Instance, func()) {
	if !s.made() {
		ch := make(chan []*Instance)
		close(ch)
		return ch, func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.ready:
		return s.listeners.SubscribeFirst(*s.snap.Load())
	default:
		return s.listeners.Subscribe()
	}
}

// Close stops the cache and its listeners. It is safe to call more than
// once.
func (s *ServiceCache) Close(ctx context.Context) error {
	if !s.made() {
		return notMadeCache()
	}
	if first, _ := s.life.Close(); !first {
		return nil
	}
	s.mu.Lock()
	remove := s.remove
	s.mu.Unlock()
	if remove != nil {
		remove()
	}
	err := s.cc.Close(ctx)
	s.listeners.Close()
	return err
}
