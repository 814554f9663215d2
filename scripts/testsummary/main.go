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
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

func main() {
	if !summarize(os.Stdin, os.Stdout) {
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
}

// summarize reads events from r, reports to w, and says whether everything
// passed.
func summarize(r io.Reader, w io.Writer) bool {
	s := &summary{w: w, output: map[testID][]string{}, build: map[string][]string{}}
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

// finish prints the skipped tests and the counts.
func (s *summary) finish() bool {
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
			fmt.Fprintf(s.w, "SKIP %s %s: %s\n", k.id.pkg, k.id.test, reason)
		}
	}
	fmt.Fprintf(s.w, "\n%d passed, %d failed, %d skipped\n", s.passed, s.failed, len(s.skips))
	ok := s.anything && s.failed == 0 && s.badPkgs == 0
	if !s.anything {
		fmt.Fprintln(s.w, "no test events on stdin: was it `go test -json`?")
	}
	if ok {
		fmt.Fprintln(s.w, "PASS")
	} else {
		fmt.Fprintln(s.w, "FAIL")
	}
	return ok
}
