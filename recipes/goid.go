package recipes

import (
	"runtime"
	"strconv"
)

// GoroutineID returns the id of the calling goroutine, read from the first
// line of runtime.Stack ("goroutine 123 [running]:"). Go hides goroutine ids
// on purpose; recipes use it only to count reentrant holds per goroutine, as
// Curator counts them per thread. It costs about a microsecond.
func GoroutineID() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	b := buf[:n]
	const prefix = "goroutine "
	if len(b) < len(prefix) {
		return 0
	}
	b = b[len(prefix):]
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	id, err := strconv.ParseUint(string(b[:i]), 10, 64)
	if err != nil {
		return 0
	}
	return id
}
