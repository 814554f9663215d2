// Package pythontest finds a Python interpreter for tests that check oxefs
// against real Python consumers (numpy, torch, tensorflow_datasets).
//
// Machines often have several python3s: a pyenv or virtualenv shim first on
// PATH without numpy, and the distribution's /usr/bin/python3 with
// python3-numpy. Find tries each candidate in turn and returns the first
// that imports every module the test needs, so a test never skips because
// the wrong interpreter came first; when none does, the test is skipped
// with a message naming every interpreter tried.
package pythontest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/internal/missing"
)

// Env names an interpreter to try before any other.
const Env = "OXEFS_PYTHON"

// Find returns the path of a Python interpreter that imports every module,
// or skips the test, saying which interpreters were tried.
func Find(t testing.TB, modules ...string) string {
	t.Helper()
	cands := Candidates()
	for _, py := range cands {
		if Imports(py, modules...) {
			return py
		}
	}
	why := fmt.Errorf("none of %v imports %s (set %s to one that does)", cands, strings.Join(modules, ", "), Env)
	if !slices.ContainsFunc(modules, func(m string) bool { return !slices.Contains(Installed, m) }) {
		missing.Skip(t, missing.Python(strings.Join(modules, ", ")), why)
	}
	// A module scripts/testdeps.sh does not install (tensorflow_datasets
	// for a cross-check) is an optional extra: a deliberate skip.
	t.Skipf("SKIPPED: %s needs a python3 that imports %s, optional modules that scripts/testdeps.sh does not install; %v",
		t.Name(), strings.Join(modules, ", "), why)
	return ""
}

// Installed lists the modules scripts/testdeps.sh installs. A test that
// needs only these and finds no interpreter skips as missing (counted apart,
// and a failure once testdeps.sh has found them all present).
var Installed = []string{"numpy", "torch", "torchvision", "pytest", "setuptools", "wheel", "huggingface_hub"}

// Imports reports whether the interpreter py imports every module.
func Imports(py string, modules ...string) bool {
	if len(modules) == 0 {
		return exec.Command(py, "-c", "pass").Run() == nil
	}
	return exec.Command(py, "-c", "import "+strings.Join(modules, ", ")).Run() == nil
}

// Candidates lists the interpreters Find tries, in order and each once:
// $OXEFS_PYTHON, every python3 on PATH, /usr/bin/python3 and
// /usr/local/bin/python3, then the versioned python3.N of those
// directories, newest first.
func Candidates() []string {
	var (
		out  []string
		seen = map[string]bool{}
	)
	add := func(p string) {
		if p == "" {
			return
		}
		st, err := os.Stat(p)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return
		}
		// The same interpreter reached by two paths is tried once.
		key := p
		if r, err := filepath.EvalSymlinks(p); err == nil {
			key = r
		}
		if seen[key] {
			return
		}
		seen[key] = true
		out = append(out, p)
	}
	if p := os.Getenv(Env); p != "" {
		if lp, err := exec.LookPath(p); err == nil {
			p = lp
		}
		add(p)
	}
	dirs := filepath.SplitList(os.Getenv("PATH"))
	dirs = append(dirs, "/usr/bin", "/usr/local/bin")
	for _, d := range dirs {
		if d != "" {
			add(filepath.Join(d, "python3"))
		}
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		versioned, _ := filepath.Glob(filepath.Join(d, "python3.[0-9]*"))
		// python3.11-config and the like are not interpreters.
		versioned = slices.DeleteFunc(versioned, func(p string) bool { return strings.Contains(filepath.Base(p), "-") })
		slices.SortFunc(versioned, func(a, b string) int { return minor(b) - minor(a) })
		for _, p := range versioned {
			add(p)
		}
	}
	return out
}

// minor is N of a path ending in python3.N, or -1.
func minor(p string) int {
	s := strings.TrimPrefix(filepath.Base(p), "python3.")
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return -1
		}
		n = n*10 + int(r-'0')
	}
	return n
}
