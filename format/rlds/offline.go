package rlds

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/offline"
	"github.com/oxefs/oxefs/store"
)

// What an offline open reads instead of the source, in the source's index
// directory (IndexDir/index/SLUG, beside lengths.json). SaveOffline writes
// them; shards.json holds each shard's ObjectInfo, the length index's key.
const (
	savedInfo   = "dataset_info.json"
	savedFeats  = "features.json"
	savedShards = "shards.json"
)

// savedFiles are the files of an offline record, in the order an offline
// open reads them.
var savedFiles = []string{savedInfo, savedFeats, savedShards}

// shardRecord is shards.json.
type shardRecord struct {
	Source string                 `json:"source"`
	Shards map[string]savedObject `json:"shards"`
}

type savedObject struct {
	Size    int64  `json:"size"`
	Version string `json:"version"`
}

// SaveOffline records what an offline open of the dataset (Options.Offline)
// reads instead of the source: dataset_info.json and features.json as read,
// and the ObjectInfo of every shard of every split, which it stats. A
// source whose files are read in place needs no record; nothing is written
// for it.
func (d *Dataset) SaveOffline(ctx context.Context) error {
	if !d.src.Cached() {
		return nil
	}
	id, err := d.identity(ctx)
	if err != nil {
		return err
	}
	rec := shardRecord{Source: d.Source.Location(), Shards: make(map[string]savedObject, len(id.objects))}
	for name, o := range id.objects {
		rec.Shards[name] = savedObject{Size: o.Size, Version: o.Version}
	}
	shards, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	// dataset_info.json last: an interrupted save leaves no record, or an
	// older one, that an offline open would take for complete.
	err = d.store.SaveRecord(d.Source, store.File{Name: savedShards, Data: shards},
		store.File{Name: savedFeats, Data: d.featJSON}, store.File{Name: savedInfo, Data: d.infoJSON})
	if err != nil {
		return fmt.Errorf("dataset %s: save for offline use: %w", d.Name, err)
	}
	return nil
}

// MissingOffline lists the files of src's offline record (see SaveOffline)
// that st does not hold; none for a source whose files are read in place.
func MissingOffline(st *store.Store, src storage.Backend) []string {
	return st.MissingRecord(src, savedFiles...)
}

// readSaved reads src's offline record. A file that is not there is a
// *offline.NotCachedError naming it.
func readSaved(st *store.Store, src storage.Backend) (infoJSON, featJSON []byte, shards map[string]storage.ObjectInfo, err error) {
	if infoJSON, err = st.ReadRecord(src, savedInfo); err != nil {
		return nil, nil, nil, err
	}
	if featJSON, err = st.ReadRecord(src, savedFeats); err != nil {
		return nil, nil, nil, err
	}
	b, err := st.ReadRecord(src, savedShards)
	if err != nil {
		return nil, nil, nil, err
	}
	var rec shardRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w (run oxefs warm again to rewrite it)", filepath.Join(st.Dir(src), savedShards), err)
	}
	shards = make(map[string]storage.ObjectInfo, len(rec.Shards))
	for name, o := range rec.Shards {
		shards[name] = storage.ObjectInfo{Size: o.Size, Version: o.Version}
	}
	return infoJSON, featJSON, shards, nil
}

// statShard identifies a shard's bytes: from the source, or from the
// offline record when the dataset was opened offline.
func (d *Dataset) statShard(ctx context.Context, name string) (storage.ObjectInfo, error) {
	if d.saved == nil {
		return d.remote.Stat(ctx, name)
	}
	o, ok := d.saved[name]
	if !ok {
		return storage.ObjectInfo{}, &offline.NotCachedError{URI: d.Source.Location(), Name: name}
	}
	return o, nil
}

// ShardCached reports whether a shard can be read without the source: in
// place for a source of local files, from the disk cache otherwise. It
// also returns the shard's file name.
func (d *Dataset) ShardCached(split string, shard int) (string, bool, error) {
	name, err := d.ShardName(split, shard)
	if err != nil {
		return "", false, err
	}
	if !d.src.Cached() {
		return name, true, nil
	}
	o, err := d.shardObject(d.store.Context(), name)
	if err != nil {
		return name, false, err
	}
	return name, d.src.Contains(o), nil
}
