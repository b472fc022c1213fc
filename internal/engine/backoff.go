package engine

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Backoff is the one place a retry policy is driven: the waits between
// a loop's attempts, from a fresh backoff of the policy on first use and
// after each Reset. The engine's own calls, which give up when the
// policy does, use next; a background loop that never gives up (a
// recipe's) uses Pace. Make it with Client.Backoff (the client's policy)
// or newBackoff.
type Backoff struct {
	policy func() backoff.BackOff
	b      backoff.BackOff
}

// newBackoff returns a Backoff of policy (nil, or a policy that returns
// nil: no retries).
func newBackoff(policy func() backoff.BackOff) Backoff { return Backoff{policy: policy} }

// Backoff returns a Backoff of the client's retry policy.
func (c *Client) Backoff() Backoff {
	if c == nil {
		return newBackoff(nil)
	}
	return newBackoff(c.cfg.Retry)
}

// next returns the wait before the next attempt, and false when the
// policy gives up (the next call then starts it afresh). A fresh BackOff
// of the policy is Reset before its first wait, as cenkalti's own Retry
// does: an ExponentialBackOff written as a struct literal takes its first
// interval (and its start time) from Reset; without it every wait was 0.
func (b *Backoff) next() (time.Duration, bool) {
	if b.b == nil {
		if b.policy != nil {
			b.b = b.policy()
		}
		if b.b == nil {
			b.b = &backoff.StopBackOff{}
		}
		b.b.Reset()
	}
	d := b.b.NextBackOff()
	if d == backoff.Stop {
		b.b = nil
		return 0, false
	}
	return d, true
}

// Pace returns the wait before a background loop's next attempt: next's,
// or a second when the policy gives up (it then starts afresh), so a loop
// that never gives up never spins either.
func (b *Backoff) Pace() time.Duration {
	if d, ok := b.next(); ok {
		return d
	}
	return time.Second
}

// Reset starts the policy afresh at the next attempt (after a success).
func (b *Backoff) Reset() { b.b = nil }

// foreverPolicy is the default policy without an end (background work
// that goes on until its session ends).
func foreverPolicy() backoff.BackOff { return DefaultRetryPolicy(0) }
