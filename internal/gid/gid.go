// Package gid reads the calling goroutine's id, for the recipes whose
// owner is a goroutine (a mutex's re-entrancy) and for the listeners that
// recognise a call from their own goroutine.
package gid

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"sync"

	"github.com/petermattis/goid"
	"github.com/zkrecipes/zkrecipes/internal/zkerr"
)

// GoroutineID returns the id of the calling goroutine, or 0 when it cannot
// be read (see LookupGoroutineID). 0 is never a goroutine's id, so callers
// that only compare ids must treat 0 as "unknown", never as a match:
// anything that keys state on goroutine identity, such as reentrancy
// counts, must call LookupGoroutineID and handle its error instead, or two
// goroutines would silently become one.
func GoroutineID() uint64 {
	id, err := LookupGoroutineID()
	if err != nil {
		return 0
	}
	return id
}

// LookupGoroutineID returns the id of the calling goroutine, or an error
// wrapping ErrNoGoroutineID when it cannot be read. Go hides goroutine ids
// on purpose; recipes use them only to count reentrant holds per
// goroutine, as Curator counts them per thread.
//
// The fast path is github.com/petermattis/goid, which reads the id from
// the runtime's goroutine struct in a few nanoseconds, whatever the stack
// depth. That package copies the struct's layout for each Go release, so a
// release whose layout it does not know would make it read garbage: at
// first use, LookupGoroutineID checks it against the slow path on the
// calling goroutine and on a fresh one, and if they disagree it uses the
// slow path only, for the life of the process.
//
// The slow path parses the first line of runtime.Stack ("goroutine 123
// [running]:"). runtime.Stack walks the whole stack, so its cost grows with
// the depth. Measured with BenchmarkGoroutineID on a busy 2-core AMD EPYC
// (Go 1.26), with the stack 1, 20 and 60 frames deeper than the caller:
// the stack parse took 4–5.5µs, 12–15µs and 33–57µs; goid.Get 3ns at
// every depth; LookupGoroutineID, with its once-only check, 4–5ns.
func LookupGoroutineID() (uint64, error) {
	fastOnce.Do(func() { fastOK = fastAgrees(goid.Get, stackGoroutineID) })
	if fastOK {
		if id := goid.Get(); id > 0 {
			return uint64(id), nil
		}
	}
	return stackGoroutineID()
}

var (
	fastOnce sync.Once
	fastOK   bool // goid.Get agreed with the stack on two goroutines
)

// fastAgrees reports whether fast gives the same ids as slow on the
// calling goroutine and on a fresh goroutine, and those ids differ.
func fastAgrees(fast func() int64, slow func() (uint64, error)) bool {
	check := func() (uint64, bool) {
		s, err := slow()
		f := fast()
		return s, err == nil && f > 0 && uint64(f) == s
	}
	here, ok := check()
	if !ok {
		return false
	}
	type result struct {
		id uint64
		ok bool
	}
	ch := make(chan result)
	go func() {
		id, ok := check()
		ch <- result{id, ok}
	}()
	r := <-ch
	return r.ok && r.id != here
}

// stackGoroutineID reads the calling goroutine's id from the first line of
// its stack trace.
func stackGoroutineID() (uint64, error) {
	var buf [64]byte
	return parseGoroutineID(buf[:runtime.Stack(buf[:], false)])
}

// parseGoroutineID parses the id out of a stack trace's first line,
// "goroutine <id> [<state>]:" (or "goroutine <id> gp=... [<state>]:").
func parseGoroutineID(b []byte) (uint64, error) {
	const prefix = "goroutine "
	if !bytes.HasPrefix(b, []byte(prefix)) {
		return 0, fmt.Errorf("%w: unexpected stack header %q", zkerr.ErrNoGoroutineID, b)
	}
	rest := b[len(prefix):]
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || i == len(rest) || rest[i] != ' ' {
		return 0, fmt.Errorf("%w: unexpected stack header %q", zkerr.ErrNoGoroutineID, b)
	}
	id, err := strconv.ParseUint(string(rest[:i]), 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("%w: unexpected stack header %q", zkerr.ErrNoGoroutineID, b)
	}
	return id, nil
}
