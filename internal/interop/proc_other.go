//go:build !linux

package interop

import "os/exec"

// setProcAttrs does nothing off Linux: there is no parent-death signal.
func setProcAttrs(*exec.Cmd) {}

// killGroup kills the child process.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
