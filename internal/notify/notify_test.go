package notify

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Current posts a value only when it differs from the last; a listener
// added later hears the current value first.
func TestCurrentPostsChangesOnly(t *testing.T) {
	c := NewCurrent(func(a, b int) bool { return a == b })
	defer c.Close()
	ch, stop := c.Subscribe()
	defer stop()
	_, ok := c.Get()
	assert.False(t, ok)
	for _, v := range []int{1, 1, 2, 2, 2, 1} {
		c.Set(v)
	}
	var got []int
	for range 3 {
		select {
		case v := <-ch:
			got = append(got, v)
		case <-time.After(5 * time.Second):
			t.Fatal("no value")
		}
	}
	assert.Equal(t, []int{1, 2, 1}, got)
	late, stopLate := c.Subscribe()
	defer stopLate()
	require.Equal(t, 1, <-late, "the current value first")
	assert.False(t, c.Set(1))
	assert.True(t, c.Set(3))
	assert.Equal(t, 3, <-late)
}
