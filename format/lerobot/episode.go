package lerobot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/oxefs/oxefs/episode"
)

// Tolerance is how far, in seconds, a step's timestamp may lie from the
// frame of the video that shows it: LeRobot's default tolerance_s. A step
// with no frame that near is bad data of its episode.
const Tolerance = 1e-4

// Episode is one loaded LeRobot episode: its rows of the data file (every
// numeric, image and text column), its tasks, and for each video camera the
// samples of the video file that show its steps. It is immutable and
// shared; nothing it returns may be modified.
type Episode struct {
	d     *Dataset
	name  string // the dataset name the episode is loaded for
	key   episode.Key
	index int64
	from  int64 // the dataset's frame index of step 0 (dataset_from_index)
	id    string
	where string // the data file, for errors
	steps int
	size  int
	read  int64 // bytes of its data file the load read

	nums   map[string][]float64 // numeric features, step-major
	ints   map[string][]int64   // integer features, step-major
	blobs  map[string][][]byte  // images and text, per step
	videos map[string]*videoSteps
}

// videoSteps is one video camera of an episode: its file, per step the
// sample showing it, and the samples of the file the episode needs (see
// videoIndex.window), copied so that the episode does not hold the file's
// whole index. Sample numbers are the file's.
type videoSteps struct {
	id, codec string
	config    []byte
	obj       *object
	timescale float64 // of the track's times
	shown     []int32
	first     int
	samples   []sample
	span      byteSpan // the file's bytes the samples occupy
	// fetched is set once FetchBytes brought span into the disk cache: a
	// warm batch then asks the cache nothing more (should the range be
	// evicted later, the decode fetches it again).
	fetched atomic.Bool
}

var _ episode.Numbered = (*Episode)(nil)

// Episode loads one episode: its rows of its data file, checked against
// the episode table, and the index of each of its video files, with every
// step's timestamp matched to a frame. Bad data (a missing or unreadable
// file or column, rows that are not the episode's, a step with no frame in
// its video) is an *episode.CorruptError; a read that failed is returned
// as it is.
func (d *Dataset) Episode(ctx context.Context, key episode.Key) (episode.Episode, error) {
	i, err := d.EpisodeIndex(key)
	if err != nil {
		return nil, err
	}
	return d.load(ctx, key, i)
}

func (d *Dataset) load(ctx context.Context, key episode.Key, index int64) (*Episode, error) {
	e := &d.eps[index]
	ep := &Episode{d: d, name: d.Name, key: key, index: index, from: e.From, id: episodeID(d.Name, key.Split, index), steps: int(e.Length),
		nums: map[string][]float64{}, ints: map[string][]int64{}, blobs: map[string][][]byte{}, videos: map[string]*videoSteps{}}
	path, err := d.dataPath(e)
	if err != nil {
		return nil, ep.Corrupt(err)
	}
	ep.where = path
	if err := d.checked(ctx, path, d.dataFile, func() error { return ep.readRows(ctx, e, path) }); err != nil {
		return nil, err
	}
	if err := ep.matchVideos(ctx, e); err != nil {
		return nil, err
	}
	if d.stats != nil {
		d.stats.Loaded(ep.read)
	}
	return ep, nil
}

