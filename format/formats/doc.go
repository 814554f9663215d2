// Package formats is the one place where oxefs's dataset formats register
// with package format, in probe order: LeRobot v3 first (a source with
// meta/info.json), then RLDS, the fallback that reads anything else and
// whose errors say what a TFDS directory lacks. It adapts each format's
// dataset to the capability interfaces of package format.
//
// The composition root imports it for its side effect. A new format is a
// package under format/, one file here that adapts its dataset and
// describes it as a format.Format, and one line in register.go, where the
// probe order is.
package formats
