package lerobot

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/episode/splitspec"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/store"

	"golang.org/x/sync/errgroup"
)

// TaskKey is the per-step text feature oxefs adds to every LeRobot
// dataset: the task of the step's task_index, from meta/tasks.parquet (what
// LeRobotDataset[i]["task"] is). A dataset that declares a feature of that
// name keeps its own.
const TaskKey = "task"

// Dataset is one opened LeRobot v3 dataset. It is safe for concurrent use.
type Dataset struct {
	// Name is the name used in episode ids and messages.
	Name   string
	Source storage.Backend
	// Meta is meta/info.json; only this format reads it. Everything above
	// the format sees Info.
	Meta *Info

	info     *episode.Info
	infoSum  [32]byte // of meta/info.json, for Identity
	tables   []string // the episode table's files
	eps      []EpisodeMeta
	tasks    map[int64]string
	splits   map[string][]run // each split's shards: runs of episodes in one data file
	first    map[fileRef]int64
	features map[string]episode.Feature
	keys     []string // of features, sorted
	videoKey []string // the video cameras info.json declares
	// cameras are the video cameras episode loads match and Files lists:
	// all of videoKey unless UseCameras narrowed them. Set before any load.
	cameras []string

	index *IndexCache // the sample tables of video files
	// src reads the files: through the disk cache (episodes' video bytes,
	// parsed ranges, data blocks) for a remote source of a store with one,
	// in place or from the source otherwise.
	src *store.Source
	// stats counts episode loads; nil without a store.
	stats *store.Stats
	// store runs the work readers share (video-table parses); nil
	// without one.
	store *store.Store

	filesMu sync.Mutex
	files   map[string]*object // data and video files, with ranges: identified once
}

// Options are what a dataset shares with the other datasets of a mix.
type Options struct {
	// Index keeps the sample tables of video files, and may be shared;
	// nil gives the dataset a cache of its own of DefaultIndexBytes.
	Index *IndexCache
	// Store, when not nil, is what the dataset reads through: a remote
	// source through its stack (retries, rate limit) and its disk cache
	// (see ranges.go), a local one in place; and what counts its episode
	// loads. Nil reads the source as it is, each time.
	Store *store.Store
}

// fileRef names a data or video file by its chunk and file index.
type fileRef struct{ chunk, file int64 }

// run is one shard of a split: count episodes from first, all in one data
// file.
type run struct{ first, count int64 }

// Open reads a LeRobot v3 dataset's metadata through src (through the
// store's stack, when opts has a store and src is remote): meta/info.json,
// the episode table and the task table. It reads no data or video file.
// An empty name is the last element of the source's location.
func Open(ctx context.Context, name string, src storage.Backend, opts Options) (*Dataset, error) {
	if name == "" {
		name = path.Base(strings.TrimRight(src.Location(), "/"))
	}
	sc := store.Direct(src)
	var stats *store.Stats
	if opts.Store != nil {
		sc, stats = opts.Store.Source(src), &opts.Store.Stats
		if !storage.IsFiler(src) {
			src = sc.Backend() // local files are read in place, like RLDS shards
		}
	}
	b, err := storage.ReadFile(ctx, src, InfoPath)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", src.Location(), err)
	}
	meta, err := ParseInfo(b)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", src.Location(), err)
	}
	d := &Dataset{Name: name, Source: src, Meta: meta, first: map[fileRef]int64{}, index: opts.Index, src: sc, stats: stats, store: opts.Store, infoSum: sha256.Sum256(b)}
	if d.index == nil {
		d.index = NewIndexCache(DefaultIndexBytes)
	}
	for _, f := range meta.Features {
		if f.IsVideo() {
			d.videoKey = append(d.videoKey, f.Key)
		}
	}
	d.cameras = d.videoKey
	if d.eps, d.tables, err = readEpisodes(ctx, src, meta, d.videoKey); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", src.Location(), err)
	}
	if d.tasks, err = readTasks(ctx, src); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", src.Location(), err)
	}
	for _, e := range d.eps {
		r := fileRef{e.DataChunk, e.DataFile}
		if f, ok := d.first[r]; !ok || e.From < f {
			d.first[r] = e.From
		}
	}
	d.splits = make(map[string][]run, len(meta.Splits))
	for _, s := range meta.Splits {
		var runs []run
		for i := s.From; i < s.To; i++ {
			e := d.eps[i]
			if n := len(runs); n > 0 {
				p := d.eps[runs[n-1].first]
				if p.DataChunk == e.DataChunk && p.DataFile == e.DataFile {
					runs[n-1].count++
					continue
				}
			}
			runs = append(runs, run{first: i, count: 1})
		}
		d.splits[s.Name] = runs
	}
	d.features = neutralFeatures(meta)
	d.keys = sortedKeys(d.features)
	d.info = d.describe()
	return d, nil
}