// readRows reads the episode's rows of its data file.
func (ep *Episode) readRows(ctx context.Context, e *EpisodeMeta, path string) error {
	d := ep.d
	obj, err := d.dataFile(ctx, path)
	if errors.Is(err, fs.ErrNotExist) {
		return ep.Corrupt(fmt.Errorf("%w: %v", episode.ErrMissingShard, err))
	}
	if err != nil {
		return err
	}
	r := &boundReader{ctx: ctx, obj: obj}
	t, err := openTable(path, r, obj.size)
	// fail returns a read that failed as it is, and anything else as bad
	// data of the episode.
	fail := func(err error) error {
		if rerr := r.failed(); rerr != nil {
			return rerr
		}
		return ep.Corrupt(err)
	}
	if err != nil {
		return fail(err)
	}
	first := d.first[fileRef{e.DataChunk, e.DataFile}]
	from, to := e.From-first, e.To-first
	if to > t.rows() {
		return fail(fmt.Errorf("the episode table puts episode %d at rows [%d, %d) of %s, which has %d rows", e.Index, from, to, path, t.rows()))
	}
	if err := ep.checkRows(t, from, to, e); err != nil {
		return fail(err)
	}
	var size int
	for _, k := range d.keys {
		f := d.features[k]
		switch {
		case f.Kind == episode.KindImage && f.Encoding == "png":
			c, err := t.column(k, "bytes")
			if err != nil {
				return fail(err)
			}
			b, err := c.bytes(from, to)
			if err != nil {
				return fail(err)
			}
			for s, img := range b {
				if img == nil {
					return fail(fmt.Errorf("%s: step %d has no image bytes", k, s))
				}
				size += len(img)
			}
			ep.blobs[k] = b
		case f.Kind == episode.KindText && k == TaskKey && !d.declares(k):
			b, err := ep.taskTexts(t, from, to)
			if err != nil {
				return fail(err)
			}
			ep.blobs[k] = b
		case f.Kind == episode.KindText:
			c, err := t.column(k)
			if err != nil {
				return fail(err)
			}
			b, err := c.bytes(from, to)
			if err != nil {
				return fail(err)
			}
			ep.blobs[k] = b
		case f.Kind == episode.KindTensor:
			c, err := t.column(k)
			if err != nil {
				return fail(err)
			}
			per := max(valuesPer(f.Shape), 1)
			if strings.HasPrefix(f.DType, "int") || strings.HasPrefix(f.DType, "uint") || f.DType == "bool" {
				if per == 1 && !c.repeated() {
					v, err := c.int64s(from, to)
					if err != nil {
						return fail(err)
					}
					ep.ints[k] = v
					size += 8 * len(v)
					continue
				}
			}
			v, err := c.float64s(from, to, per)
			if err != nil {
				return fail(err)
			}
			ep.nums[k] = v
			size += 8 * len(v)
		}
	}
	ep.size = size + 64*len(d.features)
	ep.read = r.n.Load()
	return nil
}

// checkRows checks that the rows are the episode's: episode_index is the
// episode on every row, and index (when there is one) runs from the
// episode's first global row.
func (ep *Episode) checkRows(t *table, from, to int64, e *EpisodeMeta) error {
	c, err := t.column("episode_index")
	if err != nil {
		return err
	}
	idx, err := c.int64s(from, to)
	if err != nil {
		return err
	}
	for s, v := range idx {
		if v != e.Index {
			return fmt.Errorf("row %d of %s (step %d) belongs to episode %d, not %d: the episode table and the data disagree", from+int64(s), ep.where, s, v, e.Index)
		}
	}
	if !t.has("index") {
		return nil
	}
	if c, err = t.column("index"); err != nil {
		return err
	}
	if idx, err = c.int64s(from, to); err != nil {
		return err
	}
	for s, v := range idx {
		if v != e.From+int64(s) {
			return fmt.Errorf("step %d has index %d, the episode table says %d", s, v, e.From+int64(s))
		}
	}
	return nil
}

// taskTexts reads task_index and maps it through the task table.
func (ep *Episode) taskTexts(t *table, from, to int64) ([][]byte, error) {
	c, err := t.column("task_index")
	if err != nil {
		return nil, err
	}
	idx, err := c.int64s(from, to)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(idx))
	for s, k := range idx {
		text, ok := ep.d.tasks[k]
		if !ok {
			return nil, fmt.Errorf("step %d: task_index %d is not in %s", s, k, TasksPath)
		}
		out[s] = []byte(text)
	}
	return out, nil
}

// timestamps returns the steps' timestamps in seconds: the timestamp
// column, read now, or frame_index/fps when the data has none.
func (ep *Episode) timestamps() []float64 {
	if v, ok := ep.nums["timestamp"]; ok && len(v) == ep.steps {
		return v
	}
	ts := make([]float64, ep.steps)
	for s := range ts {
		ts[s] = float64(s) / ep.d.Meta.FPS
	}
	return ts
}

