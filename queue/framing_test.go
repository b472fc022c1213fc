package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Curator's ItemSerializer, byte for byte: the bytes Curator 5.4 writes
// for put("hi") and for putMulti of "a" and "" (read from a node Curator
// made, see interop_test.go).
func TestFramingGolden(t *testing.T) {
	one := []byte{0x00, 0x01, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x02, 'h', 'i', 0x02}
	assert.Equal(t, one, Encode([][]byte{[]byte("hi")}))
	two := []byte{0x00, 0x01, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x01, 'a', 0x01, 0x00, 0x00, 0x00, 0x00, 0x02}
	assert.Equal(t, two, Encode([][]byte{[]byte("a"), {}}))
	items, err := Decode(two)
	require.NoError(t, err)
	assert.Equal(t, [][]byte{[]byte("a"), {}}, items)
	items, err = Decode(append(one, 0xff))
	require.NoError(t, err, "bytes after the end are ignored")
	assert.Equal(t, [][]byte{[]byte("hi")}, items)

	for name, bad := range map[string][]byte{
		"empty":       nil,
		"version":     {0, 1, 0, 2, 2},
		"no end":      {0, 1, 0, 1},
		"opcode":      {0, 1, 0, 1, 3},
		"long length": {0, 1, 0, 1, 1, 0, 0, 0, 9, 'x', 2},
		"neg length":  {0, 1, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 2},
		"cut length":  {0, 1, 0, 1, 1, 0, 0},
	} {
		_, err := Decode(bad)
		assert.ErrorIs(t, err, recipes.ErrCorrupt, name)
	}
}

// Curator's item names.
func TestNames(t *testing.T) {
	assert.Equal(t, "queue-|a_b_c|", idName("a/b|c"))
	id, cleaned, ok := parseID("queue-|a_b|0000000007")
	assert.True(t, ok)
	assert.Equal(t, "a_b", id)
	assert.Equal(t, "queue-0000000007", cleaned)

	assert.Equal(t, "queue-100000000", priorityName(0))
	assert.Equal(t, "queue-10000000A", priorityName(10))
	assert.Equal(t, "queue-0FFFFFFFF", priorityName(-1))
	assert.Equal(t, "queue-080000000", priorityName(-1<<31))
	assert.Equal(t, []string{"queue-080000000x", "queue-0FFFFFFFFx", "queue-100000000x", "queue-17FFFFFFFx"},
		sortItems([]string{"queue-17FFFFFFFx", "queue-100000000x", "queue-0FFFFFFFFx", "queue-080000000x"}, ItemPrefix, kindPriority))

	at := time.UnixMilli(1700000000000)
	assert.Equal(t, "queue-|18BCFE56800|", delayName(at))
	assert.Equal(t, "queue-|00000010|", delayName(time.UnixMilli(16)))
	assert.Equal(t, int64(1700000000000), dueOf("queue-|18BCFE56800|0000000003"))
	assert.Equal(t, int64(0), dueOf("queue-0000000003"))
	assert.Equal(t, []string{"queue-|00000001|0000000009", "queue-|00000002|0000000001", "queue-|00000002|0000000002"},
		sortItems([]string{"queue-|00000002|0000000002", "queue-|00000002|0000000001", "queue-|00000001|0000000009", "other"}, ItemPrefix, kindDelay))

	// Requeue names never grow, and keep the id, priority and due time.
	assert.Equal(t, "queue-", requeueName("queue-0000000003"))
	assert.Equal(t, "queue-|x|", requeueName("queue-|x|0000000003"))
	assert.Equal(t, "queue-10000000A", requeueName("queue-10000000A0000000003"))
	assert.Equal(t, "queue-", requeueName("queue-"))
	assert.Equal(t, []string{"queue-|b|0000000001", "queue-|a|0000000002"},
		sortItems([]string{"queue-|a|0000000002", "queue-|b|0000000001"}, ItemPrefix, kindID))
}
