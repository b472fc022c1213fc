package gid

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/petermattis/goid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

func TestParseGoroutineID(t *testing.T) {
	for in, want := range map[string]uint64{
		"goroutine 1 [running]:\nmain.main()":                     1,
		"goroutine 18446744073709551615 [running]:":               1<<64 - 1,
		"goroutine 42 gp=0xc000002380 m=0 mp=0x7d8f20 [running]:": 42,
	} {
		got, err := parseGoroutineID([]byte(in))
		require.NoError(t, err, "%q", in)
		assert.Equal(t, want, got, "%q", in)
	}
	for _, in := range []string{
		"", "goroutine", "goroutine ", "goroutine x [running]:", "goroutine 12",
		"goroutine 0 [running]:", "goroutine 18446744073709551616 [running]:",
		"thread 7 [running]:", "goroutine -3 [running]:", "goroutine 7[running]:",
	} {
		_, err := parseGoroutineID([]byte(in))
		assert.ErrorIs(t, err, zkerr.ErrNoGoroutineID, "%q", in)
	}
}

// TestStackGoroutineID checks the fallback against runtime.Stack's own
// header and across goroutines.
func TestStackGoroutineID(t *testing.T) {
	a, err := stackGoroutineID()
	require.NoError(t, err)
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	assert.Contains(t, string(buf), fmt.Sprintf("goroutine %d ", a))
	again, err := stackGoroutineID()
	require.NoError(t, err)
	assert.Equal(t, a, again)
	ch := make(chan uint64)
	go func() {
		id, _ := stackGoroutineID()
		ch <- id
	}()
	b := <-ch
	assert.NotZero(t, b)
	assert.NotEqual(t, a, b)
}

// TestFastGoroutineIDAgreesWithStack checks the fast path against the
// stack in many goroutines at once, and that LookupGoroutineID uses it on
// this Go release.
func TestFastGoroutineIDAgreesWithStack(t *testing.T) {
	require.True(t, fastAgrees(goid.Get, stackGoroutineID),
		"goid.Get disagrees with runtime.Stack on %s: only the slow path is in use", runtime.Version())
	_, err := LookupGoroutineID()
	require.NoError(t, err)
	assert.True(t, fastOK, "the fast path is in use")

	const n = 500
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[uint64]bool{}
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start // all alive at once: ids are distinct
			slow, err := stackGoroutineID()
			fast := goid.Get()
			got, lerr := LookupGoroutineID()
			mu.Lock()
			defer mu.Unlock()
			assert.NoError(t, err)
			assert.NoError(t, lerr)
			assert.Equal(t, int64(slow), fast)
			assert.Equal(t, slow, got)
			assert.False(t, seen[got], "id %d seen twice", got)
			seen[got] = true
		}()
	}
	close(start)
	wg.Wait()
	assert.Len(t, seen, n)
}

// TestFastAgreesRejectsDrift checks the layout guard: a fast path that
// reads the wrong field is not used.
func TestFastAgreesRejectsDrift(t *testing.T) {
	assert.False(t, fastAgrees(func() int64 { return 7 }, stackGoroutineID), "constant")
	assert.False(t, fastAgrees(func() int64 { return goid.Get() + 1 }, stackGoroutineID), "off by one")
	assert.False(t, fastAgrees(func() int64 { return 0 }, func() (uint64, error) { return 0, nil }), "zero")
	broken := func() (uint64, error) { return 0, fmt.Errorf("%w: test", zkerr.ErrNoGoroutineID) }
	assert.False(t, fastAgrees(goid.Get, broken), "nothing to check against")
	same := func() (uint64, error) { return 5, nil }
	assert.False(t, fastAgrees(func() int64 { return 5 }, same), "one id for two goroutines")
	assert.True(t, fastAgrees(goid.Get, stackGoroutineID))
	assert.True(t, errors.Is(func() error { _, err := broken(); return err }(), zkerr.ErrNoGoroutineID))
}

//go:noinline
func atDepth(n int, f func()) {
	if n <= 1 {
		f()
		return
	}
	atDepth(n-1, f)
}

var goidSink uint64

// BenchmarkGoroutineID measures both ways of reading the goroutine id,
// and LookupGoroutineID, with the stack 1, 20 and 60 frames deeper than
// the benchmark function: the stack parse walks the whole stack.
func BenchmarkGoroutineID(b *testing.B) {
	ways := []struct {
		name string
		get  func() uint64
	}{
		{"stack", func() uint64 { id, _ := stackGoroutineID(); return id }},
		{"goid", func() uint64 { return uint64(goid.Get()) }},
		{"Lookup", func() uint64 { id, _ := LookupGoroutineID(); return id }},
	}
	for _, w := range ways {
		for _, d := range []int{1, 20, 60} {
			b.Run(fmt.Sprintf("%s/depth=%d", w.name, d), func(b *testing.B) {
				atDepth(d, func() {
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						goidSink += w.get()
					}
				})
			})
		}
	}
}
