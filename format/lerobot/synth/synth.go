// Package synth owns `oxefs synth --format lerobot`: the synthetic
// datasets of package format/synthetic written as LeRobot v3 datasets, for
// benchmarks that compare the two formats on the same content.
//
// Generate writes, for each dataset of the synthetic table, DIR/<name>/
// with LeRobot 0.4's layout (as testdata/lerobot holds, written by
// lerobot itself):
//
//	meta/info.json                          codebase_version v3.0, fps, features, splits,
//	                                        and a "synthetic" note
//	meta/tasks.parquet                      task text (the pandas index) → task_index
//	meta/episodes/chunk-000/file-000.parquet one row per episode: length, tasks, data file
//	                                        and rows, per camera video file and from/to
//	                                        timestamps
//	data/chunk-000/file-NNN.parquet         one row per step: action, observation.state,
//	                                        timestamp, frame_index, episode_index, index,
//	                                        task_index; one row group per episode
//	videos/<camera>/chunk-000/file-NNN.mp4  each camera's frames, many episodes per file
//
// The episodes, their lengths, frames, actions, states and instructions are
// those the RLDS synth writes for the same seed (both draw them with
// synthetic.EpisodeContent): train episodes are LeRobot episodes 0..N-1, val
// episodes follow. An episode's action is the RLDS action parts
// concatenated in order; cameras are observation.images.<name> after the
// last part of the RLDS key, cropped to even sizes (4:2:0 video needs
// them); the task is the instruction. Datasets without state have no
// observation.state.
//
// Files roll over as LeRobot's writer rolls them: a data file when its
// size plus the episode's estimated size reaches DataFileBytes, a video
// file when its size plus the episode's reaches VideoFileBytes. Each
// episode is encoded on its own, as LeRobot encodes it, and appended to
// the camera's current file with its timestamps continuing; from_timestamp
// is the previous episode's to_timestamp and to_timestamp adds the
// episode's duration, frames × the sample duration, in float64 as LeRobot
// computes them.
//
// The encoder is injected (Options.NewEncoder): formats may not import
// frames, and the CLI passes frames/av's. The output is a function of the
// options and the encoder: every episode's content is keyed by the seed,
// and each camera's files are written in episode order by one goroutine.
//
// Every dataset says it is synthetic: info.json carries a top-level
// "synthetic" note and the mix configs' header says so.
package synth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/format/lerobot"
	"github.com/oxefs/oxefs/format/synthetic"
)

// LeRobot's default file sizes (lerobot.datasets.utils).
const (
	DefaultDataFileBytes  = 100 << 20
	DefaultVideoFileBytes = 200 << 20
)

// FPS is the frame rate of every synthetic dataset.
const FPS = 10

// Options says what Generate writes.
type Options struct {
	// Dir receives DIR/<name>/ per dataset and the mix configs.
	Dir string
	// Datasets is how many of the synthetic table to write, in its order;
	// 0 writes all of them.
	Datasets int
	// Episodes overrides every dataset's number of train episodes; val
	// gets a tenth as many, at least 2.
	Episodes int
	// Steps, when positive, makes every episode that many steps long.
	Steps int
	Seed  uint64
	// Workers bounds the cameras (and data tables) written at once; 0
	// means GOMAXPROCS.
	Workers int
	// Codec is the video codec NewEncoder writes: "av1" (the default) or
	// "h264".
	Codec string
	// NewEncoder opens an encoder of Codec for one episode of one camera:
	// Encode takes packed RGB24 frames of the size it was opened for,
	// Flush ends the episode, and Config is the av1C or avcC payload.
	NewEncoder func(width, height, fps int) (format.VideoEncoder, error)
	// DataFileBytes and VideoFileBytes are the sizes at which data and
	// video files roll over; 0 means LeRobot's defaults.
	DataFileBytes, VideoFileBytes int64
	// Start, when set, is called once before any work with the totals.
	Start func(datasets, episodes int)
	// Progress, when set, is called once per episode, when its rows and
	// every camera's frames are written, with the episode's video bytes. It
	// is called from several goroutines at once.
	Progress func(episodes int, bytes int64)
	Log      *slog.Logger
}

// Result summarises what Generate wrote.
type Result struct {
	Datasets []DatasetResult
	Episodes int
	Frames   int
	Bytes    int64 // data and video files
	// MixFiles are mix.yaml and mix-single.yaml, absolute paths.
	MixFiles []string
	Elapsed  time.Duration
}

// DatasetResult is one dataset written.
type DatasetResult struct {
	synthetic.Dataset
	Dir string // absolute: DIR/<name>
	// Train and Val are the split sizes; episodes Train.. are val.
	Train, Val int
	Frames     int // camera frames, all cameras
	Bytes      int64
	// Episodes are what each episode holds, by LeRobot episode index.
	Episodes []EpisodeResult
	// Cameras are the video keys, in the order of Dataset.Cameras.
	Cameras []string
	// Tasks are the task texts by task_index.
	Tasks []string
}

// EpisodeResult is one episode as written.
type EpisodeResult struct {
	Split string
	Index int // within the split
	Steps int
	Task  int // task_index
	// Actions and State are per step, as in the data file.
	Actions, State [][]float32
}

