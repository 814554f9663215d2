package missing

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB whose Skipf keeps the message.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return "TestX" }
func (r *recorder) Skipf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}

func TestSkipMessageParses(t *testing.T) {
	for _, tc := range []struct {
		name string
		what Thing
		why  error
	}{
		{"library", TurboJPEG, errors.New("dlopen libturbojpeg.so.0: no such file")},
		{"decoder", ExactJPEG, errors.New("decoder in use: image/jpeg")},
		{"python", Python("numpy, torch"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Skip(r, tc.what, tc.why)
			// As go test prints it: indented, after the file and line.
			line := "    helpers_test.go:16: " + r.msg
			name, ok := Parse(line)
			if !ok || name != tc.what.Name {
				t.Fatalf("Parse(%q) = %q, %v; want %q", line, name, ok, tc.what.Name)
			}
			if !strings.Contains(r.msg, tc.what.Install) || !strings.Contains(r.msg, "TestX") {
				t.Errorf("message %q does not name the test and how to install", r.msg)
			}
			if tc.why != nil && !strings.Contains(r.msg, tc.why.Error()) {
				t.Errorf("message %q lacks the reason %q", r.msg, tc.why)
			}
		})
	}
}

func TestParseIgnoresOtherSkips(t *testing.T) {
	for _, msg := range []string{
		"allocation counts are not meaningful under the race detector",
		"SKIPPED: this machine has a CUDA GPU",
		"the word MISSING alone",
		"xMISSING libfoo: glued to a word",
	} {
		if name, ok := Parse(msg); ok {
			t.Errorf("Parse(%q) = %q, want no match", msg, name)
		}
	}
}
