package testkit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/storage/storagetest"
)

// LocalBackend returns an empty local backend over a temp directory and
// the function that stores objects in it, for storagetest.Run.
func LocalBackend(t *testing.T) (*local.Backend, storagetest.Put) {
	dir := t.TempDir()
	return local.New(dir), func(t *testing.T, name string, data []byte) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var _ storage.Backend = (*local.Backend)(nil)
