//go:build !race

package examples

const raceEnabled = false
