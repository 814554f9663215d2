// Package atomicfile writes whole files so that a reader, or a run that is
// interrupted, never sees a partial one: the bytes go to a temporary file
// beside the target, which is then renamed over it.
//
// The files get the mode os.Create gives, 0666 less the umask (0644 under
// the usual 022), not os.CreateTemp's 0600: what oxefs writes this way
// (datasets, mix configs, indexes in a cache that two users may share) is
// for others to read, and a umask such as 077 keeps it private.
//
// It imports nothing of oxefs.
package atomicfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// CreateTemp creates a new file in dir named "."+base+".tmp-" and a random
// suffix, for writing, with mode 0666 less the umask; the caller renames
// it into place (or removes it).
func CreateTemp(dir, base string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, fmt.Sprintf(".%s.tmp-%d", base, rand.Uint32()))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("a temporary file for %s in %s: every name tried exists", base, dir)
}

// Write writes data to a temporary file in path's directory, which it
// makes when needed, and renames it over path. On error path is untouched
// and the temporary file is removed.
func Write(path string, data []byte) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := CreateTemp(filepath.Dir(path), filepath.Base(path))
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