// matchVideos finds, for every video camera the dataset reads (see
// UseCameras) and step, the frame that shows it: the sample of the camera's video file whose presentation time is
// nearest from_timestamp + timestamp, which must be within Tolerance.
func (ep *Episode) matchVideos(ctx context.Context, e *EpisodeMeta) error {
	d := ep.d
	ts := ep.timestamps()
	for _, k := range d.cameras {
		span, ok := e.Videos[k]
		if !ok {
			return ep.Corrupt(fmt.Errorf("the episode table has no video file for %s", k))
		}
		path, err := d.videoPath(k, span)
		if err != nil {
			return ep.Corrupt(err)
		}
		vf, err := d.video(ctx, path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// A listed file that is not there: the episode's, like a
			// missing data file, never the reader's "no such file".
			return ep.Corrupt(fmt.Errorf("%w: camera %s: %v", episode.ErrMissingShard, k, err))
		case isCorrupt(err):
			return ep.Corrupt(fmt.Errorf("camera %s: %w", k, err))
		case err != nil:
			return err
		}
		vs := &videoSteps{id: vf.id, codec: vf.codec, config: vf.config, obj: vf.obj, timescale: vf.timescale, shown: make([]int32, ep.steps)}
		for s, t := range ts {
			at := span.FromTimestamp + t
			j, dist := vf.nearest(at)
			if j < 0 || !(dist <= Tolerance) || math.IsNaN(at) {
				return ep.Corrupt(fmt.Errorf("camera %s step %d: timestamp %.4fs (from_timestamp %.4fs + %.4fs) has no frame in %s within %gs: the episode lies outside its video",
					k, s, at, span.FromTimestamp, t, path, Tolerance))
			}
			vs.shown[s] = int32(j)
		}
		if ep.steps > 0 {
			vs.first, vs.samples = vf.window(vs.shown)
			if err := vf.lost(vs.samples); err != nil {
				return ep.Corrupt(fmt.Errorf("camera %s: %w", k, err))
			}
			vs.span = spanOf(vs.samples)
		}
		ep.size += len(vs.shown)*4 + len(vs.samples)*sampleSize
		ep.videos[k] = vs
	}
	return nil
}

// declares reports whether info.json declares the feature.
func (d *Dataset) declares(key string) bool {
	_, ok := d.Meta.Feature(key)
	return ok
}

