package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/oxefs/oxefs/internal/atomicfile"
	"github.com/oxefs/oxefs/storage"
)

// derivedFile is data computed from a source's bytes, saved in its index
// directory and trusted only for the same bytes.
type derivedFile struct {
	Info string          `json:"info"` // the identity of the bytes it was computed from
	Key  string          `json:"key"`  // what the caller computed it for
	Data json.RawMessage `json:"data"`
}

// LoadDerived returns what SaveDerived saved under name for the source
// src, if it was saved for key and the identity identify returns now (the
// format names its bytes' identity: for RLDS, dataset_info.json and every
// shard's version). identify is called only when something was saved.
// Anything else is an error matching fs.ErrNotExist.
func (s *Store) LoadDerived(src storage.Backend, name, key string, identify func() (string, error)) ([]byte, error) {
	path := s.derivedPath(src, name)
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

// SaveDerived saves data, which must be JSON, under name for the source
// src, for key and identity, atomically, in the source's index directory.
func (s *Store) SaveDerived(src storage.Backend, name, identity, key string, data []byte) error {
	if !json.Valid(data) {
		return errors.New("store: SaveDerived needs JSON data")
	}
	return atomicfile.WriteJSON(s.derivedPath(src, name), derivedFile{Info: identity, Key: key, Data: data})
}

func (s *Store) derivedPath(src storage.Backend, name string) string {
	return filepath.Join(s.Dir(src), name+".json")
}
