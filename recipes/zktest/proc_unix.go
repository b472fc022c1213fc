//go:build unix

package zktest

import (
	"errors"
	"os"
	"syscall"
)

// signalGroup sends sig to the process group led by p (every server is
// started as the leader of its own group), falling back to p alone.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	err := syscall.Kill(-p.Pid, sig)
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.ESRCH) {
		return p.Signal(sig)
	}
	return err
}

func termProc(p *os.Process) error { return signalGroup(p, syscall.SIGTERM) }
func killProc(p *os.Process) error { return signalGroup(p, syscall.SIGKILL) }
func stopProc(p *os.Process) error { return signalGroup(p, syscall.SIGSTOP) }
func contProc(p *os.Process) error { return signalGroup(p, syscall.SIGCONT) }

// processGone reports whether no process has the given pid.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
