// Command testsummary reads `go test -json` on stdin and prints what a
// person needs from a whole-suite run, which plain `go test` hides:
//
//	go test -race -count=1 -json ./... | go run ./scripts/testsummary
//
// It prints, as they happen, each package's closing line as go test does
// ("ok  \tpkg\t1.2s", "FAIL\tpkg ...", "?   \tpkg\t[no test files]") and the
// whole output of every failed test, build failure or crashed test binary;
// then every skipped test with its reason (go test shows t.Skip messages
// only with -v); then a count line, "N passed, N failed, N skipped"
// (subtests count), and a last line PASS or FAIL. It exits 1 when anything
// failed. Lines that are not JSON events are copied through.
//
// Skips for something the machine lacks (internal/missing's "MISSING what:"
// messages: an optional library, a Python module, /dev/fuse) are counted
// apart from deliberate ones, on the line before the count. With
// -no-missing (scripts/test.sh passes it once scripts/testdeps.sh found
// everything present) such a skip fails the run: the test's own check, or
// testdeps.sh, is wrong.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/oxefs/oxefs/internal/missing"
)

func main() {
	noMissing := flag.Bool("no-missing", false, "fail the run when a test skips for something missing")
	flag.Parse()
	if !summarize(os.Stdin, os.Stdout, *noMissing) {
		os.Exit(1)
	}
}

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output, build-fail
}

type testID struct{ pkg, test string }

type skipped struct {
	id     testID
	reason []string
}

// summary is the state of one run's report.
type summary struct {
	w io.Writer

	output   map[testID][]string // output of tests (and packages, test "") not yet ended
	build    map[string][]string // build output per import path
	skips    []skipped
	passed   int
	failed   int
	badPkgs  int // packages that failed without a failed test: build failures, crashes
	anything bool

	noMissing bool // a skip for something missing fails the run
}

// summarize reads events from r, reports to w, and says whether everything
// passed (and, with noMissing, whether no test skipped for something
// missing).
func summarize(r io.Reader, w io.Writer, noMissing bool) bool {
	s := &summary{w: w, output: map[testID][]string{}, build: map[string][]string{}, noMissing: noMissing}
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			s.line(line)
		}
		if err != nil {
			break
		}
	}
	return s.finish()
}

func (s *summary) line(line string) {
	var e event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
		io.WriteString(s.w, line)
		return
	}
	s.anything = true
	id := testID{e.Package, e.Test}
	switch e.Action {
	case "output":
		s.output[id] = append(s.output[id], e.Output)
	case "build-output":
		s.build[e.ImportPath] = append(s.build[e.ImportPath], e.Output)
	case "build-fail":
		fmt.Fprintf(s.w, "# build of %s failed:\n", e.ImportPath)
		s.write(s.build[e.ImportPath])
		delete(s.build, e.ImportPath)
	case "pass", "fail", "skip":
		if e.Test == "" {
			s.packageEnd(e)
		} else {
			s.testEnd(e)
		}
	}
}

func (s *summary) testEnd(e event) {
	id := testID{e.Package, e.Test}
	out := s.output[id]
	delete(s.output, id)
	switch e.Action {
	case "pass":
		s.passed++
	case "fail":
		s.failed++
		s.write(out)
	case "skip":
		var reason []string
		for _, l := range out {
			t := strings.TrimSpace(l)
			if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
				continue
			}
			reason = append(reason, t)
		}
		s.skips = append(s.skips, skipped{id: id, reason: reason})
	}
}

func (s *summary) packageEnd(e event) {
	id := testID{e.Package, ""}
	out := s.output[id]
	delete(s.output, id)
	// Tests of the package that never ended: the binary crashed or timed
	// out while they ran. Their output explains it.
	var unfinished []testID
	for t := range s.output {
		if t.pkg == e.Package {
			unfinished = append(unfinished, t)
		}
	}
	slices.SortFunc(unfinished, func(a, b testID) int { return strings.Compare(a.test, b.test) })
	switch e.Action {
	case "pass", "skip":
		// go test's own closing line is the package's last output:
		// "ok  \tpkg\t0.1s" or "?   \tpkg\t[no test files]".
		if n := len(out); n > 0 {
			io.WriteString(s.w, out[n-1])
		} else if e.Action == "skip" {
			fmt.Fprintf(s.w, "?   \t%s\t[no test files]\n", e.Package)
		} else {
			fmt.Fprintf(s.w, "ok  \t%s\n", e.Package)
		}
	case "fail":
		for _, t := range unfinished {
			fmt.Fprintf(s.w, "--- %s did not finish:\n", t.test)
			s.write(s.output[t])
		}
		s.write(out)
		if len(out) == 0 || !strings.HasPrefix(out[len(out)-1], "FAIL") {
			fmt.Fprintf(s.w, "FAIL\t%s\n", e.Package)
		}
		s.badPkgs++
	}
	for _, t := range unfinished {
		delete(s.output, t)
	}
}

func (s *summary) write(lines []string) {
	for _, l := range lines {
		io.WriteString(s.w, l)
	}
}

// finish prints the skipped tests, what was missing, and the counts.
func (s *summary) finish() bool {
	missingBy := map[string]int{}
	nMissing := 0
	if len(s.skips) > 0 {
		slices.SortFunc(s.skips, func(a, b skipped) int {
			if c := strings.Compare(a.id.pkg, b.id.pkg); c != 0 {
				return c
			}
			return strings.Compare(a.id.test, b.id.test)
		})
		fmt.Fprintf(s.w, "\n%d skipped:\n", len(s.skips))
		for _, k := range s.skips {
			reason := strings.Join(k.reason, " / ")
			if reason == "" {
				reason = "(no reason given)"
			}
			if name, ok := missing.Parse(reason); ok {
				missingBy[name]++
				nMissing++
			}
			fmt.Fprintf(s.w, "SKIP %s %s: %s\n", k.id.pkg, k.id.test, reason)
		}
	}
	fmt.Fprintln(s.w)
	if len(s.skips) > 0 {
		fmt.Fprintf(s.w, "skipped: %d for something missing here%s, %d deliberately\n",
			nMissing, missingList(missingBy), len(s.skips)-nMissing)
	}
	fmt.Fprintf(s.w, "%d passed, %d failed, %d skipped\n", s.passed, s.failed, len(s.skips))
	ok := s.anything && s.failed == 0 && s.badPkgs == 0
	if !s.anything {
		fmt.Fprintln(s.w, "no test events on stdin: was it `go test -json`?")
	}
	if s.noMissing && nMissing > 0 {
		fmt.Fprintf(s.w, "%d tests skipped for something missing, but scripts/testdeps.sh found everything present: a test's check for it is wrong, or testdeps.sh does not install it\n", nMissing)
		ok = false
	}
	if ok {
		fmt.Fprintln(s.w, "PASS")
	} else {
		fmt.Fprintln(s.w, "FAIL")
	}
	return ok
}

// missingList is " (libavcodec 30, libturbojpeg 5)", most first.
func missingList(by map[string]int) string {
	if len(by) == 0 {
		return ""
	}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if by[a] != by[b] {
			return by[b] - by[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, by[n])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
