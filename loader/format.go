package loader

import (
	"context"
	"errors"
	"io/fs"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format/lerobot"
	"github.com/oxefs/oxefs/format/rlds"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/store"
)

// Data is an opened dataset as the loader reads it, whatever its format:
// the neutral episode.Dataset, and the few things the mix asks of any
// format. What only one format does (the RLDS length index, shard
// prefetch, the offline cache) is reached through RLDS.
type Data interface {
	episode.Dataset
	// EpisodeID names an episode in logs and batch metadata.
	EpisodeID(key episode.Key) string
	// Backend is the source the dataset is read from.
	Backend() storage.Backend
	// Scan loads every episode of segs, workers segments at once (see
	// rlds.Dataset.Scan).
	Scan(ctx context.Context, segs []episode.Segment, workers int, visit func(seg int, key episode.Key, ep episode.Episode, err error) error) error
}

var (
	_ Data = (*rlds.Dataset)(nil)
	_ Data = (*lerobot.Dataset)(nil)
)

// RLDS returns the dataset as RLDS, or nil for another format.
func (d *Dataset) RLDS() *rlds.Dataset {
	r, _ := d.Data.(*rlds.Dataset)
	return r
}

// OpenData opens the dataset at src in the format its files show: a
// LeRobot v3 dataset has meta/info.json; anything else is read as RLDS
// (dataset_info.json and features.json), whose errors say what is missing.
// A LeRobot dataset keeps its video files' sample tables in index (nil: a
// cache of its own) and, from a remote source, its episodes' video bytes
// in the store's disk cache.
func OpenData(ctx context.Context, name string, src storage.Backend, st *store.Store, index *lerobot.IndexCache) (Data, error) {
	if _, local := src.(storage.Filer); st.Offline() && !local {
		// What `oxefs warm` saved: a LeRobot dataset's files and record,
		// or an RLDS dataset's metadata.
		if data, ok, err := openLeRobotOffline(ctx, name, src, st, index); ok {
			return data, err
		}
		return rlds.Open(ctx, st, name, src)
	}
	read := src // local files are read in place, like RLDS shards
	if _, local := src.(storage.Filer); !local {
		read = st.Wrap(src)
	}
	_, err := read.Stat(ctx, lerobot.InfoPath)
	switch {
	case err == nil:
		return lerobot.Open(ctx, name, src, lerobot.Options{Index: index, Store: st})
	case errors.Is(err, fs.ErrNotExist):
		return rlds.Open(ctx, st, name, src)
	}
	// The source could not say whether it holds meta/info.json: an outage,
	// most likely. Try RLDS, the format a source was always read as; when
	// that fails too, its error (naming dataset_info.json) is the one
	// reported, as it was before LeRobot was read.
	return rlds.Open(ctx, st, name, src)
}

// knownSplitLengths returns each split's episode lengths when the dataset
// knows them without reading its episodes: LeRobot's episode table, or an
// RLDS length index built earlier. ok is false when some split of ranges
// is not covered.
func knownSplitLengths(d *Dataset, ranges []episode.Range) (map[string][]int32, bool) {
	var ls map[string][]int32
	switch data := d.Data.(type) {
	case *lerobot.Dataset:
		ls = data.Lengths()
	case *rlds.Dataset:
		l, err := data.LoadLengths()
		if err != nil {
			return nil, false
		}
		ls = l.Splits
	default:
		return nil, false
	}
	for _, r := range ranges {
		if s, ok := ls[r.Split]; !ok || int64(len(s)) < r.To {
			return nil, false
		}
	}
	return ls, true
}
