//go:build race

package example

const raceEnabled = true
