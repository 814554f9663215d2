//go:build race

package diskcache

const raceEnabled = true