// neutralFeatures describes the declared features, and the task text, to
// the neutral model. Cameras (video or image) are image features; a video
// camera's Encoding is its codec.
func neutralFeatures(in *Info) map[string]episode.Feature {
	out := make(map[string]episode.Feature, len(in.Features)+1)
	for _, f := range in.Features {
		nf := episode.Feature{Key: f.Key, PerStep: true, Shape: slices.Clone(f.Shape)}
		switch {
		case f.IsVideo():
			nf.Kind, nf.DType, nf.Encoding = episode.KindImage, "uint8", "video"
			if f.Codec != "" {
				nf.Encoding = "video/" + f.Codec
			}
		case f.IsImage():
			nf.Kind, nf.DType, nf.Encoding = episode.KindImage, "uint8", "png"
		case f.DType == "string":
			nf.Kind, nf.DType, nf.Shape = episode.KindText, "string", nil
		case slices.Contains(numericDTypes, f.DType):
			nf.Kind, nf.DType = episode.KindTensor, f.DType
			if len(nf.Shape) == 1 && nf.Shape[0] == 1 && scalarColumns[f.Key] {
				nf.Shape = []int{}
			}
		default:
			nf.Kind, nf.DType = episode.KindUnsupported, f.DType
		}
		out[f.Key] = nf
	}
	if _, ok := out[TaskKey]; !ok {
		out[TaskKey] = episode.Feature{Key: TaskKey, Kind: episode.KindText, DType: "string", PerStep: true}
	}
	return out
}

// scalarColumns are LeRobot's bookkeeping columns: declared with shape [1],
// stored as one value per row.
var scalarColumns = map[string]bool{"timestamp": true, "frame_index": true, "episode_index": true, "index": true, "task_index": true}

func (d *Dataset) describe() *episode.Info {
	fs := make([]episode.Feature, 0, len(d.features))
	for _, k := range d.keys {
		fs = append(fs, d.features[k])
	}
	features, _ := episode.NewFeatures(fs) // keys are a map's: unique
	in := &episode.Info{Name: d.Name, Builder: "lerobot", Version: d.Meta.Version, Format: "lerobot", Location: d.Source.Location(), Features: features, FPS: d.Meta.FPS}
	for _, s := range d.Meta.Splits {
		sp := episode.Split{Name: s.Name}
		for _, r := range d.splits[s.Name] {
			sp.ShardEpisodes = append(sp.ShardEpisodes, r.count)
		}
		in.Splits = append(in.Splits, sp)
	}
	return in
}

// UseCameras narrows the video cameras the dataset reads to those among
// keys: an episode load matches only their frames, and Files lists only
// their video files, so that a camera no reader uses may be missing or
// damaged without costing any episode. Keys that are not video cameras
// (state, actions, image columns of the data files) are allowed and
// change nothing; a key the dataset does not have is an error naming its
// features. It must be called before any episode is loaded.
func (d *Dataset) UseCameras(keys []string) error {
	var use []string
	for _, k := range keys {
		if _, ok := d.features[k]; !ok {
			return fmt.Errorf("dataset %s: no feature %q (valid: %s)", d.Name, k, strings.Join(d.keys, ", "))
		}
		if slices.Contains(d.videoKey, k) && !slices.Contains(use, k) {
			use = append(use, k)
		}
	}
	slices.SortFunc(use, func(a, b string) int { return slices.Index(d.videoKey, a) - slices.Index(d.videoKey, b) })
	d.cameras = use
	return nil
}

// Cameras are the video cameras the dataset reads (see UseCameras).
func (d *Dataset) Cameras() []string { return slices.Clone(d.cameras) }

// Info describes the dataset to the layers above the format: splits (each
// data file an episode run is in is a shard), features.
func (d *Dataset) Info() *episode.Info { return d.info }

// Episodes are the rows of the episode table, by episode index.
func (d *Dataset) Episodes() []EpisodeMeta { return d.eps }

// Tasks is the task table: task_index → text.
func (d *Dataset) Tasks() map[int64]string { return d.tasks }

// Select resolves a split selection with TFDS's rules ("train",
// "train[:90%]", "train[10:20]+val"), over the splits of info.json.
func (d *Dataset) Select(spec string) ([]episode.Range, error) {
	return splitspec.Resolve(spec, d.info.Splits)
}

