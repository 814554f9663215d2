package formats

import (
	"context"
	"fmt"
	"strings"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/format/rlds"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/store"
)

const rldsName = "RLDS"

// rldsFormat reads RLDS datasets (TFDS TFRecord shards): every source that
// no other format claims.
var rldsFormat = format.Format{
	Name: rldsName,
	Open: func(ctx context.Context, name string, src storage.Backend, env *format.Env) (format.Dataset, error) {
		d, err := rlds.Open(ctx, env.Store, name, src)
		if err != nil {
			return nil, err
		}
		return &rldsDataset{Dataset: d, fetcher: rldsFetcher{env.Store}}, nil
	},
	MissingOffline: func(src storage.Backend, env *format.Env) string {
		if files := rlds.MissingOffline(env.Store, src); len(files) > 0 {
			return "metadata " + strings.Join(files, ", ")
		}
		return ""
	},
	Synth: synthRLDS,
}

// rldsDataset is an RLDS dataset with the capabilities of package format.
type rldsDataset struct {
	*rlds.Dataset
	fetcher rldsFetcher
}

var (
	_ format.Dataset        = (*rldsDataset)(nil)
	_ format.LengthIndexer  = (*rldsDataset)(nil)
	_ format.SplitChecker   = (*rldsDataset)(nil)
	_ format.Deriver        = (*rldsDataset)(nil)
	_ format.ShardFetcher   = (*rldsDataset)(nil)
	_ format.Warmer         = (*rldsDataset)(nil)
	_ format.OfflineChecker = (*rldsDataset)(nil)
	_ format.Describer      = (*rldsDataset)(nil)
	_ format.Named          = (*rldsDataset)(nil)
)

// FormatName is "RLDS".
func (d *rldsDataset) FormatName() string { return rldsName }

// Unwrap returns the RLDS dataset itself, for tests and tools that read
// this one format.
func (d *rldsDataset) Unwrap() *rlds.Dataset { return d.Dataset }

// LoadLengths returns the episode-length index built earlier.
func (d *rldsDataset) LoadLengths() (map[string][]int32, error) {
	l, err := d.Dataset.LoadLengths()
	if err != nil {
		return nil, err
	}
	return l.Splits, nil
}

// BuildLengths indexes the splits the index lacks (rlds.Dataset.BuildLengths).
func (d *rldsDataset) BuildLengths(ctx context.Context, splits []string, workers int, progress func(done int)) (map[string][]int32, error) {
	l, err := d.Dataset.BuildLengths(ctx, splits, workers, progress)
	if err != nil {
		return nil, err
	}
	return l.Splits, nil
}

// Describe describes the dataset for `oxefs inspect`.
func (d *rldsDataset) Describe() fmt.Stringer { return d.Dataset.Describe() }

// Fetcher fetches the shards and records of remote RLDS datasets.
func (d *rldsDataset) Fetcher() format.Fetcher { return d.fetcher }

// Warm records the dataset's metadata for an offline open; its shards are
// fetched by its Fetcher.
func (d *rldsDataset) Warm(ctx context.Context, _ []episode.Range, _ func(done, total int)) (int, error) {
	return 0, d.SaveOffline(ctx)
}

// maxListed bounds the files named per dataset in what MissingOffline
// lists.
const maxListed = 8

// MissingOffline lists the shards of ranges that are not cached.
func (d *rldsDataset) MissingOffline(_ context.Context, ranges []episode.Range) []string {
	segs, err := d.Info().Segments(ranges)
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
		name, ok, err := d.ShardCached(sg.Split, sg.Shard)
		switch {
		case err != nil:
			items = append(items, err.Error())
		case !ok:
			shards = append(shards, name)
		}
	}
	if n := len(shards); n > 0 {
		items = append(items, fmt.Sprintf("%d of the %d shards of its selections: %s", n, total, listed(shards)))
	}
	return items
}

// listed names at most maxListed of names, then how many more there are.
func listed(names []string) string {
	n := len(names)
	out := strings.Join(names[:min(n, maxListed)], ", ")
	if n > maxListed {
		out += fmt.Sprintf(" and %d more", n-maxListed)
	}
	return out
}

// rldsFetcher fetches through the store that opened the datasets.
type rldsFetcher struct{ store *store.Store }

var _ format.Fetcher = rldsFetcher{}

func (f rldsFetcher) FetchEpisodes(ctx context.Context, refs []format.EpisodeRef) error {
	out := make([]rlds.EpisodeRef, 0, len(refs))
	for _, r := range refs {
		out = append(out, rlds.EpisodeRef{Dataset: r.Dataset.(*rldsDataset).Dataset, Ref: r.Key})
	}
	return rlds.FetchEpisodes(ctx, f.store, out)
}

func (f rldsFetcher) Prefetch(ctx context.Context, refs []format.ShardRef, parallel int, progress func()) (int, error) {
	out := make([]rlds.ShardRef, 0, len(refs))
	for _, r := range refs {
		out = append(out, shardRef(r))
	}
	return rlds.Prefetch(ctx, f.store, out, parallel, progress)
}

func (f rldsFetcher) ShardCached(r format.ShardRef) (bool, error) {
	_, ok, err := r.Dataset.(*rldsDataset).ShardCached(r.Split, r.Shard)
	return ok, err
}

func shardRef(r format.ShardRef) rlds.ShardRef {
	return rlds.ShardRef{Dataset: r.Dataset.(*rldsDataset).Dataset, Split: r.Split, Shard: r.Shard}
}
