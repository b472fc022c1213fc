//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// newGroup makes cmd the leader of a process group of its own, so that
// signals reach its children too.
func newGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to cmd's process group, or to cmd alone when the
// group is gone.
func signalGroup(cmd *exec.Cmd, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return cmd.Process.Signal(sig)
	}
	err := syscall.Kill(-cmd.Process.Pid, s)
	if errors.Is(err, syscall.ESRCH) {
		err = cmd.Process.Signal(sig)
		if errors.Is(err, os.ErrProcessDone) {
			return nil
		}
	}
	return err
}

// exitStatus is the status a shell gives for ps: the exit code, or
// 128+N when signal N killed the process.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ps.ExitCode()
}

func signalNumber(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return 2
}
