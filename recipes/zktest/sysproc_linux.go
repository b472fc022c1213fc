//go:build linux

package zktest

import "syscall"

// sysProcAttr puts each server in its own process group (so signals reach
// the JVM and nothing else, and a terminal's Ctrl-C does not race our
// cleanup) and has the kernel SIGKILL it when the test binary dies, even
// without running its cleanups (for example on a test timeout panic).
//
// Pdeathsig fires when the OS thread that started the child exits; the Go
// runtime only ends threads of goroutines that exit while locked to their
// thread with runtime.LockOSThread, which the callers of this package do not
// do from the goroutine that starts a cluster.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
