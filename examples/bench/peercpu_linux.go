//go:build linux

package main

import (
	"syscall"
	"time"
	"unsafe"
)

// processCPU returns the CPU time (user + system, all threads, nanosecond
// resolution) that process pid has used, read from its CPU-time clock
// (clock_gettime on the clock id glibc's clock_getcpuclockid makes:
// CPUCLOCK_SCHED of the process), and false when it cannot be read. The
// benchmark reads its peers' CPU this way: the JVM's own figure comes in
// 10 ms clock ticks.
func processCPU(pid int) (time.Duration, bool) {
	clock := (^int32(pid))<<3 | 2
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(clock), uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