// EpisodeIndex maps a neutral episode key to the LeRobot episode index.
func (d *Dataset) EpisodeIndex(key episode.Key) (int64, error) {
	runs, ok := d.splits[key.Split]
	if !ok {
		return 0, fmt.Errorf("dataset %s: no split %q", d.Name, key.Split)
	}
	if key.Shard < 0 || key.Shard >= len(runs) || key.Record < 0 || int64(key.Record) >= runs[key.Shard].count {
		return 0, fmt.Errorf("dataset %s: no episode %s/%d/%d", d.Name, key.Split, key.Shard, key.Record)
	}
	return runs[key.Shard].first + int64(key.Record), nil
}

// EpisodeID names an episode: dataset/split/episode_index.
func (d *Dataset) EpisodeID(key episode.Key) string {
	i, err := d.EpisodeIndex(key)
	if err != nil {
		return fmt.Sprintf("%s/%s/?%d.%d", d.Name, key.Split, key.Shard, key.Record)
	}
	return episodeID(d.Name, key.Split, i)
}

func episodeID(dataset, split string, index int64) string {
	return fmt.Sprintf("%s/%s/episode_%06d", dataset, split, index)
}

// dataPath is the data file of an episode.
func (d *Dataset) dataPath(e *EpisodeMeta) (string, error) {
	return FilePath(d.Meta.DataPath, e.DataChunk, e.DataFile, "")
}

// videoPath is the video file of one camera of an episode.
func (d *Dataset) videoPath(key string, s VideoSpan) (string, error) {
	return FilePath(d.Meta.VideoPath, s.Chunk, s.File, key)
}

// object is one file of the dataset, read by ranges.
type object struct {
	src     *store.Source
	name    string
	size    int64
	version string // storage.ObjectInfo.Version when it was opened
	// blocks keeps the object's bytes in the disk cache by blocks
	// (store.KeepBlocks), when the source has a disk cache.
	blocks bool
}

func (d *Dataset) stat(ctx context.Context, name string) (*object, error) {
	info, err := d.Source.Stat(ctx, name)
	if err != nil {
		return nil, err
	}
	return &object{src: d.src, name: name, size: info.Size, version: info.Version}, nil
}

// identity is the version of the object its reads are pinned to.
func (o *object) identity() store.Object {
	return store.Object{Name: o.name, Size: o.size, Version: o.version}
}

// readAt reads len(p) bytes at off, or fewer at the end of the object with
// io.EOF: kept by the disk cache's blocks when the object has them, a read
// of its own otherwise.
func (o *object) readAt(ctx context.Context, p []byte, off int64) (int, error) {
	return o.clip(p, off, func(q []byte) (int, error) {
		keep := store.KeepNone
		if o.blocks {
			keep = store.KeepBlocks
		}
		n, err := o.src.ReadAt(ctx, o.identity(), q, off, store.ReadOptions{Keep: keep})
		return n, changed(o.name, "it was first read", err)
	})
}

// clip reads with read the part of p at off that lies within the object,
// and reports io.EOF when that part is shorter than p, as io.ReaderAt does.
func (o *object) clip(p []byte, off int64, read func(q []byte) (int, error)) (int, error) {
	if off < 0 || off > o.size {
		return 0, fmt.Errorf("%s: read at %d of %d bytes", o.name, off, o.size)
	}
	want := min(int64(len(p)), o.size-off)
	if want == 0 {
		return 0, io.EOF
	}
	n, err := read(p[:want])
	if err == nil && want < int64(len(p)) {
		err = io.EOF
	}
	return n, err
}

// boundReader is an io.ReaderAt over an object for a library that takes
// one (parquet, mp4): it reads under ctx and remembers the first error
// that came from the store, so that a failed read is told apart from bad
// bytes after the library wraps it.
type boundReader struct {
	ctx context.Context
	obj *object
	// ahead, when not 0, makes a read of fewer bytes read that many from
	// its offset and keep them for the reads that follow: for a parser
	// that walks small box headers, one request instead of one per
	// header.
	ahead int
	// exact keeps each read from the object in the disk cache as a range
	// of exactly its bytes: a parser reads the same ranges of the same
	// file each time, so they come from disk the next.
	exact bool
	mu    sync.Mutex
	err   error
	n     atomic.Int64 // bytes read from the object
	bufMu sync.Mutex
	buf   []byte // bytes [bufAt, bufAt+len(buf)) of the object
	bufAt int64
}

