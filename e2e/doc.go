// Package e2e holds the end-to-end tests: they build the oxefs binary once
// and run it as a user would (mount, bench, warm, inspect, synth), reading
// the mounted batch files directly and through the Python package.
//
// The tests run from the module root (TestMain moves there), so fixtures
// and the Python package are named as in the README: testdata/..., python.
// Tests that mount skip, saying so, where /dev/fuse is absent.
//
// Tests of package main's own code (flag parsing and checks, progress, the
// golden batch digests built in-process) stay in the root package.
package e2e
