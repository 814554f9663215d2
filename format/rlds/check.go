package rlds

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/oxefs/oxefs/format/rlds/tfds"
	"github.com/oxefs/oxefs/storage"
)

// minRecordBytes is the smallest TFRecord: a 12-byte header (length and its
// CRC) and a 4-byte footer (the payload's CRC) around an empty payload.
const minRecordBytes = 16

// CheckSplit checks what is cheap to check of a split's shards against
// dataset_info.json, so that metadata that disagrees with the files is a
// config error at mount time instead of a failure at every read:
//   - the episodes listed must fit in the split's numBytes (when given), at
//     minRecordBytes each;
//   - for a local source, every listed shard must exist and be large enough
//     for the episodes listed in it.
//
// Remote shards are not asked for one by one (a dataset may have thousands);
// a missing object, like a shard that holds fewer records than listed, is
// found when it is read and is then unreadable data (a *episode.CorruptError).
func (d *Dataset) CheckSplit(split string) error {
	si, ok := d.Meta.Split(split)
	if !ok {
		return fmt.Errorf("dataset %s: no split %q", d.Name, split)
	}
	if storage.IsFiler(d.Source) {
		if err := d.checkLocalShards(split, si); err != nil {
			return err
		}
	}
	if total := si.NumExamples(); si.NumBytes > 0 && total > si.NumBytes/minRecordBytes {
		return fmt.Errorf("dataset %s split %s: dataset_info.json lists %d episodes in %d bytes (numBytes), "+
			"but each takes at least %d bytes: its shardLengths are wrong", d.Name, split, total, si.NumBytes, minRecordBytes)
	}
	return nil
}

// checkLocalShards stats every shard of a local split.
func (d *Dataset) checkLocalShards(split string, si *tfds.SplitInfo) error {
	names, err := d.Meta.ShardNames(split)
	if err != nil {
		return fmt.Errorf("dataset %s: %w", d.Name, err)
	}
	for i, name := range names {
		st, err := d.Source.Stat(context.Background(), name)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("dataset %s split %s: shard %s is missing from %s (dataset_info.json lists %d shards); "+
				"restore it or fix dataset_info.json", d.Name, split, name, d.Source.Location(), len(names))
		}
		if err != nil {
			return fmt.Errorf("dataset %s split %s: shard %s: %w", d.Name, split, name, err)
		}
		if n := si.ShardLengths[i]; n > st.Size/minRecordBytes {
			return fmt.Errorf("dataset %s split %s: shard %s is %d bytes, too small for the %d episodes "+
				"dataset_info.json lists in it (each takes at least %d bytes)", d.Name, split, name, st.Size, n, minRecordBytes)
		}
	}
	return nil
}
