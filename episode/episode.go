package episode

import (
	"context"
	"fmt"
)

// Key names one episode of a dataset: the Index-th episode of shard Shard
// of split Split. A shard is the format's unit of storage locality (an RLDS
// TFRecord file, a LeRobot data file); the plan reads a dataset a few
// consecutive shards at a time.
type Key struct {
	Split  string
	Shard  int
	Record int
}

// Range is a run of episodes of one split, [From, To) in the split's episode
// order (shard by shard), as a split selection such as "train[:10%]" yields.
type Range struct {
	Split    string
	From, To int64
}

// Len is the number of episodes in the range.
func (r Range) Len() int64 { return r.To - r.From }

// Segment is a run of consecutive episodes of one shard, part of a split
// selection.
type Segment struct {
	Split string // the split the shard belongs to: "train"
	Shard int    // shard index within the split
	First int    // first record within the shard
	Count int    // number of records
}

// Segments cuts ranges at shard boundaries, in order.
func (in *Info) Segments(ranges []Range) ([]Segment, error) {
	var segs []Segment
	for _, r := range ranges {
		si, ok := in.Split(r.Split)
		if !ok {
			return nil, fmt.Errorf("no split %q", r.Split)
		}
		for i := r.From; i < r.To; {
			shard, rec := si.Locate(i)
			if shard < 0 {
				return nil, fmt.Errorf("split %s: episode %d out of range", r.Split, i)
			}
			n := min(r.To-i, si.ShardEpisodes[shard]-rec)
			segs = append(segs, Segment{Split: r.Split, Shard: shard, First: int(rec), Count: int(n)})
			i += n
		}
	}
	return segs, nil
}

// Split is one split of a dataset.
type Split struct {
	Name string
	// Bytes is the size of the split's stored data, 0 when unknown.
	Bytes int64
	// ShardEpisodes holds the number of episodes of each shard, in order.
	ShardEpisodes []int64
}

// Episodes is the number of episodes of the split.
func (s Split) Episodes() int64 {
	var n int64
	for _, e := range s.ShardEpisodes {
		n += e
	}
	return n
}

// Locate maps the split's i-th episode to its shard and its record within
// the shard; shard is -1 when i is out of range. Empty shards are never
// chosen.
func (s Split) Locate(i int64) (shard int, record int64) {
	if i < 0 {
		return -1, -1
	}
	for k, n := range s.ShardEpisodes {
		if i < n {
			return k, i
		}
		i -= n
	}
	return -1, -1
}

// Info describes an opened dataset.
type Info struct {
	// Name is the name used in episode ids and messages.
	Name string
	// Builder and Version are the dataset's own name and version, as its
	// metadata gives them.
	Builder, Version string
	// Format names the format that read the dataset ("rlds").
	Format string
	// Location is where the dataset lives: a directory or gs://bucket/prefix.
	Location string
	Splits   []Split
	Features *Features
	// FPS is the frame rate the dataset's metadata declares (LeRobot's
	// info.json), 0 when it declares none (RLDS).
	FPS float64
}

// Split returns the named split.
func (in *Info) Split(name string) (Split, bool) {
	for _, s := range in.Splits {
		if s.Name == name {
			return s, true
		}
	}
	return Split{}, false
}

// SplitNames returns the names of the splits, in the dataset's order.
func (in *Info) SplitNames() []string {
	names := make([]string, len(in.Splits))
	for i, s := range in.Splits {
		names[i] = s.Name
	}
	return names
}

// Episode is one loaded episode. It is immutable and may be shared by many
// readers at once: nothing it returns may be modified.
type Episode interface {
	// ID is stable across runs and machines: dataset/split/shard/record.
	ID() string
	// Dataset is the name of the dataset the episode was loaded for.
	Dataset() string
	Key() Key
	// Steps is the number of steps.
	Steps() int
	// Size is the number of bytes the episode holds in memory.
	Size() int
	// Feature returns the view of one feature. A key the dataset does not
	// declare is an *UnknownFeatureError; a declared key whose values are
	// missing or of the wrong count is a *CorruptError.
	Feature(key string) (View, error)
	// Corrupt wraps err in a *CorruptError that names where the episode is
	// stored.
	Corrupt(err error) error
	// Rename returns the same episode under another dataset's name (its ID
	// and its errors name that dataset), sharing the parsed data: two mix
	// entries over one source share one load.
	Rename(dataset string) Episode
}

// Numbered is an Episode whose steps are numbered across its dataset, as
// LeRobot's index column numbers every frame of a dataset: step s is the
// dataset's frame FirstIndex()+s (LeRobot's dataset_from_index +
// frame_index). RLDS episodes have no such numbering.
type Numbered interface {
	Episode
	FirstIndex() int64
}

// Recycled is an Episode whose memory its format reuses for a later load
// once no one holds it any more (an RLDS episode's record buffer). Its
// loader holds it when it is returned; a holder that is done calls Release
// once, after which neither it nor anything it took from the episode (a
// Bytes slice) may be used. A holder that never releases simply keeps the
// memory from being reused: the garbage collector frees it as it does for
// any other episode.
type Recycled interface {
	Episode
	// Retain takes one more hold, and reports false when the episode's
	// memory has already been given back (the episode must not be used).
	Retain() bool
	// Release gives back one hold.
	Release()
}

// Lender is a Dataset that lends episodes for a while, so that their
// memory can be reused once given back: Lend returns the episode and, when
// the caller must give it back, the hold to Release once it is done with
// the episode; hold is nil when there is nothing to give back.
type Lender interface {
	Lend(ctx context.Context, key Key) (ep Episode, hold Recycled, err error)
}

// View reads one feature of one episode.
type View interface {
	Spec() Feature
	// Per is the number of values per step (1 for byte-valued features).
	Per() int
	// Bytes returns the step-th value of a byte-valued feature (an encoded
	// image, a text); step is 0 for an episode-level feature. The slice is
	// shared and must not be modified.
	Bytes(step int) []byte
	// Float64s appends every value of a numeric feature to dst, step-major:
	// value i of step s is at s*Per()+i.
	Float64s(dst []float64) ([]float64, error)
	// Int64s appends every value of an integer feature to dst, step-major.
	Int64s(dst []int64) ([]int64, error)
}

// Dataset is an opened dataset of any format.
type Dataset interface {
	Info() *Info
	// Select resolves a split selection ("train", "train[:10%]+val") to
	// episode ranges.
	Select(spec string) ([]Range, error)
	// Episode loads one episode. Loads are not cached here; the episode
	// cache above the formats keeps what is reused.
	Episode(ctx context.Context, key Key) (Episode, error)
}
