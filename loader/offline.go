package loader

import (
	"context"
	"fmt"
	"strings"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/storage"
)

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
func CheckOffline(ctx context.Context, cfg *config.Config, env *format.Env) error {
	var dcs []*config.DatasetConfig
	for i := range cfg.Datasets {
		if cfg.Datasets[i].Sampled() {
			dcs = append(dcs, &cfg.Datasets[i])
		}
	}
	return checkOffline(ctx, dcs, cfg.SamplesPerEpisode == 0, cfg, env)
}

// checkOffline checks that, for every dataset, the cache holds what its
// format needs to open it offline (format.MissingOffline: what `oxefs
// warm` recorded), what reading its train and val selections needs
// (format.OfflineChecker: shards, files), and, when needLengths
// (samples_per_episode 0), episode lengths covering them. Sources of local
// files need none of it: they are read in place.
func checkOffline(ctx context.Context, dcs []*config.DatasetConfig, needLengths bool, cfg *config.Config, env *format.Env) error {
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
		if lack := format.MissingOffline(src, env); lack != "" {
			missing = append(missing, fmt.Sprintf("dataset %s (%s): %s", dc.Name, src.Location(), lack))
			continue
		}
		have = append(have, dc) // what its selections read is checked once it is open
	}
	opened, err := openAll(ctx, have, cfg, env)
	if err != nil {
		return err
	}
	for _, o := range opened {
		if items := missingOf(ctx, o, needLengths); len(items) > 0 {
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
func missingOf(ctx context.Context, o opened, needLengths bool) []string {
	ranges := joinRanges(o.train, o.val)
	var items []string
	if oc, ok := o.ds.Data.(format.OfflineChecker); ok {
		items = oc.MissingOffline(ctx, ranges)
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

// Ranges returns the episodes the dataset's views read: its train
// selection, and its val split when it has one.
func (d *Dataset) Ranges() []episode.Range { return joinRanges(d.Train, d.Val) }

// Warm saves, while the source is reachable, what an offline open of d
// needs (format.Warmer): a remote RLDS dataset's metadata, every file a
// remote LeRobot dataset's selections read. progress, when set, is told
// each file fetched, with the total, one call at a time. It returns the
// files fetched into the disk cache; 0 for a dataset whose format saves
// nothing.
func (d *Dataset) Warm(ctx context.Context, progress func(done, total int)) (int, error) {
	w, ok := d.Data.(format.Warmer)
	if !ok {
		return 0, nil
	}
	return w.Warm(ctx, d.Ranges(), progress)
}
