package par

import (
	"errors"
	"sync/atomic"
	"testing"
)

func TestEachRunsEveryItemAndReturnsAnError(t *testing.T) {
	var ran, inFlight, most atomic.Int64
	bad := errors.New("bad")
	err := Each(3, []int{1, 2, 3, 4, 5, 6, 7}, func(i int) error {
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		defer inFlight.Add(-1)
		ran.Add(1)
		if i == 4 {
			return bad
		}
		return nil
	})
	if !errors.Is(err, bad) {
		t.Fatalf("err = %v, want bad", err)
	}
	if ran.Load() != 7 {
		t.Fatalf("ran %d items, want 7", ran.Load())
	}
	if most.Load() > 3 {
		t.Fatalf("%d at once, want at most 3", most.Load())
	}
	if err := Each(2, []string(nil), func(string) error { return bad }); err != nil {
		t.Fatalf("no items: err = %v", err)
	}
}
