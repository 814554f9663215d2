//go:build race

package augment

const raceEnabled = true