func (r *boundReader) ReadAt(p []byte, off int64) (int, error) {
	if r.ahead > 0 && len(p) < r.ahead {
		r.bufMu.Lock()
		defer r.bufMu.Unlock()
		if off < r.bufAt || off+int64(len(p)) > r.bufAt+int64(len(r.buf)) {
			if cap(r.buf) < r.ahead {
				r.buf = make([]byte, r.ahead)
			}
			n, err := r.read(r.buf[:r.ahead], off)
			r.buf, r.bufAt = r.buf[:n], off
			if n < len(p) {
				copy(p, r.buf)
				return n, err
			}
		}
		return copy(p, r.buf[off-r.bufAt:]), nil
	}
	return r.read(p, off)
}

// read reads from the object, remembering the store's error.
func (r *boundReader) read(p []byte, off int64) (int, error) {
	n, err := r.readCached(p, off)
	r.n.Add(int64(n))
	if err != nil && err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
	return n, err
}

// readCached reads from the object, keeping exactly these bytes in the
// disk cache when r is exact (and the source has a disk cache).
func (r *boundReader) readCached(p []byte, off int64) (int, error) {
	o := r.obj
	if !r.exact {
		return o.readAt(r.ctx, p, off)
	}
	return o.clip(p, off, func(q []byte) (int, error) {
		n, err := o.src.ReadAt(r.ctx, o.identity(), q, off, store.ReadOptions{Keep: store.KeepRange})
		return n, changed(o.name, "it was first read", err)
	})
}

// failed returns the store's first error, if any.
func (r *boundReader) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// video returns the parsed sample table of the video file at path, from
// the dataset's index cache or parsed now.
func (d *Dataset) video(ctx context.Context, path string) (*videoIndex, error) {
	return d.index.get(ctx, d.Source.Location()+"/"+path, d.shared, func(ctx context.Context) (*videoIndex, error) {
		return parseIndex(ctx, d, path)
	})
}

// shared begins work that other readers may wait for: under the store's
// lifetime, or, without a store, under ctx's values but not its
// cancellation.
func (d *Dataset) shared(ctx context.Context) (context.Context, func(), bool) {
	if d.store == nil {
		return context.WithoutCancel(ctx), func() {}, true
	}
	done, ok := d.store.Begin()
	if !ok {
		return nil, nil, false
	}
	return d.store.Context(), done, true
}

// corruptBytes marks an error as the dataset's bytes being bad, not a read
// failing.
type corruptBytes struct{ err error }

func (c *corruptBytes) Error() string { return c.err.Error() }
func (c *corruptBytes) Unwrap() error { return c.err }

func corrupt(err error) error { return &corruptBytes{err} }

func isCorrupt(err error) bool {
	var c *corruptBytes
	return errors.As(err, &c)
}

// Key returns the neutral key of the episode with LeRobot index i, in the
// first split (by name) that holds it.
func (d *Dataset) Key(i int64) (episode.Key, bool) {
	for _, s := range d.Meta.Splits {
		for k, r := range d.splits[s.Name] {
			if i >= r.first && i < r.first+r.count {
				return episode.Key{Split: s.Name, Shard: k, Record: int(i - r.first)}, true
			}
		}
	}
	return episode.Key{}, false
}

// Backend is the source the dataset is read from.
func (d *Dataset) Backend() storage.Backend { return d.Source }

// Lengths returns every split's episode lengths, in split order, from the
// episode table: LeRobot stores them, so nothing is indexed.
func (d *Dataset) Lengths() map[string][]int32 {
	out := make(map[string][]int32, len(d.Meta.Splits))
	for _, s := range d.Meta.Splits {
		ls := make([]int32, 0, s.To-s.From)
		for i := s.From; i < s.To; i++ {
			ls = append(ls, int32(min(d.eps[i].Length, math.MaxInt32)))
		}
		out[s.Name] = ls
	}
	return out
}

// Scan loads every episode of segs, at most workers segments at once, each
// segment's episodes in order by one goroutine. visit is called with the
// segment's index and each episode, or with the *episode.CorruptError of
// an episode that could not be read; any other load error, or an error
// visit returns, stops the scan.
func (d *Dataset) Scan(ctx context.Context, segs []episode.Segment, workers int, visit func(seg int, key episode.Key, ep episode.Episode, err error) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(workers, 1))
	var mu sync.Mutex
	for k, sg := range segs {
		g.Go(func() error {
			for r := sg.First; r < sg.First+sg.Count; r++ {
				key := episode.Key{Split: sg.Split, Shard: sg.Shard, Record: r}
				ep, err := d.Episode(gctx, key)
				if err != nil && !errors.Is(err, episode.ErrCorrupt) {
					return err
				}
				mu.Lock()
				err = visit(k, key, ep, err)
				mu.Unlock()
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}
