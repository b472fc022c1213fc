//go:build linux

package zktest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// runningThreads returns how many threads of process pid are not stopped
// (state other than T, t, Z or X in /proc/<pid>/task/*/stat).
func runningThreads(pid int) (int, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	running := 0
	for _, task := range tasks {
		stat, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
		if err != nil {
			continue // the thread exited
		}
		// "tid (comm) S ...": comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			return 0, fmt.Errorf("unexpected /proc stat line %q", stat)
		}
		switch stat[i+2] {
		case 'T', 't', 'Z', 'X':
		default:
			running++
		}
	}
	return running, nil
}

// waitStopped waits until every thread of process pid has stopped after a
// SIGSTOP. The signal stops a process asynchronously: the kernel wakes
// one thread to take it, and the others run on (answering clients) until
// that thread is scheduled, which on a loaded machine can take hundreds of
// milliseconds.
func waitStopped(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n, err := runningThreads(pid)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d threads still running %v after SIGSTOP", n, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}
