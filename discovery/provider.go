package discovery

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Filter reports whether a provider may return an instance. Filters are
// called when the instances or the down set change, not on every
// Provider.Instance call: they must depend on the instance only.
type Filter func(*Instance) bool

// Strategy picks one instance of a non-empty list (the filtered
// instances, sorted by node name; the same slice until they change).
type Strategy interface {
	Pick(instances []*Instance) *Instance
}

// RoundRobin returns the instances in turn (Curator's
// RoundRobinStrategy, without its overflow after 2^31 calls).
func RoundRobin() Strategy { return &roundRobin{} }

type roundRobin struct{ n atomic.Uint64 }

func (r *roundRobin) Pick(l []*Instance) *Instance {
	return l[(r.n.Add(1)-1)%uint64(len(l))]
}

// Random returns an instance at random (Curator's RandomStrategy).
func Random() Strategy { return random{} }

type random struct{}

func (random) Pick(l []*Instance) *Instance { return l[rand.IntN(len(l))] }

// Sticky returns the instance it returned last while that one is still
// among the instances, and asks next for another when it is not
// (Curator's StickyStrategy).
func Sticky(next Strategy) Strategy { return &sticky{next: next} }

type sticky struct {
	next Strategy
	mu   sync.Mutex
	last *Instance
}

func (s *sticky) Pick(l []*Instance) *Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil {
		for _, i := range l {
			if i.Name == s.last.Name && i.ID == s.last.ID {
				s.last = i
				return i
			}
		}
	}
	s.last = s.next.Pick(l)
	return s.last
}

// ProviderOption configures a Provider.
type ProviderOption func(*Provider) error

// WithStrategy sets the strategy (RoundRobin by default).
func WithStrategy(s Strategy) ProviderOption {
	return func(p *Provider) error {
		if s == nil {
			return fmt.Errorf("%w: nil strategy", recipes.ErrInvalidArgument)
		}
		p.strategy = s
		return nil
	}
}

// WithFilter adds a filter: an instance is returned only when every
// filter keeps it.
func WithFilter(f Filter) ProviderOption {
	return func(p *Provider) error {
		if f == nil {
			return fmt.Errorf("%w: nil filter", recipes.ErrInvalidArgument)
		}
		p.filters = append(p.filters, f)
		return nil
	}
}

// WithDownInstancePolicy sets when NoteError takes an instance out: after
// errors errors, for timeout after the last one (Curator's defaults: 2
// errors, 30 s).
func WithDownInstancePolicy(errors int, timeout time.Duration) ProviderOption {
	return func(p *Provider) error {
		if errors < 1 || timeout <= 0 {
			return fmt.Errorf("%w: down instance policy %d errors, %v", recipes.ErrInvalidArgument, errors, timeout)
		}
		p.downErrors, p.downFor = errors, timeout
		return nil
	}
}

// Provider returns one instance of a service at a time (Curator's
// ServiceProvider): from a ServiceCache, the instances that are enabled,
// not down (NoteError) and kept by every filter, picked by a strategy.
// Instance costs the strategy's pick: the filtered list is made again only
// when the instances, the down set or a down instance's time change.
//
// Make it with Discovery.NewProvider, then Start and Close.
type Provider struct {
	sc         *ServiceCache
	strategy   Strategy
	filters    []Filter
	downErrors int
	downFor    time.Duration
	now        func() time.Time

	mu      sync.Mutex
	down    map[string]*downStatus // by name/id
	downGen atomic.Uint64          // bumped (under mu) when an instance goes down
	view    atomic.Pointer[providerView]
}

type downStatus struct {
	errors int
	last   time.Time
}

// providerView is the filtered list for one state of the cache and the
// down set, good until expires.
type providerView struct {
	version uint64
	downGen uint64
	expires time.Time // zero: no down instance to come back
	list    []*Instance
}

