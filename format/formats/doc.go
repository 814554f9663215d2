// Package formats is the one place where oxefs's dataset formats register
// with package format, in probe order: LeRobot v3 first (a source with
// meta/info.json), then RLDS, the fallback that reads anything else and
// whose errors say what a TFDS directory lacks. It adapts each format's
// dataset to the capability interfaces of package format.
//
// The composition root imports it for its side effect. A new format is a
// package under format/ and one file here that registers it.
package formats

import "github.com/oxefs/oxefs/format"

func init() {
	format.Register(lerobotFormat)
	format.Register(rldsFormat)
}
