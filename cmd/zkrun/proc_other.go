//go:build !unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// newGroup does nothing where there are no process groups.
func newGroup(*exec.Cmd) {}

// signalGroup signals cmd alone; where the signal cannot be sent (Windows
// only delivers a kill), the process is killed.
func signalGroup(cmd *exec.Cmd, sig os.Signal) error {
	if err := cmd.Process.Signal(sig); err != nil {
		return cmd.Process.Kill()
	}
	return nil
}

func exitStatus(ps *os.ProcessState) int { return ps.ExitCode() }

func signalNumber(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return 2
}
