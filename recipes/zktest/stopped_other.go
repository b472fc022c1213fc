//go:build !linux

package zktest

import "time"

// runningThreads cannot tell without /proc: it reports none.
func runningThreads(int) (int, error) { return 0, nil }

// waitStopped cannot tell without /proc: Pause returns once the signal is
// sent.
func waitStopped(int, time.Duration) error { return nil }
