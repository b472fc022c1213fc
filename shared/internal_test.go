package shared

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// A count's node of another length than 4 bytes is corrupt (as atomicval
// reads it), not an invalid argument: the caller passed nothing wrong.
func TestDecodeCountWrongLengthIsCorrupt(t *testing.T) {
	for _, data := range [][]byte{nil, {}, {1, 2, 3}, {0, 0, 0, 0, 7}, make([]byte, 8)} {
		_, err := decodeCount(data)
		assert.ErrorIs(t, err, recipes.ErrCorrupt, "% x", data)
		assert.NotErrorIs(t, err, recipes.ErrInvalidArgument, "% x", data)
	}
	v, err := decodeCount([]byte{0xff, 0xff, 0xff, 0xfe})
	assert.NoError(t, err)
	assert.Equal(t, -2, v)
}

// CURATOR-688: a shared count whose node version overflowed int32 stopped
// updating. Versions wrap from MaxInt32 to MinInt32; the cache still takes
// the value written after the wrap, and still refuses an older one.
func TestSharedCountVersionWraps(t *testing.T) {
	s := &Count{}
	s.v.codec, s.v.changed = countFormat, make(chan struct{})
	const czxid = 7
	s.v.apply(VersionedValue[int]{Value: 1, Version: math.MaxInt32 - 1}, czxid)
	s.v.apply(VersionedValue[int]{Value: 2, Version: math.MaxInt32}, czxid)
	assert.Equal(t, VersionedValue[int]{Value: 2, Version: math.MaxInt32}, s.v.getVersioned())
	s.v.apply(VersionedValue[int]{Value: 3, Version: math.MinInt32}, czxid)
	assert.Equal(t, VersionedValue[int]{Value: 3, Version: math.MinInt32}, s.v.getVersioned(), "after the wrap")
	s.v.apply(VersionedValue[int]{Value: 4, Version: math.MinInt32 + 1}, czxid)
	assert.Equal(t, 4, s.v.getVersioned().Value)
	s.v.apply(VersionedValue[int]{Value: 9, Version: math.MaxInt32}, czxid)
	assert.Equal(t, 4, s.v.getVersioned().Value, "a read from before the wrap is older")
	s.v.apply(VersionedValue[int]{Value: 5, Version: 0}, czxid+1)
	assert.Equal(t, 5, s.v.getVersioned().Value, "a node created again starts afresh")
	s.v.apply(VersionedValue[int]{Value: 6, Version: 3}, czxid)
	assert.Equal(t, 5, s.v.getVersioned().Value, "the older node's reads are stale")

	assert.True(t, versionAfter(1, 0))
	assert.False(t, versionAfter(0, 0))
	assert.False(t, versionAfter(0, 1))
	assert.True(t, versionAfter(math.MinInt32, math.MaxInt32))
}

// The node our Start created (czxid unknown, version 0, the seed): the
// first read of it is the same write, unless the node was made again.
func TestFirstReadOfTheNodeStartCreated(t *testing.T) {
	s := &Count{}
	s.v.codec, s.v.changed = countFormat, make(chan struct{})
	s.v.apply(VersionedValue[int]{Value: 1, Version: 0}, 0)
	posted := s.v.changed
	s.v.apply(VersionedValue[int]{Value: 1, Version: 0}, 40)
	assert.Equal(t, VersionedValue[int]{Value: 1, Version: 0}, s.v.getVersioned())
	assert.Equal(t, int64(40), s.v.czxid, "the czxid learned")
	assert.Equal(t, posted, s.v.changed, "no change")
	s.v.apply(VersionedValue[int]{Value: 2, Version: 0}, 41)
	assert.Equal(t, 2, s.v.getVersioned().Value, "a node made again")

	u := &Count{}
	u.v.codec, u.v.changed = countFormat, make(chan struct{})
	u.v.apply(VersionedValue[int]{Value: 1, Version: 0}, 0)
	u.v.apply(VersionedValue[int]{Value: 8, Version: 0}, 40)
	assert.Equal(t, 8, u.v.getVersioned().Value, "made again before the first read: another value at version 0")
}
