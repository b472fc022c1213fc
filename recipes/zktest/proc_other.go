//go:build !unix

package zktest

import (
	"errors"
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

func termProc(p *os.Process) error { return p.Kill() } // no SIGTERM here
func killProc(p *os.Process) error { return p.Kill() }

// Pausing a process needs SIGSTOP, which this platform lacks.
func stopProc(*os.Process) error { return errors.ErrUnsupported }
func contProc(*os.Process) error { return errors.ErrUnsupported }

// processGone cannot tell on this platform; stale directories are kept.
func processGone(int) bool { return false }
