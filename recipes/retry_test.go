package recipes_test

import (
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/assert"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// Curator's policies: how many retries each gives, and how long apart.
func TestCuratorRetryPolicies(t *testing.T) {
	waits := func(p func() backoff.BackOff, most int) []time.Duration {
		b := p()
		var out []time.Duration
		for range most {
			d := b.NextBackOff()
			if d == backoff.Stop {
				break
			}
			out = append(out, d)
		}
		return out
	}
	assert.Equal(t, []time.Duration{5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond}, waits(recipes.RetryNTimes(3, 5*time.Millisecond), 10))
	assert.Equal(t, []time.Duration{time.Second}, waits(recipes.RetryOneTime(time.Second), 10))
	assert.Empty(t, waits(recipes.RetryNTimes(0, time.Second), 10), "no retries: one try")
	assert.Len(t, waits(recipes.RetryForever(time.Millisecond), 100), 100)

	exp := waits(recipes.ExponentialBackoffRetry(10*time.Millisecond, 10, 0), 100)
	assert.Len(t, exp, 10)
	for n, d := range exp {
		assert.GreaterOrEqual(t, d, 10*time.Millisecond)
		assert.Less(t, d, 10*time.Millisecond*time.Duration(1<<(n+1)), "retry %d", n)
	}
	for _, d := range waits(recipes.ExponentialBackoffRetry(10*time.Millisecond, 29, 50*time.Millisecond), 100) {
		assert.LessOrEqual(t, d, 50*time.Millisecond, "capped")
	}
	assert.Len(t, waits(recipes.ExponentialBackoffRetry(time.Millisecond, 100, 0), 100), 29, "at most 29, as Curator")

	elapsed := recipes.RetryUntilElapsed(0, time.Millisecond)()
	assert.Equal(t, backoff.Stop, elapsed.NextBackOff(), "nothing left of the time")
	long := recipes.RetryUntilElapsed(time.Hour, time.Millisecond)()
	assert.Equal(t, time.Millisecond, long.NextBackOff())
}
