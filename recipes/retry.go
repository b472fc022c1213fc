package recipes

import (
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Curator's retry policies, for WithRetryPolicy and every option that
// takes a policy (a func returning a fresh backoff.BackOff per
// operation), so that a policy written for Curator means the same here.

// ExponentialBackoffRetry is Curator's ExponentialBackoffRetry: up to
// maxRetries retries (at most 29), the nth after baseSleep times a random
// number from 1 to 2^(n+1)-1 (at least 1), each sleep capped at maxSleep
// (0: no cap, Curator's default).
func ExponentialBackoffRetry(baseSleep time.Duration, maxRetries int, maxSleep time.Duration) func() backoff.BackOff {
	maxRetries = min(max(maxRetries, 0), 29)
	return func() backoff.BackOff {
		return &curatorRetry{max: maxRetries, sleep: func(n int) time.Duration {
			d := baseSleep * time.Duration(max(1, rand.IntN(1<<(n+1))))
			if maxSleep > 0 && d > maxSleep {
				d = maxSleep
			}
			return d
		}}
	}
}

// RetryNTimes is Curator's RetryNTimes: n retries, sleep apart.
func RetryNTimes(n int, sleep time.Duration) func() backoff.BackOff {
	n = max(n, 0)
	return func() backoff.BackOff {
		return &curatorRetry{max: n, sleep: func(int) time.Duration { return sleep }}
	}
}

// RetryOneTime is Curator's RetryOneTime: one retry, after sleep.
func RetryOneTime(sleep time.Duration) func() backoff.BackOff { return RetryNTimes(1, sleep) }

// RetryForever is Curator's RetryForever: retries without end, interval
// apart.
func RetryForever(interval time.Duration) func() backoff.BackOff {
	return func() backoff.BackOff { return backoff.NewConstantBackOff(interval) }
}

// RetryUntilElapsed is Curator's RetryUntilElapsed: retries sleep apart
// while less than maxElapsed has passed since the first try.
func RetryUntilElapsed(maxElapsed, sleep time.Duration) func() backoff.BackOff {
	return func() backoff.BackOff {
		return &curatorRetry{max: -1, until: time.Now().Add(maxElapsed), sleep: func(int) time.Duration { return sleep }}
	}
}

// curatorRetry counts retries as Curator's RetryLoop does.
type curatorRetry struct {
	n     int // retries given so far
	max   int // -1: no count limit
	until time.Time
	sleep func(n int) time.Duration
}

func (r *curatorRetry) NextBackOff() time.Duration {
	if (r.max >= 0 && r.n >= r.max) || (!r.until.IsZero() && !time.Now().Before(r.until)) {
		return backoff.Stop
	}
	d := r.sleep(r.n)
	r.n++
	return d
}

func (r *curatorRetry) Reset() { r.n = 0 }
