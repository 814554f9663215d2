package rlds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	b, err := os.ReadFile(d.derivedPath(name))
	if err != nil {
		return nil, err
	}
	var f derivedFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("dataset %s: %s: %v (it will be rebuilt): %w", d.Name, d.derivedPath(name), err, os.ErrNotExist)
	}
	id, err := d.identity(ctx)
	if err != nil {
		return nil, err
	}
	if f.Info != id.info || f.Key != key {
		return nil, fmt.Errorf("dataset %s: %s is for other bytes or another config: %w", d.Name, name, os.ErrNotExist)
	}
	return f.Data, nil
}

// SaveDerived saves data under name, for key and the dataset's current
// bytes, atomically.
func (d *Dataset) SaveDerived(ctx context.Context, name, key string, data []byte) error {
	if !json.Valid(data) {
		return errors.New("rlds: SaveDerived needs JSON data")
	}
	id, err := d.identity(ctx)
	if err != nil {
		return err
	}
	return writeFileAtomic(d.derivedPath(name), derivedFile{Info: id.info, Key: key, Data: data})
}
