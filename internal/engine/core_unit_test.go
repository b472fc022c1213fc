package engine

import (
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
	"github.com/zkrecipes/zkrecipes/internal/zkop"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Backoff gives the policy's waits, says when it gives up and then
// starts afresh; Pace waits a second instead of giving up; no policy is
// no retries.
func TestBackoff(t *testing.T) {
	twice := func() backoff.BackOff {
		return backoff.WithMaxRetries(backoff.NewConstantBackOff(time.Millisecond), 2)
	}
	b := newBackoff(twice)
	for range 2 {
		d, ok := b.next()
		assert.True(t, ok)
		assert.Equal(t, time.Millisecond, d)
	}
	_, ok := b.next()
	assert.False(t, ok, "the policy gave up")
	_, ok = b.next()
	assert.True(t, ok, "afresh after giving up")
	b.next()
	assert.Equal(t, time.Second, b.Pace(), "Pace: a second when the policy gives up")
	b.Reset()
	assert.Equal(t, time.Millisecond, b.Pace())
	none := newBackoff(func() backoff.BackOff { return nil })
	_, ok = none.next()
	assert.False(t, ok)
	nilPolicy := newBackoff(nil)
	_, ok = nilPolicy.next()
	assert.False(t, ok)
}

// A Backoff resets the policy's fresh BackOff before its first wait, as
// cenkalti's own Retry does: an ExponentialBackOff written as a struct
// literal takes its first interval from Reset, and without it every wait
// was 0 (issue 34: a policy rebuilt by hand that way gave up on 7% of the
// increments where Curator's gave up on none).
func TestBackoffResetsAFreshPolicy(t *testing.T) {
	literal := func() backoff.BackOff {
		return backoff.WithMaxRetries(&backoff.ExponentialBackOff{InitialInterval: 10 * time.Millisecond,
			Multiplier: 2, MaxInterval: time.Minute, Stop: backoff.Stop, Clock: backoff.SystemClock}, 3)
	}
	b := newBackoff(literal)
	for _, want := range []time.Duration{10, 20, 40} {
		d, ok := b.next()
		require.True(t, ok)
		assert.Equal(t, want*time.Millisecond, d)
	}
	_, ok := b.next()
	assert.False(t, ok, "3 retries")
	d, _ := b.next()
	assert.Equal(t, 10*time.Millisecond, d, "afresh, reset again")
}

// A nil client is said first, before a zero Op among the ops.
func TestMultiNilClientFirst(t *testing.T) {
	_, err := (*Client)(nil).Multi(t.Context(), zkop.Op{})
	assert.ErrorIs(t, err, zkerr.ErrNilClient)
}
