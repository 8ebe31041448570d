//go:build race

package commands

// raceEnabled says the tests run under the race detector, where every
// re-executed decode is several times slower.
const raceEnabled = true
