package format

import (
	"context"
	"fmt"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/storage"
)

// Dataset is an opened dataset of any format: the neutral
// episode.Dataset, and the few things the mix asks of every format.
type Dataset interface {
	episode.Dataset
	// EpisodeID names an episode in logs and batch metadata.
	EpisodeID(key episode.Key) string
	// Backend is the source the dataset is read from.
	Backend() storage.Backend
	// Scan loads every episode of segs, workers segments at once, and
	// calls visit with each, in no particular order; an episode that
	// cannot be loaded comes with its error. visit's error ends the scan.
	Scan(ctx context.Context, segs []episode.Segment, workers int, visit func(seg int, key episode.Key, ep episode.Episode, err error) error) error
}

// LengthLoader is a dataset that may know its episodes' lengths without
// reading them: from its own tables (LeRobot), or from an index built
// earlier (RLDS; see LengthIndexer).
type LengthLoader interface {
	// LoadLengths returns each split's episode lengths, by episode index
	// within the split, or an error (fs.ErrNotExist: none known).
	LoadLengths() (map[string][]int32, error)
}

// LengthIndexer is a dataset whose episode lengths are known only after a
// pass over its episodes, which it keeps in an index for LoadLengths.
type LengthIndexer interface {
	LengthLoader
	// BuildLengths indexes the splits that the index lacks, workers
	// shards at once, telling progress each batch of episodes read, and
	// returns the whole index.
	BuildLengths(ctx context.Context, splits []string, workers int, progress func(done int)) (map[string][]int32, error)
}

// SplitChecker is a dataset whose split's files can be checked against
// its metadata before anything is planned (RLDS: the shards
// dataset_info.json lists).
type SplitChecker interface {
	CheckSplit(split string) error
}

// EpisodeBytes is a loaded episode whose decode reads more remote bytes
// than its load did (a LeRobot episode's video samples). FetchBytes
// brings them into the disk cache, so that a build can ask for every
// byte its batch needs at once, before any decoding; it does nothing
// for bytes that are there already or read in place.
type EpisodeBytes interface {
	FetchBytes(ctx context.Context) error
}

// CameraSelector is a dataset whose cameras are files of their own
// (LeRobot's video files) and that can leave out those no reader uses:
// their files are then never read, so that one missing or damaged costs
// nothing to a mix that does not read it.
type CameraSelector interface {
	// UseCameras names the image features read; other cameras' files are
	// left alone. It is called once, before any episode is loaded.
	UseCameras(keys []string) error
}

// Auditor is a dataset whose files can be checked as wholes, beyond what
// each episode's load checks (LeRobot: data rows no episode owns, video
// files whose frames disagree with the episode table). `oxefs check`
// reports what it finds.
type Auditor interface {
	// Audit checks the files that hold the episodes of ranges. A file
	// that cannot be read at all is left to the episode loads.
	Audit(ctx context.Context, ranges []episode.Range) ([]Finding, error)
}

// Kinds of Finding.
const (
	OrphanRow  = "orphaned_row" // a row of the data no episode owns
	FrameCount = "frame_count"  // a video's frames disagree with the episodes' rows
)

// Finding is one defect an Auditor found.
type Finding struct {
	Kind string
	// File is the file, relative to the dataset's root.
	File string
	// Episode names the episode the defect lies in (as EpisodeID does),
	// or is "" when it lies in none.
	Episode string
	Detail  string
}

// Deriver is a dataset that keeps files derived from its bytes (the
// normalisation statistics) under its identity: what was saved for other
// bytes is not found.
type Deriver interface {
	// LoadDerived returns the file name saved under key for the dataset's
	// current bytes; fs.ErrNotExist when there is none.
	LoadDerived(ctx context.Context, name, key string) ([]byte, error)
	// SaveDerived saves b as file name under key.
	SaveDerived(ctx context.Context, name, key string, b []byte) error
}

// Describer is a dataset that describes itself for `oxefs inspect`: for
// people with String, and as JSON.
type Describer interface {
	Describe() fmt.Stringer
}

