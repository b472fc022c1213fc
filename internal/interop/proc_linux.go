//go:build linux

package interop

import (
	"os/exec"
	"syscall"
)

// setProcAttrs puts the child in its own process group, so Kill can reach
// its descendants too, and asks the kernel to SIGKILL it when the Go
// process dies.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup sends SIGKILL to the child's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	// With Setpgid the group id is the child's pid.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
