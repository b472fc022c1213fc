package testutil

import (
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// StateLog records every transition a client publishes.
type StateLog struct {
	mu     sync.Mutex
	states []recipes.State
	cond   chan struct{}
}

// WatchStates starts recording c's transitions until the test ends.
func WatchStates(t testing.TB, c *recipes.Client) *StateLog {
	l := &StateLog{cond: make(chan struct{}, 1)}
	remove := c.Listen(func(s recipes.State) {
		l.mu.Lock()
		l.states = append(l.states, s)
		l.mu.Unlock()
		select {
		case l.cond <- struct{}{}:
		default:
		}
	})
	t.Cleanup(remove)
	return l
}

// Snapshot returns the transitions recorded so far.
func (l *StateLog) Snapshot() []recipes.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]recipes.State(nil), l.states...)
}

// WaitFor waits until the log ends with want (as a subsequence of the states
// seen after the call's start index) or the deadline passes.
func (l *StateLog) WaitFor(t testing.TB, from int, timeout time.Duration, want ...recipes.State) []recipes.State {
	t.Helper()
	deadline := time.After(timeout)
	for {
		got := l.Snapshot()
		if from <= len(got) && hasSubsequence(got[from:], want) {
			return got[from:]
		}
		select {
		case <-l.cond:
		case <-deadline:
			t.Fatalf("states %v: want %v within %v", got[min(from, len(got)):], want, timeout)
		}
	}
}

func hasSubsequence(got, want []recipes.State) bool {
	i := 0
	for _, s := range got {
		if i < len(want) && s == want[i] {
			i++
		}
	}
	return i == len(want)
}
