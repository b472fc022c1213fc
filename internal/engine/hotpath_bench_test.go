package engine

import (
	"fmt"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/contend"
	"github.com/zkrecipes/zkrecipes/internal/zkpath"
)

// Benchmarks of the CPU-side hot paths of the contender engine, with
// allocations: go test -run XXX -bench . -benchmem ./internal/engine/

// names returns n contender names as Curator and this package make them.
func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("_c_%s-lock-%010d", zkpath.NewUUID(), (i*7919)%n) // shuffled sequences
	}
	return out
}

func BenchmarkSortKey(b *testing.B) {
	for _, name := range []string{
		"_c_0b6f6f5e-3b1f-4f3b-9a4e-1f2e3d4c5b6a-lock-0000000042",    // Curator / zkrecipes
		"0b6f6f5e3b1f4f3b9a4e1f2e3d4c5b6a__lock__0000000042",         // Kazoo
		"_c_0b6f6f5e-3b1f-4f3b-9a4e-1f2e3d4c5b6a-__READ__0000000042", // rwlock
		"foreign-node-name-without-a-lock-name",                      // foreign
	} {
		b.Run(name[len(name)-16:], func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_ = contend.SortKey(name, "lock-", "__lock__", "__READ__")
			}
		})
	}
}

func BenchmarkSortContenders(b *testing.B) {
	d := &contend.Driver{Names: []string{"lock-"}}
	for _, n := range []int{1, 10, 100, 1000} {
		kids := names(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_ = contend.SortContenders(kids, d)
			}
		})
	}
}

// BenchmarkPredecessor is the waiter's decision: the driver's Decide over
// the contenders ahead.
func BenchmarkPredecessor(b *testing.B) {
	d := &contend.Driver{Names: []string{"lock-"}}
	for _, n := range []int{10, 1000} {
		sorted := contend.SortContenders(names(n), d)
		below := sorted[:n-1]
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				v := d.Decide(below)
				_ = below[v.Watch]
			}
		})
	}
}

func BenchmarkProtectedUUID(b *testing.B) {
	name := "_c_0b6f6f5e-3b1f-4f3b-9a4e-1f2e3d4c5b6a-lock-0000000042"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_, _ = protectedUUID(name)
	}
}

func BenchmarkNewUUID(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = zkpath.NewUUID()
	}
}

// BenchmarkKnowledgePrune drops known-gone contenders from a waiter's
// snapshot of 100 (half of them gone).
func BenchmarkKnowledgePrune(b *testing.B) {
	var k knowledge
	k.init()
	p := k.enter("/bench/prune", 1)
	defer k.leave(p)
	d := &contend.Driver{Names: []string{"lock-"}}
	sorted := contend.SortContenders(names(100), d)
	for i, c := range sorted {
		if i%2 == 0 {
			p.gone(c)
		}
	}
	buf := make([]contend.Contender, len(sorted))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(buf, sorted)
		_ = p.prune(buf)
	}
}