// Warmer is a dataset that saves, while its source is reachable, what an
// offline open of it needs: RLDS its metadata (its shards are fetched by
// its Fetcher), LeRobot every file the selections read.
type Warmer interface {
	// Warm saves what reading ranges offline needs, telling progress each
	// file fetched with the total, one call at a time. It returns the
	// files it fetched into the disk cache.
	Warm(ctx context.Context, ranges []episode.Range, progress func(done, total int)) (files int, err error)
}

// OfflineChecker is a dataset that can say what the cache lacks to read
// ranges offline.
type OfflineChecker interface {
	// MissingOffline lists what is missing, one item each; nil when
	// nothing is.
	MissingOffline(ctx context.Context, ranges []episode.Range) []string
}

// ShardFetcher is a dataset whose remote bytes are worth fetching ahead
// of its reads: whole shards, in plan order, and each batch's episodes
// before its samples are decoded.
type ShardFetcher interface {
	// Fetcher is the fetcher of the dataset's format: one serves every
	// dataset of that format opened with the same Env.
	Fetcher() Fetcher
}

// Fetcher fetches remote bytes of many datasets of one format into the
// disk cache. Refs of local sources are skipped: they are read in place.
type Fetcher interface {
	// FetchEpisodes brings a batch's episodes into the disk cache, all at
	// once, and waits for them; it fails as soon as one fails with
	// storage.ErrUnavailable and leaves other errors to the reads.
	FetchEpisodes(ctx context.Context, refs []EpisodeRef) error
	// Prefetch fetches whole shards in the given order, at most parallel
	// at a time and at most half the disk cache, telling progress after
	// each; it returns the number now cached.
	Prefetch(ctx context.Context, refs []ShardRef, parallel int, progress func()) (int, error)
	// ShardCached reports whether a shard is in the disk cache.
	ShardCached(ref ShardRef) (bool, error)
}

// ShardRef names one shard of one dataset.
type ShardRef struct {
	Dataset Dataset
	Split   string
	Shard   int
}

// EpisodeRef names one episode of one dataset.
type EpisodeRef struct {
	Dataset Dataset
	Key     episode.Key
}

// FetcherOf returns d's fetcher, or nil when its format fetches nothing
// ahead.
func FetcherOf(d Dataset) Fetcher {
	if f, ok := d.(ShardFetcher); ok {
		return f.Fetcher()
	}
	return nil
}

// FetchEpisodes fetches the episodes of refs through their formats'
// fetchers (see Fetcher.FetchEpisodes); episodes of a format without one
// are left to their reads.
func FetchEpisodes(ctx context.Context, refs []EpisodeRef) error {
	fs, groups := group(refs, func(r EpisodeRef) Dataset { return r.Dataset })
	for i, f := range fs {
		if err := f.FetchEpisodes(ctx, groups[i]); err != nil {
			return err
		}
	}
	return nil
}

// Prefetch fetches the shards of refs, in order, through their formats'
// fetchers (see Fetcher.Prefetch) and returns how many are now cached.
func Prefetch(ctx context.Context, refs []ShardRef, parallel int, progress func()) (int, error) {
	fs, groups := group(refs, func(r ShardRef) Dataset { return r.Dataset })
	total := 0
	for i, f := range fs {
		n, err := f.Prefetch(ctx, groups[i], parallel, progress)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// group splits refs by their datasets' fetchers, keeping the order within
// each, and drops those without one.
func group[R any](refs []R, dataset func(R) Dataset) ([]Fetcher, [][]R) {
	var (
		fs     []Fetcher
		groups [][]R
	)
	for _, r := range refs {
		f := FetcherOf(dataset(r))
		if f == nil {
			continue
		}
		i := 0
		for i < len(fs) && fs[i] != f {
			i++
		}
		if i == len(fs) {
			fs = append(fs, f)
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r)
	}
	return fs, groups
}

// Named is a dataset that says which format read it.
type Named interface {
	FormatName() string
}

// NameOf names d's format ("LeRobot", "RLDS"), or "" when d does not say.
func NameOf(d Dataset) string {
	if n, ok := d.(Named); ok {
		return n.FormatName()
	}
	return ""
}
