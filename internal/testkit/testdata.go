package testkit

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var (
	testdataOnce sync.Once
	testdataDir  string
	testdataErr  error
)

// Testdata returns the absolute path of the repository's testdata
// directory, found from the test's working directory (its package's
// folder) by walking up to the module root (the folder with go.mod).
func Testdata(t testing.TB) string {
	t.Helper()
	testdataOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			testdataErr = err
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				testdataDir = filepath.Join(dir, "testdata")
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				testdataErr = os.ErrNotExist
				return
			}
			dir = parent
		}
	})
	if testdataErr != nil {
		t.Fatalf("testkit: no go.mod above the test's directory: %v", testdataErr)
	}
	return testdataDir
}

// CopyDir copies the files of src (a fixture dataset directory) into a new
// temporary directory and returns it.
func CopyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// CopyDirEdit copies the files of the flat directory src into a new
// temporary directory, passing each file's bytes through edit (given the
// file's name), and returns it.
func CopyDirEdit(t testing.TB, src string, edit func(name string, b []byte) []byte) string {
	t.Helper()
	dst := t.TempDir()
	for name, b := range ReadDirFiles(t, src) {
		if err := os.WriteFile(filepath.Join(dst, name), edit(name, b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// ReadDirFiles returns the contents of every file under dir, by its path
// relative to dir, with slashes: object names for a fake GCS server.
func ReadDirFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
