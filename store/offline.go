package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/oxefs/oxefs/internal/atomicfile"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/offline"
)

// A source's offline record is what an offline open reads instead of the
// source (Options.Offline): files its format names (for RLDS, its metadata
// and each shard's version), saved by `oxefs warm` in the source's index
// directory.

// File is one file of an offline record.
type File struct {
	Name string
	Data []byte
}

// SaveRecord saves the files of src's offline record, each atomically, in
// the given order: the last should be the one whose presence marks the
// record complete, so that an interrupted save leaves no record, or an
// older one.
func (s *Store) SaveRecord(src storage.Backend, files ...File) error {
	dir := s.Dir(src)
	for _, f := range files {
		if err := atomicfile.Write(filepath.Join(dir, f.Name), f.Data); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	return nil
}

// ReadRecord reads the named file of src's offline record. A file that is
// not there is a *offline.NotCachedError naming it.
func (s *Store) ReadRecord(src storage.Backend, name string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(s.Dir(src), name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &offline.NotCachedError{URI: src.Location(), Name: name}
	}
	return b, err
}

// MissingRecord lists the named files of src's offline record that are not
// saved; none for a source whose files are read in place.
func (s *Store) MissingRecord(src storage.Backend, names ...string) []string {
	if storage.IsFiler(src) {
		return nil
	}
	dir := s.Dir(src)
	var missing []string
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			missing = append(missing, name)
		}
	}
	return missing
}
