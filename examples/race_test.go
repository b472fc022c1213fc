//go:build race

package examples

// raceEnabled builds the examples with the race detector when the test
// itself runs with it.
const raceEnabled = true
