//go:build !linux

package main

import "time"

// processCPU cannot read another process's CPU clock here: the peers'
// own figures are used.
func processCPU(int) (time.Duration, bool) { return 0, false }
