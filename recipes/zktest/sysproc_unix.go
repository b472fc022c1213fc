//go:build unix && !linux

package zktest

import "syscall"

// sysProcAttr puts each server in its own process group so that signals
// reach the JVM and nothing else.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
