// Package atomicfile writes whole files so that a reader, or a run that is
// interrupted, never sees a partial one: the bytes go to a temporary file
// beside the target, which is then renamed over it.
//
// It imports nothing of oxefs.
package atomicfile

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// Write writes data to a temporary file in path's directory, which it
// makes when needed, and renames it over path. On error path is untouched
// and the temporary file is removed.
func Write(path string, data []byte) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// WriteJSON writes v as JSON to path, as Write does.
func WriteJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return Write(path, b)
}
