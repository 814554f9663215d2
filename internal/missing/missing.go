// Package missing skips a test that needs something this machine lacks —
// an optional library, a Python module, /dev/fuse, the decoder that gives
// TensorFlow's pixels — in one wording, so that scripts/testsummary can
// count those skips apart from the deliberate ones (allocation counts under
// the race detector, a check that needs no GPU on a GPU machine).
//
// A machine set up by scripts/testdeps.sh has everything, and then no test
// skips through this package; one that is not (OXEFS_TEST_INSTALL=no) runs
// the rest of the suite and names each skipped test with what it needs.
package missing

import (
	"fmt"
	"regexp"
	"testing"
)

// Prefix starts every skip message of this package: "MISSING what: ...".
const Prefix = "MISSING "

// Thing is something a test needs and a machine may lack.
type Thing struct {
	// Name is how the summary counts it: "libturbojpeg", "libavcodec".
	Name string
	// Install says how to get it on Debian or Ubuntu.
	Install string
}

// What the tests need beyond Go. scripts/testdeps.sh installs each.
var (
	TurboJPEG = Thing{"libturbojpeg", "apt-get install libturbojpeg0"}
	AVCodec   = Thing{"libavcodec", "apt-get install libavcodec59 (Debian 12; libavcodec61 on Debian 13)"}
	// ExactJPEG is libjpeg-turbo as the decoder in use: only it gives the
	// pixels TensorFlow decodes, which the parity tests compare with.
	// Absent when the library is, and when the Go decoder is forced
	// (--decoder go, OXEFS_DECODER=go).
	ExactJPEG = Thing{"libjpeg-turbo decoding", "apt-get install libturbojpeg0, and leave OXEFS_DECODER unset or auto"}
	FUSE      = Thing{"/dev/fuse", "a kernel with FUSE (modprobe fuse) and /dev/fuse in this container"}
	// Chromium drives the web page's tests (oxefs view) headless.
	Chromium = Thing{"chromium", "apt-get install chromium"}
)

// Python is a python3 that imports the modules.
func Python(modules string) Thing {
	return Thing{"python " + modules, "./scripts/testdeps.sh (apt-get install python3-numpy python3-torch python3-torchvision python3-pytest)"}
}

// Skip skips t, which needs what, because of why (the error that showed
// it missing, or nil).
func Skip(t testing.TB, what Thing, why error) {
	t.Helper()
	detail := ""
	if why != nil {
		detail = " (" + why.Error() + ")"
	}
	t.Skipf("%s%s: %s needs it, and it is not to be had here%s; to have it: %s", Prefix, what.Name, t.Name(), detail, what.Install)
}

// Skipf is Skip with a reason in words.
func Skipf(t testing.TB, what Thing, format string, args ...any) {
	t.Helper()
	Skip(t, what, fmt.Errorf(format, args...))
}

var pattern = regexp.MustCompile(`(?:^|\s)` + Prefix + `([^:]+):`)

// Parse returns what a skip message says is missing, and whether it is one
// of this package's messages.
func Parse(msg string) (name string, ok bool) {
	m := pattern.FindStringSubmatch(msg)
	if m == nil {
		return "", false
	}
	return m[1], true
}
