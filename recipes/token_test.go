package recipes_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/recipes"
)

func TestFenceTokenOrder(t *testing.T) {
	a := recipes.FenceToken{Czxid: 0x1a}
	b := recipes.FenceToken{Czxid: 0x1a, Local: 2}
	c := recipes.FenceToken{Czxid: 0x1b}
	for _, tc := range []struct {
		x, y recipes.FenceToken
		want int
	}{
		{a, a, 0}, {a, b, -1}, {b, a, 1}, {b, c, -1}, {c, b, 1}, {a, c, -1},
	} {
		assert.Equal(t, tc.want, tc.x.Compare(tc.y), "%v vs %v", tc.x, tc.y)
	}
	assert.Equal(t, "0x1a", a.String())
	assert.Equal(t, "0x1a.2", b.String())
	assert.True(t, recipes.FenceToken{}.IsZero())
	assert.False(t, a.IsZero())
}
