package semaphore

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// CURATOR-688: a shared count whose node version overflowed int32 stopped
// updating. Versions wrap from MaxInt32 to MinInt32; the cache still takes
// the value written after the wrap, and still refuses an older one.
func TestSharedCountVersionWraps(t *testing.T) {
	s := &SharedCount{changed: make(chan struct{})}
	const czxid = 7
	s.apply(VersionedValue{Value: 1, Version: math.MaxInt32 - 1}, czxid)
	s.apply(VersionedValue{Value: 2, Version: math.MaxInt32}, czxid)
	assert.Equal(t, VersionedValue{Value: 2, Version: math.MaxInt32}, s.GetVersioned())
	s.apply(VersionedValue{Value: 3, Version: math.MinInt32}, czxid)
	assert.Equal(t, VersionedValue{Value: 3, Version: math.MinInt32}, s.GetVersioned(), "after the wrap")
	s.apply(VersionedValue{Value: 4, Version: math.MinInt32 + 1}, czxid)
	assert.Equal(t, 4, s.Get())
	s.apply(VersionedValue{Value: 9, Version: math.MaxInt32}, czxid)
	assert.Equal(t, 4, s.Get(), "a read from before the wrap is older")
	s.apply(VersionedValue{Value: 5, Version: 0}, czxid+1)
	assert.Equal(t, 5, s.Get(), "a node created again starts afresh")

	assert.True(t, versionAfter(1, 0))
	assert.False(t, versionAfter(0, 0))
	assert.False(t, versionAfter(0, 1))
	assert.True(t, versionAfter(math.MinInt32, math.MaxInt32))
}
