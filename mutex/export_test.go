package mutex

// SetGoroutineIDFunc replaces the goroutine id lookup that names the
// default owner, for a test; call the returned func to restore it.
func SetGoroutineIDFunc(f func() (uint64, error)) (restore func()) {
	old := goroutineID
	goroutineID = f
	return func() { goroutineID = old }
}

// LocalWaiters returns how many owners wait in m's in-memory queue
// (WithLocalHandoff), for a test to wait on.
func LocalWaiters(m *Mutex) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.local.queue)
}
