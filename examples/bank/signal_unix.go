//go:build unix

package main

import (
	"os"
	"syscall"
)

// freeze stops p (SIGSTOP) as a long GC pause or a frozen VM would: it
// runs no code, sends no heartbeat, and cannot notice anything.
func freeze(p *os.Process) error { return p.Signal(syscall.SIGSTOP) }

// thaw lets a frozen p run again (SIGCONT).
func thaw(p *os.Process) error { return p.Signal(syscall.SIGCONT) }
