package rlds

import (
	"context"
)

// LoadDerived returns what SaveDerived saved under name and key, if it was
// computed from the dataset's current bytes: the identity a length index is
// keyed on (dataset_info.json and every shard's version), so that a
// rewritten dataset invalidates both the same way. Anything else is an
// error matching fs.ErrNotExist. See store.Store.LoadDerived.
func (d *Dataset) LoadDerived(ctx context.Context, name, key string) ([]byte, error) {
	return d.store.LoadDerived(d.Source, name, key, func() (string, error) {
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
	return d.store.SaveDerived(d.Source, name, id.info, key, data)
}
