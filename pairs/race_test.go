//go:build race

package pairs

const raceEnabled = true