func valuesPer(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// ID is dataset/split/episode_NNNNNN, with LeRobot's episode index.
func (ep *Episode) ID() string { return ep.id }

// Dataset is the name of the dataset the episode was loaded for.
func (ep *Episode) Dataset() string { return ep.name }

// Key is the episode's neutral key.
func (ep *Episode) Key() episode.Key { return ep.key }

// Steps is the episode's length.
func (ep *Episode) Steps() int { return ep.steps }

// FirstIndex is the dataset's frame index of the episode's first step
// (dataset_from_index): LeRobot's index column is FirstIndex()+frame_index.
func (ep *Episode) FirstIndex() int64 { return ep.from }

// Size is about the bytes the episode holds: its columns and images.
// Video frames are decoded on demand and are not held.
func (ep *Episode) Size() int { return ep.size }

// Rename returns the same episode under another dataset's name.
func (ep *Episode) Rename(dataset string) episode.Episode {
	c := *ep
	c.name = dataset
	c.id = episodeID(dataset, ep.key.Split, ep.index)
	return &c
}

// Corrupt wraps err as bad data of the episode, naming its data file and
// episode index.
func (ep *Episode) Corrupt(err error) error {
	where := ep.where
	if where == "" {
		where = "episode table"
	}
	return &episode.CorruptError{Dataset: ep.name, Shard: where, Record: int(ep.index), Err: err}
}

// Feature returns the view of one feature.
func (ep *Episode) Feature(key string) (episode.View, error) {
	f, ok := ep.d.features[key]
	if !ok {
		return nil, &episode.UnknownFeatureError{Dataset: ep.name, Key: key, Valid: ep.d.keys}
	}
	if vs, ok := ep.videos[key]; ok {
		return &videoView{spec: f, ep: ep, v: vs}, nil
	}
	if slices.Contains(ep.d.videoKey, key) {
		return nil, fmt.Errorf("dataset %s: camera %s is not read (the dataset reads %v, see UseCameras)", ep.name, key, ep.d.cameras)
	}
	v := &view{spec: f, per: 1}
	if f.Kind == episode.KindTensor {
		v.per = max(valuesPer(f.Shape), 1)
	}
	v.nums, v.ints, v.blobs = ep.nums[key], ep.ints[key], ep.blobs[key]
	if v.nums == nil && v.ints == nil && v.blobs == nil {
		return nil, ep.Corrupt(fmt.Errorf("feature %s (%s) is not readable", key, f.Kind))
	}
	return v, nil
}

// view is a feature read from the data file.
type view struct {
	spec  episode.Feature
	per   int
	nums  []float64
	ints  []int64
	blobs [][]byte
}

func (v *view) Spec() episode.Feature { return v.spec }
func (v *view) Per() int              { return v.per }

func (v *view) Bytes(step int) []byte {
	if step < 0 || step >= len(v.blobs) {
		return nil
	}
	return v.blobs[step]
}

func (v *view) Float64s(dst []float64) ([]float64, error) {
	switch {
	case v.nums != nil:
		return append(dst, v.nums...), nil
	case v.ints != nil:
		for _, x := range v.ints {
			dst = append(dst, float64(x))
		}
		return dst, nil
	}
	return dst, fmt.Errorf("feature %s is %s, not numeric", v.spec.Key, v.spec.Kind)
}

func (v *view) Int64s(dst []int64) ([]int64, error) {
	switch {
	case v.ints != nil:
		return append(dst, v.ints...), nil
	case v.nums != nil:
		for _, x := range v.nums {
			if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
				return dst, fmt.Errorf("feature %s holds %v, not an integer", v.spec.Key, x)
			}
			dst = append(dst, int64(x))
		}
		return dst, nil
	}
	return dst, fmt.Errorf("feature %s is %s, not numeric", v.spec.Key, v.spec.Kind)
}

// videoView is a video camera of an episode: an episode.Video.
type videoView struct {
	spec episode.Feature
	ep   *Episode
	v    *videoSteps
}

var _ episode.Video = (*videoView)(nil)

func (v *videoView) Spec() episode.Feature { return v.spec }
func (v *videoView) Per() int              { return 1 }

// Bytes is nil: a video frame has no bytes of its own.
func (v *videoView) Bytes(int) []byte { return nil }

func (v *videoView) Float64s(dst []float64) ([]float64, error) {
	return dst, fmt.Errorf("feature %s is a video camera, not numeric", v.spec.Key)
}

func (v *videoView) Int64s(dst []int64) ([]int64, error) {
	return dst, fmt.Errorf("feature %s is a video camera, not numeric", v.spec.Key)
}

// File names the video file: the source's location and the path.
func (v *videoView) File() string { return v.v.id }

// Codec is the track's codec and configuration record.
func (v *videoView) Codec() (string, []byte) { return v.v.codec, v.v.config }

// Shown is the sample showing the step, matched at load.
func (v *videoView) Shown(step int) (int, error) {
	if step < 0 || step >= len(v.v.shown) {
		return 0, fmt.Errorf("camera %s: step %d of %d", v.spec.Key, step, len(v.v.shown))
	}
	return int(v.v.shown[step]), nil
}

// Sample describes sample j of the track. The episode keeps only the
// samples its steps need (see episode.Video); any other is empty.
func (v *videoView) Sample(j int) (off int64, size int, pts int64, key bool) {
	j -= v.v.first
	if j < 0 || j >= len(v.v.samples) {
		return 0, 0, 0, false
	}
	s := v.v.samples[j]
	return s.off, int(s.size), s.pts, s.key
}

// Start is the sample decoding starts from to show sample j.
func (v *videoView) Start(j int) int { return episode.DecodeStart(v, j) }

// Samples is one past the last sample the episode keeps.
func (v *videoView) Samples() int { return v.v.first + len(v.v.samples) }

// ReadAt reads the video file: the episode's bytes from the disk cache
// when the dataset has one (see readVideo).
func (v *videoView) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return v.ep.d.readVideo(ctx, v.v, p, off)
}