func (o *Options) normalise() error {
	if o.Dir == "" {
		return errors.New("synth: no output directory")
	}
	if o.NewEncoder == nil {
		return errors.New("synth: no video encoder")
	}
	if o.Datasets < 0 || o.Episodes < 0 || o.Steps < 0 || o.Workers < 0 || o.DataFileBytes < 0 || o.VideoFileBytes < 0 {
		return errors.New("synth: --datasets, --episodes, --steps and --workers must not be negative")
	}
	if o.Steps == 1 {
		return errors.New("synth: --steps must be at least 2 (a pair needs two frames)")
	}
	all := len(synthetic.Datasets())
	if o.Datasets > all {
		return fmt.Errorf("synth: --datasets %d: there are %d synthetic datasets", o.Datasets, all)
	}
	if o.Datasets == 0 {
		o.Datasets = all
	}
	switch o.Codec {
	case "":
		o.Codec = "av1"
	case "av1", "h264":
	default:
		return fmt.Errorf("synth: codec %q (valid: av1, h264)", o.Codec)
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.DataFileBytes == 0 {
		o.DataFileBytes = DefaultDataFileBytes
	}
	if o.VideoFileBytes == 0 {
		o.VideoFileBytes = DefaultVideoFileBytes
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	o.Dir = abs
	return nil
}

// dataset is one dataset being written: its plan, and what its tasks
// write.
type dataset struct {
	DatasetResult
	episodes []planned
	// spans[camera][episode] is where each episode lies in the camera's
	// video files.
	spans [][]lerobot.VideoSpan
	// rows[episode] is the episode's data file and global rows.
	rows []lerobot.EpisodeMeta
	// videoBytes[camera] and dataBytes are the bytes each task wrote.
	videoBytes []int64
	dataBytes  int64
	// pending[episode] counts the tasks (cameras, data) yet to write it;
	// episodeBytes[episode] sums its video bytes.
	pending      []atomic.Int32
	episodeBytes []atomic.Int64
}

// done records that one task wrote episode e, and reports the episode
// when it was the last.
func (p *dataset) done(o Options, e int, bytes int64) {
	p.episodeBytes[e].Add(bytes)
	if p.pending[e].Add(-1) == 0 && o.Progress != nil {
		o.Progress(1, p.episodeBytes[e].Load())
	}
}

// planned is one episode: LeRobot index, its RLDS split and index.
type planned struct {
	split string
	index int
	steps int
}

func plan(o Options) []*dataset {
	var out []*dataset
	for _, d := range synthetic.Datasets()[:o.Datasets] {
		train, val := synthetic.SplitEpisodes(d, o.Episodes)
		if o.Steps > 0 {
			d.Offset = min(d.Offset, o.Steps-1)
		}
		ds := &dataset{DatasetResult: DatasetResult{Dataset: d, Dir: filepath.Join(o.Dir, d.Name), Train: train, Val: val}}
		for _, s := range []struct {
			name string
			n    int
		}{{"train", train}, {"val", val}} {
			for i := range s.n {
				steps := o.Steps
				if steps == 0 {
					steps = synthetic.EpisodeSteps(d, o.Seed, s.name, i)
				}
				ds.episodes = append(ds.episodes, planned{split: s.name, index: i, steps: steps})
			}
		}
		for _, c := range d.Cameras {
			ds.Cameras = append(ds.Cameras, cameraKey(c.Key))
		}
		ds.spans = make([][]lerobot.VideoSpan, len(d.Cameras))
		ds.videoBytes = make([]int64, len(d.Cameras))
		ds.pending = make([]atomic.Int32, len(ds.episodes))
		ds.episodeBytes = make([]atomic.Int64, len(ds.episodes))
		for e := range ds.pending {
			ds.pending[e].Store(int32(len(d.Cameras) + 1))
		}
		out = append(out, ds)
	}
	return out
}

// Generate writes the datasets and the mix configs. It stops at the first
// error or when ctx is cancelled; a dataset has a meta/info.json only once
// all its files are written.
func Generate(ctx context.Context, o Options) (*Result, error) {
	if err := o.normalise(); err != nil {
		return nil, err
	}
	began := time.Now()
	plans := plan(o)
	total := 0
	for _, p := range plans {
		total += len(p.episodes)
		if err := p.clear(); err != nil {
			return nil, err
		}
	}
	if o.Start != nil {
		o.Start(len(plans), total)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Workers)
	for _, p := range plans {
		// Each camera's videos, and the data table, are written by one
		// task each, in episode order.
		for ci := range p.Cameras {
			g.Go(func() error { return p.writeVideos(gctx, o, ci) })
		}
		g.Go(func() error { return p.writeData(gctx, o) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := &Result{}
	for _, p := range plans {
		if err := p.writeMeta(o); err != nil {
			return nil, err
		}
		res.Episodes += len(p.episodes)
		res.Frames += p.Frames
		res.Bytes += p.Bytes
		res.Datasets = append(res.Datasets, p.DatasetResult)
	}
	mixes, err := writeMixes(o, plans)
	if err != nil {
		return nil, err
	}
	res.MixFiles = mixes
	res.Elapsed = time.Since(began)
	return res, nil
}

// clear removes what makes DIR/<name> a dataset (meta/info.json first),
// then the files an earlier run wrote.
func (p *dataset) clear() error {
	if err := os.Remove(filepath.Join(p.Dir, lerobot.InfoPath)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("synth: %w", err)
	}
	for _, sub := range []string{"meta", "data", "videos"} {
		if err := os.RemoveAll(filepath.Join(p.Dir, sub)); err != nil {
			return fmt.Errorf("synth: %w", err)
		}
	}
	return nil
}

// cameraKey is LeRobot's key for an RLDS camera key:
// steps/observation/image_0 → observation.images.image_0.
func cameraKey(rldsKey string) string {
	return "observation.images." + filepath.Base(rldsKey)
}

// content draws episode e of the dataset.
func (p *dataset) content(o Options, e int) *synthetic.Content {
	ep := p.episodes[e]
	return synthetic.EpisodeContent(p.Dataset, o.Seed, ep.split, ep.index, ep.steps)
}
