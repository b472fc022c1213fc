package codec

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// A conflict's message shows a text value as text, other bytes in hex.
func TestShowBytes(t *testing.T) {
	for in, want := range map[string]string{
		"60s":                        `"60s"`,
		"":                           `""`,
		"\x00\x01":                   "2 bytes 0001",
		"a text longer than sixteen": `"a text longer th"...`,
		"\xff\xfe":                   "2 bytes fffe",
	} {
		assert.Equal(t, want, Bytes{}.Show([]byte(in)), "%q", in)
	}
}

// Curator's integers: the lengths each reads, empty as zero or corrupt,
// and an int that does not fit in 32 bits refused.
func TestIntegers(t *testing.T) {
	count := Int{Int32{What: "a shared count"}}
	b, err := count.Encode(-2)
	assert.NoError(t, err)
	assert.Equal(t, []byte{0xff, 0xff, 0xff, 0xfe}, b)
	v, err := count.Decode(b)
	assert.NoError(t, err)
	assert.Equal(t, -2, v)
	_, err = count.Decode(nil)
	assert.ErrorIs(t, err, recipes.ErrCorrupt, "a count is 4 bytes, exactly")
	_, err = count.Encode(1 << 40)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)

	long := Int64{What: "an atomic long", EmptyIsZero: true}
	l, err := long.Decode(nil)
	assert.NoError(t, err)
	assert.Zero(t, l)
	_, err = long.Decode([]byte{1, 2, 3})
	assert.ErrorIs(t, err, recipes.ErrCorrupt)
	assert.ErrorContains(t, err, "an atomic long is 8 bytes (or empty), the node holds 3 ([01 02 03])")
}
