package mutex

// SetGoroutineIDFunc replaces the goroutine id lookup that names the
// default owner, for a test; call the returned func to restore it.
func SetGoroutineIDFunc(f func() (uint64, error)) (restore func()) {
	old := goroutineID
	goroutineID = f
	return func() { goroutineID = old }
}
