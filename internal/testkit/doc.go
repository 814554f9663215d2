// Package testkit holds the test helpers that several packages share. It is
// imported by _test.go files only, never by the code they test, and imports
// nothing of oxefs.
package testkit
