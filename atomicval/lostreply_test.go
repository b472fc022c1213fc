package atomicval_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/atomicval"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// setDataOf is the bytes of a ZooKeeper setData request for path with an
// 8-byte value (jute: the path, then the data's length and bytes), which
// a getData of path does not contain.
func setDataOf(path string, v int64) []byte {
	b := append([]byte(path), 0, 0, 0, 8)
	return binary.BigEndian.AppendUint64(b, uint64(v))
}

// An increment whose reply is lost while another client increments next
// cannot tell whether its write was applied: it must say so
// (ErrUnknownOutcome), never count itself twice (which the
// compare-and-set loop did: reading the other's later version, it took its
// own write as not applied and wrote again) nor claim a write it did not
// make.
func TestIncrementLostReply(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := servers(t)
	proxy := zktest.NewProxy(t, srv[0])
	path := base(t) + "/n"
	a, err := atomicval.NewInt64(connect(t, []string{proxy.Addr()}), path)
	require.NoError(t, err)
	b, err := atomicval.NewInt64(connect(t, srv), path)
	require.NoError(t, err)
	ok, err := a.Initialize(ctx, 0)
	require.NoError(t, err)
	require.True(t, ok)

	// a's write of 1 reaches the server; before a hears back, b
	// increments (to 2), and then a's connection is cut.
	var bErr error
	proxy.CutAfterClientSendsFunc(setDataOf(path, 1), func() {
		_, bErr = b.Increment(ctx)
	})
	res, err := a.Increment(ctx)
	require.NoError(t, bErr)
	got, gerr := b.Get(ctx)
	require.NoError(t, gerr)
	assert.Equal(t, int64(2), got, "a's write once and b's")
	assert.ErrorIs(t, err, recipes.ErrUnknownOutcome, "a cannot know whether its write was applied (result %+v)", res)
	assert.False(t, res.Succeeded)
	t.Logf("a: %v", err)
}
