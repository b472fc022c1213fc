// Package par runs a function over many items, a few at a time: the
// bounded fan-out that test workers and the benchmark use to build and
// tear down large trees.
package par

import "sync"

// Each runs fn on every item, n at a time, and returns the first error
// (every item is still tried).
func Each[T any](n int, items []T, fn func(T) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		ch    = make(chan T)
	)
	for range max(n, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				if err := fn(it); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
	return first
}
