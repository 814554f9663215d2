package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goTestJSON runs `go test -json ./...` on a throwaway module made of
// files (name → content) and returns its stdout.
func goTestJSON(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/m\n\ngo 1.21\n"
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-count=1", "-json", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run() // fails when a test fails; the events say why
	if stdout.Len() == 0 {
		t.Fatalf("go test -json wrote nothing; stderr:\n%s", stderr.String())
	}
	return stdout.String()
}

func TestSummaryShowsSkipsAndFailures(t *testing.T) {
	in := goTestJSON(t, map[string]string{
		"a/a_test.go": `package a

import "testing"

func TestPasses(t *testing.T) {}

func TestSkips(t *testing.T) { t.Skip("SKIPPED: needs /dev/widget") }

func TestFails(t *testing.T) {
	t.Log("context line one")
	t.Fatal("the answer was 41")
}

func TestSubtests(t *testing.T) {
	t.Run("ok", func(t *testing.T) {})
	t.Run("skip", func(t *testing.T) { t.Skipf("no %s here", "gpu") })
}
`,
		"b/b_test.go": `package b

import "testing"

func TestFine(t *testing.T) {}
`,
		"c/c.go": "package c\n",
		"d/d_test.go": `package d

import "testing"

func TestCrash(t *testing.T) {
	println("about to crash")
	panic("boom")
}
`,
	})
	var out bytes.Buffer
	if summarize(strings.NewReader(in), &out, false) {
		t.Errorf("summarize reported success for a run with failures")
	}
	got := out.String()
	for _, want := range []string{
		"SKIP example.com/m/a TestSkips: a_test.go:7: SKIPPED: needs /dev/widget",
		"SKIP example.com/m/a TestSubtests/skip: a_test.go:16: no gpu here",
		"context line one",
		"the answer was 41",
		"--- FAIL: TestFails",
		"FAIL\texample.com/m/a",
		"ok  \texample.com/m/b",
		"?   \texample.com/m/c\t[no test files]",
		"panic: boom",
		"about to crash",
		"FAIL\texample.com/m/d",
		// Passed: TestPasses, TestSubtests, TestSubtests/ok, TestFine;
		// failed: TestFails, TestCrash.
		"\nskipped: 0 for something missing here, 2 deliberately\n4 passed, 2 failed, 2 skipped\nFAIL\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestPasses") || strings.Contains(got, "TestFine") {
		t.Errorf("summary shows passing tests' output:\n%s", got)
	}
}

func TestSummaryAllPass(t *testing.T) {
	in := goTestJSON(t, map[string]string{
		"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
	})
	var out bytes.Buffer
	if !summarize(strings.NewReader(in), &out, false) {
		t.Fatalf("summarize reported failure:\n%s", out.String())
	}
	if !strings.HasSuffix(out.String(), "1 passed, 0 failed, 0 skipped\nPASS\n") {
		t.Fatalf("summary:\n%s", out.String())
	}
}

func TestSummaryBuildFailure(t *testing.T) {
	in := goTestJSON(t, map[string]string{
		"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) { undefinedThing() }\n",
	})
	var out bytes.Buffer
	if summarize(strings.NewReader(in), &out, false) {
		t.Fatalf("summarize reported success for a build failure:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "undefinedThing") {
		t.Fatalf("summary does not show the compiler's error:\n%s", out.String())
	}
}

func TestSummaryNoEvents(t *testing.T) {
	var out bytes.Buffer
	if summarize(strings.NewReader("not json\n"), &out, false) {
		t.Fatal("summarize reported success with no test events")
	}
	if !strings.HasPrefix(out.String(), "not json\n") {
		t.Fatalf("a non-JSON line was not copied through:\n%s", out.String())
	}
}

// missingSkips is a package whose tests skip as internal/missing words it:
// two for one library, one for another, and one deliberately.
var missingSkips = map[string]string{
	"a/a_test.go": `package a

import "testing"

func TestOK(t *testing.T) {}

func TestA(t *testing.T) { t.Skip("MISSING libavcodec: TestA needs it (no libavcodec.so.59); install: apt-get install libavcodec59") }

func TestB(t *testing.T) { t.Skip("MISSING libavcodec: TestB needs it; install: apt-get install libavcodec59") }

func TestC(t *testing.T) { t.Skip("MISSING python numpy: TestC needs it; install: ./scripts/testdeps.sh") }

func TestD(t *testing.T) { t.Skip("allocation counts are not meaningful under the race detector") }
`,
}

func TestSummaryCountsMissingApart(t *testing.T) {
	in := goTestJSON(t, missingSkips)
	var out bytes.Buffer
	if !summarize(strings.NewReader(in), &out, false) {
		t.Fatalf("summarize reported failure for skips alone:\n%s", out.String())
	}
	want := "\nskipped: 3 for something missing here (libavcodec 2, python numpy 1), 1 deliberately\n1 passed, 0 failed, 4 skipped\nPASS\n"
	if !strings.HasSuffix(out.String(), want) {
		t.Fatalf("summary does not end with %q:\n%s", want, out.String())
	}
}

func TestSummaryNoMissingFails(t *testing.T) {
	in := goTestJSON(t, missingSkips)
	var out bytes.Buffer
	if summarize(strings.NewReader(in), &out, true) {
		t.Fatalf("summarize with noMissing reported success for 3 skips for something missing:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "3 tests skipped for something missing") || !strings.HasSuffix(out.String(), "FAIL\n") {
		t.Fatalf("summary:\n%s", out.String())
	}
	// Deliberate skips alone pass with noMissing.
	in = goTestJSON(t, map[string]string{"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestD(t *testing.T) { t.Skip(\"deliberately\") }\n"})
	out.Reset()
	if !summarize(strings.NewReader(in), &out, true) {
		t.Fatalf("a deliberate skip failed the run with noMissing:\n%s", out.String())
	}
}
