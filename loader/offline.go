package loader

import (
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/store"

	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/format/rlds"
)

// maxListed bounds the shards named per dataset in an OfflineError.
const maxListed = 8

// OfflineError is a mix that the cache cannot serve without its sources:
// what each dataset lacks.
type OfflineError struct {
	// Missing has one line per dataset that lacks something: its name and
	// source, then each missing item (a metadata file, a shard, the
	// episode-length index).
	Missing []string
}

func (e *OfflineError) Error() string {
	return fmt.Sprintf("--offline: the cache lacks what this mix needs:\n  %s\n"+
		"run `oxefs warm` with the same --config and --cache-dir while the sources are reachable "+
		"(with --disk at least twice the shards' size), then mount --offline again",
		strings.Join(e.Missing, "\n  "))
}

// CheckOffline reports whether the store's cache holds everything an
// offline open of cfg's sampled datasets needs (see MixOptions.Offline):
// nil, an *OfflineError naming what is missing, or the config errors
// opening the datasets shows. The store may be online (`oxefs warm` asks
// it after fetching) or offline.
func CheckOffline(ctx context.Context, cfg *config.Config, st *store.Store) error {
	var dcs []*config.DatasetConfig
	for i := range cfg.Datasets {
		if cfg.Datasets[i].Sampled() {
			dcs = append(dcs, &cfg.Datasets[i])
		}
	}
	return checkOffline(ctx, dcs, cfg.SamplesPerEpisode == 0, st)
}

// checkOffline checks that, for every dataset, the cache holds its
// metadata (rlds.Dataset.SaveOffline's record), every shard of its train
// and val selections, and, when needLengths (samples_per_episode 0), an
// episode-length index covering them. Sources of local files need none of
// it: they are read in place.
func checkOffline(ctx context.Context, dcs []*config.DatasetConfig, needLengths bool, st *store.Store) error {
	var (
		missing []string
		have    []*config.DatasetConfig
	)
	for _, dc := range dcs {
		src, err := storage.Open(ctx, dc.Source, sourceOptions(dc, true))
		if err != nil {
			have = append(have, dc) // openAll reports it
			continue
		}
		if _, ok := loadLeRobotRecord(st, src); ok {
			have = append(have, dc) // its files are checked once it is open
			continue
		}
		if files := rlds.MissingOffline(st, src); len(files) > 0 {
			missing = append(missing, fmt.Sprintf("dataset %s (%s): metadata %s (or, for a LeRobot dataset, its files and %s.json)",
				dc.Name, src.Location(), strings.Join(files, ", "), lerobotRecordName))
			continue
		}
		have = append(have, dc)
	}
	opened, err := openAll(ctx, have, st, nil)
	if err != nil {
		return err
	}
	for _, o := range opened {
		if items := missingOf(ctx, o, needLengths, st); len(items) > 0 {
			missing = append(missing, fmt.Sprintf("dataset %s (%s): %s", o.ds.Config.Name, o.ds.Data.Backend().Location(), strings.Join(items, "; ")))
		}
	}
	if len(missing) > 0 {
		return &OfflineError{Missing: missing}
	}
	return nil
}

// missingOf lists what the cache lacks of one opened dataset's
// selections.
func missingOf(ctx context.Context, o opened, needLengths bool, st *store.Store) []string {
	data := o.ds.RLDS()
	if data == nil {
		return missingLeRobot(ctx, o, st)
	}
	ranges := append(slices.Clone(o.train), o.val...)
	segs, err := o.ds.Data.Info().Segments(ranges)
	if err != nil {
		return []string{err.Error()}
	}
	var (
		items, shards []string
		total         int
		seen          = map[[2]any]bool{}
	)
	for _, sg := range segs {
		k := [2]any{sg.Split, sg.Shard}
		if seen[k] {
			continue
		}
		seen[k] = true
		total++
		name, ok, err := data.ShardCached(sg.Split, sg.Shard)
		switch {
		case err != nil:
			items = append(items, err.Error())
		case !ok:
			shards = append(shards, name)
		}
	}
	if n := len(shards); n > 0 {
		listed := strings.Join(shards[:min(n, maxListed)], ", ")
		if n > maxListed {
			listed += fmt.Sprintf(" and %d more", n-maxListed)
		}
		items = append(items, fmt.Sprintf("%d of the %d shards of its selections: %s", n, total, listed))
	}
	if _, ok := knownSplitLengths(o.ds, ranges); needLengths && !ok {
		items = append(items, "the episode-length index (samples_per_episode 0)")
	}
	return items
}

// sourceOptions are the backend options of a dataset's source. A source
// opened offline is never read, so it is made without credentials (whose
// lookup may itself need the network).
func sourceOptions(dc *config.DatasetConfig, offline bool) storage.Options {
	return storage.Options{Anonymous: dc.Anonymous || offline}
}