// NewProvider returns a provider of service name's instances on a
// ServiceCache of its own; it touches nothing until Start.
func (d *Discovery) NewProvider(name string, opts ...ProviderOption) (*Provider, error) {
	if !d.made() {
		return nil, notMade()
	}
	sc, err := d.NewServiceCache(name)
	if err != nil {
		return nil, err
	}
	p := &Provider{sc: sc, strategy: RoundRobin(), downErrors: 2, downFor: 30 * time.Second, now: timeNow, down: map[string]*downStatus{}}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Start starts the provider's cache and waits within ctx for its initial
// load: every Instance after it picks among the instances loaded.
func (p *Provider) Start(ctx context.Context) error {
	if !p.made() {
		return notMadeProvider()
	}
	return p.sc.Start(ctx)
}

// WaitReady waits until the provider's cache has its initial load (see
// ServiceCache.WaitReady; Start waits for it too).
func (p *Provider) WaitReady(ctx context.Context) error {
	if !p.made() {
		return notMadeProvider()
	}
	return p.sc.WaitReady(ctx)
}

// Close closes the provider's cache.
func (p *Provider) Close(ctx context.Context) error {
	if !p.made() {
		return notMadeProvider()
	}
	return p.sc.Close(ctx)
}

func (p *Provider) made() bool { return p != nil && p.sc != nil }

func notMadeProvider() error { return zkerr.NotMade("Provider", "Discovery.NewProvider") }

// Cache returns the provider's ServiceCache.
func (p *Provider) Cache() *ServiceCache {
	if !p.made() {
		return nil
	}
	return p.sc
}

// Instance returns an instance, nil when none is available. It is safe
// for concurrent use.
func (p *Provider) Instance() *Instance {
	if !p.made() {
		return nil
	}
	l := p.current()
	if len(l) == 0 {
		return nil
	}
	return p.strategy.Pick(l)
}

// Instances returns every available instance (shared: do not modify).
func (p *Provider) Instances() []*Instance {
	if !p.made() {
		return nil
	}
	return p.current()
}

// NoteError records an error with inst: after the policy's number of
// errors (2 by default) it is not returned until the policy's time (30 s)
// has passed since the last one.
func (p *Provider) NoteError(inst *Instance) {
	if !p.made() || inst == nil {
		return
	}
	now := p.now()
	key := inst.Name + "/" + inst.ID
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.down[key]
	if st == nil || now.Sub(st.last) >= p.downFor {
		st = &downStatus{}
		p.down[key] = st
	}
	st.errors++
	st.last = now
	if st.errors == p.downErrors {
		p.downGen.Add(1)
	}
}

// current returns the filtered list, making it again when stale.
func (p *Provider) current() []*Instance {
	version := p.sc.version.Load()
	v := p.view.Load()
	if v != nil && v.version == version && v.downGen == p.downGen.Load() && (v.expires.IsZero() || p.now().Before(v.expires)) {
		return v.list
	}
	return p.rebuild()
}

func (p *Provider) rebuild() []*Instance {
	version := p.sc.version.Load()
	all := p.sc.Instances()
	now := p.now()
	p.mu.Lock()
	var expires time.Time
	for k, st := range p.down {
		until := st.last.Add(p.downFor)
		if !now.Before(until) {
			delete(p.down, k)
			continue
		}
		if st.errors >= p.downErrors && (expires.IsZero() || until.Before(expires)) {
			expires = until
		}
	}
	downs := map[string]bool{}
	for k, st := range p.down {
		if st.errors >= p.downErrors {
			downs[k] = true
		}
	}
	gen := p.downGen.Load()
	p.mu.Unlock()
	list := make([]*Instance, 0, len(all))
outer:
	for _, i := range all {
		if !i.IsEnabled() || downs[i.Name+"/"+i.ID] {
			continue
		}
		for _, f := range p.filters {
			if !f(i) {
				continue outer
			}
		}
		list = append(list, i)
	}
	p.view.Store(&providerView{version: version, downGen: gen, expires: expires, list: list})
	return list
}

// timeNow is the clock (time.Now).
var timeNow = time.Now
