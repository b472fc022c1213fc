package discovery

import (
	"fmt"
	"testing"
)

// providerOver returns a provider over n instances, without a server: its
// cache's snapshot set by hand.
func providerOver(n int, opts ...ProviderOption) *Provider {
	sc := &ServiceCache{byNode: map[string]*Instance{}, ready: make(chan struct{})}
	list := make([]*Instance, n)
	for i := range list {
		list[i] = &Instance{Name: "s", ID: fmt.Sprintf("i-%04d", i), Port: 1}
	}
	sc.snap.Store(&list)
	sc.version.Add(1)
	p := &Provider{sc: sc, strategy: RoundRobin(), downErrors: 2, downFor: 30e9, down: map[string]*downStatus{}, now: timeNow}
	for _, o := range opts {
		_ = o(p)
	}
	return p
}

// BenchmarkProviderInstance: Provider.Instance's cost is the strategy's
// pick, flat in the number of instances (Curator's getInstance copies and
// filters the whole list on every call).
func BenchmarkProviderInstance(b *testing.B) {
	for _, n := range []int{1, 50, 1000} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			p := providerOver(n, WithFilter(func(i *Instance) bool { return i.Port != 0 }))
			b.ReportAllocs()
			for b.Loop() {
				if p.Instance() == nil {
					b.Fatal("none")
				}
			}
		})
	}
}

// The filtered list is made once per change, and Instance allocates
// nothing.
func TestProviderFlat(t *testing.T) {
	p := providerOver(3)
	first := p.Instances()
	p.Instance()
	if &p.Instances()[0] != &first[0] {
		t.Fatal("the filtered list was made again without a change")
	}
	p.NoteError(first[0])
	p.NoteError(first[0])
	if len(p.Instances()) != 2 {
		t.Fatalf("down instance still listed: %d", len(p.Instances()))
	}
	if allocs := testing.AllocsPerRun(100, func() { p.Instance() }); allocs != 0 {
		t.Fatalf("Instance allocates %v times", allocs)
	}
}
