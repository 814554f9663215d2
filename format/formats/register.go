package formats

import "github.com/oxefs/oxefs/format"

// The formats in probe order: a format's probe runs only when those
// before it did not claim the source, and the fallback, which claims
// every source, comes last.
func init() {
	format.Register(lerobotFormat)
	format.Register(rldsFormat)
}
