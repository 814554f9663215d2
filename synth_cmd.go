package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/frames/av"
)

type synthCmd struct {
	Dir       string   `arg:"" help:"Output directory: DIR/<name>/1.0.0 per dataset (DIR/<name> with --format lerobot), and DIR/mix.yaml, mix-single.yaml, mix-two-copies.yaml, mix-steps.yaml (rlds)." type:"path"`
	Format    string   `help:"Dataset format to write: rlds (TFDS TFRecord) or lerobot (LeRobot v3: parquet and MP4 video)." enum:"rlds,lerobot" default:"rlds"`
	Codec     string   `help:"Video codec of --format lerobot: av1 (libsvtav1, else libaom-av1) or h264 (libx264)." enum:"av1,h264" default:"av1"`
	Datasets  int      `help:"How many of the 29 synthetic datasets to write, in table order." default:"29"`
	Episodes  int      `placeholder:"N" help:"Train episodes per dataset (val gets a tenth, at least 2); 0 keeps each dataset's default, 12 to 48."`
	Steps     int      `placeholder:"N" help:"Steps of every episode (at least 2); 0 draws each episode's length from its dataset's range, 20 to 120."`
	Shards    int      `placeholder:"N" help:"Train shards per dataset (rlds); 0 keeps the default, one per 6 episodes."`
	ShardSize sizeFlag `placeholder:"SIZE" help:"With --shards (rlds): episodes per dataset such that each train shard holds about SIZE (e.g. 40MB), as OXE's large shards do; overrides --episodes."`
	Seed      uint64   `placeholder:"S" help:"Seed: the same seed writes the same bytes."`
	Workers   int      `placeholder:"N" help:"Shards (rlds) or cameras (lerobot) encoded in parallel; 0 means one per CPU."`
}

// Run writes the synthetic datasets of --format through the format
// registry (format.Synth).
func (c *synthCmd) Run(ctx context.Context, log *slog.Logger) error {
	var bar progress
	opts := format.SynthOptions{
		Dir:        c.Dir,
		Datasets:   c.Datasets,
		Episodes:   c.Episodes,
		Steps:      c.Steps,
		Shards:     c.Shards,
		ShardBytes: int64(c.ShardSize),
		Seed:       c.Seed,
		Workers:    c.Workers,
		// For a format that stores video; the format checks the
		// options it takes.
		Codec:          c.Codec,
		VideoAvailable: av.Available,
		NewEncoder: func(w, h, fps int) (format.VideoEncoder, error) {
			e, err := av.NewEncoder(c.Codec, w, h, fps, av.EncoderOptions{})
			if err != nil {
				return nil, err
			}
			return avEncoder{e}, nil
		},
		Log:      log,
		Progress: func(episodes int, _ int64) { _ = bar.Add(episodes) },
		Start: func(datasets, episodes int) {
			bar = newBar(int64(episodes), fmt.Sprintf("synth: %d datasets", datasets), "episodes")
		},
	}
	res, err := format.Synth(ctx, c.Format, opts)
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return err
	}
	c.summary(res.Datasets, res.Episodes, res.Frames, res.Bytes, res.Elapsed, res.MixFiles)
	return nil
}

// summary prints the line that ends a run, and the mix configs written.
func (c *synthCmd) summary(datasets, episodes, frames int, bytes int64, elapsed time.Duration, mixes []string) {
	secs := elapsed.Seconds()
	fmt.Printf("wrote %d datasets, %d episodes, %d frames, %.1f MB under %s in %s (%.1f episodes/s, %.1f MB/s)\n",
		datasets, episodes, frames, float64(bytes)/1e6, c.Dir,
		elapsed.Round(100*time.Millisecond), float64(episodes)/secs, float64(bytes)/1e6/secs)
	for _, f := range mixes {
		fmt.Println(f)
	}
}

// avEncoder gives frames/av's encoder to the synth of a format that
// stores video.
type avEncoder struct{ *av.Encoder }

func (e avEncoder) Config() []byte { return e.Extradata() }

func (e avEncoder) Samples() []format.VideoSample {
	pkts := e.Packets()
	out := make([]format.VideoSample, len(pkts))
	for i, p := range pkts {
		out[i] = format.VideoSample{Data: p.Data, PTS: p.PTS, DTS: p.DTS, Key: p.Key}
	}
	return out
}
