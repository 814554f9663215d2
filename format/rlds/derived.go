package rlds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/oxefs/oxefs/storage"
)

// derivedFile is data computed from a dataset's bytes, saved beside its
// length index and trusted only for the same bytes.
type derivedFile struct {
	Info string          `json:"info"` // the identity the length index is keyed on
	Key  string          `json:"key"`  // what the caller computed it for
	Data json.RawMessage `json:"data"`
}

func (d *Dataset) derivedPath(name string) string {
	return filepath.Join(d.indexDir(), name+".json")
}

// LoadDerived returns what SaveDerived saved under name and key, if it was
// computed from the dataset's current bytes: the identity a length index is
// keyed on (dataset_info.json and every shard's version), so that a
// rewritten dataset invalidates both the same way. Anything else is an
// error matching fs.ErrNotExist.
func (d *Dataset) LoadDerived(ctx context.Context, name, key string) ([]byte, error) {
	return loadDerived(d.derivedPath(name), key, func() (string, error) {
		id, err := d.identity(ctx)
		return id.info, err
	})
}

// SaveDerived saves data under name, for key and the dataset's current
// bytes, atomically.
func (d *Dataset) SaveDerived(ctx context.Context, name, key string, data []byte) error {
	id, err := d.identity(ctx)
	if err != nil {
		return err
	}
	return saveDerived(d.derivedPath(name), id.info, key, data)
}

// LoadDerived returns what SaveDerived saved under name for the source src
// (a dataset of another format, which names its own identity), if it was
// saved for key and the identity identify returns now. identify is called
// only when something was saved. Anything else is an error matching
// fs.ErrNotExist.
func (s *Store) LoadDerived(src storage.Backend, name, key string, identify func() (string, error)) ([]byte, error) {
	return loadDerived(s.derivedPath(src, name), key, identify)
}

// SaveDerived saves data under name for the source src, for key and
// identity, atomically, in the directory where RLDS datasets keep their
// length indexes.
func (s *Store) SaveDerived(src storage.Backend, name, identity, key string, data []byte) error {
	return saveDerived(s.derivedPath(src, name), identity, key, data)
}

func (s *Store) derivedPath(src storage.Backend, name string) string {
	return filepath.Join(s.sourceIndexDir(sourceSlug(src.Location())), name+".json")
}

func loadDerived(path, key string, identify func() (string, error)) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f derivedFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %v (it will be rebuilt): %w", path, err, os.ErrNotExist)
	}
	id, err := identify()
	if err != nil {
		return nil, err
	}
	if f.Info != id || f.Key != key {
		return nil, fmt.Errorf("%s is for other bytes or another config: %w", path, os.ErrNotExist)
	}
	return f.Data, nil
}

func saveDerived(path, identity, key string, data []byte) error {
	if !json.Valid(data) {
		return errors.New("rlds: SaveDerived needs JSON data")
	}
	return writeFileAtomic(path, derivedFile{Info: identity, Key: key, Data: data})
}
