package atomicval

import (
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/require"
)

// The default pauses between lost tries are short: a conflict means
// another writer succeeded, so the node is free again at once.
func TestContentionPolicyPausesAreShort(t *testing.T) {
	b := ContentionPolicy()
	var total time.Duration
	for i := 0; i < 1000; i++ {
		d := b.NextBackOff()
		require.Positive(t, d, "try %d", i)
		require.LessOrEqual(t, d, 6*time.Millisecond, "try %d", i) // 4 ms, randomised by half
		if i == 0 {
			require.LessOrEqual(t, d, time.Millisecond)
		}
		total += d
	}
	require.Less(t, total, 10*time.Second)
}

// A PromotedToLock without Retry makes one try under the lock, as
// Curator's default (RetryNTimes(0, 0)).
func TestPromotedDefaultIsOneTry(t *testing.T) {
	p := PromotedToLock{Path: "/l"}
	require.Equal(t, backoff.Stop, p.retry()().NextBackOff(), "no retry after the first try")
	p.Retry = ContentionPolicy
	require.NotEqual(t, backoff.Stop, p.retry()().NextBackOff())
}
