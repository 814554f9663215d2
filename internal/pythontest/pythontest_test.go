package pythontest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// fakePython writes an executable python3 into a new directory that
// succeeds (ok) or fails on every command.
func fakePython(t *testing.T, name string, ok bool) string {
	t.Helper()
	dir := t.TempDir()
	code := "1"
	if ok {
		code = "0"
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit "+code+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFindSkipsAnInterpreterWithoutTheModules: the python3 first on PATH
// lacks the modules (a pyenv shim), a later one has them; Find must return
// the later one instead of giving up on the first.
func TestFindSkipsAnInterpreterWithoutTheModules(t *testing.T) {
	bad := fakePython(t, "python3", false)
	good := fakePython(t, "python3", true)
	t.Setenv(Env, "")
	t.Setenv("PATH", filepath.Dir(bad)+string(os.PathListSeparator)+filepath.Dir(good))
	if got := Find(t, "numpy"); got != good {
		t.Fatalf("Find = %s, want %s (the first python3 cannot import numpy)", got, good)
	}
}

func TestCandidates(t *testing.T) {
	first := fakePython(t, "python3", false)
	versioned := filepath.Dir(fakePython(t, "python3.9", true))
	for _, name := range []string{"python3.12", "python3.12-config"} {
		if err := os.WriteFile(filepath.Join(versioned, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := fakePython(t, "mypython", true)
	t.Setenv(Env, env)
	t.Setenv("PATH", filepath.Dir(first)+string(os.PathListSeparator)+versioned+string(os.PathListSeparator)+filepath.Dir(first))
	got := Candidates()
	want := []string{env, first}
	if len(got) < 4 || !slices.Equal(got[:2], want) {
		t.Fatalf("Candidates = %v, want %v first (the env override, then PATH once)", got, want)
	}
	i12 := slices.Index(got, filepath.Join(versioned, "python3.12"))
	i9 := slices.Index(got, filepath.Join(versioned, "python3.9"))
	if i12 < 0 || i9 < 0 || i12 > i9 {
		t.Errorf("Candidates = %v: want python3.12 before python3.9", got)
	}
	if slices.Contains(got, filepath.Join(versioned, "python3.12-config")) {
		t.Errorf("Candidates = %v: python3.12-config is not an interpreter", got)
	}
}
