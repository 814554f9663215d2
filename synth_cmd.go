package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/oxefs/oxefs/format/rlds/synth"
)

type synthCmd struct {
	Dir       string   `arg:"" help:"Output directory: DIR/<name>/1.0.0 per dataset, and DIR/mix.yaml, mix-single.yaml, mix-two-copies.yaml." type:"path"`
	Datasets  int      `help:"How many of the 29 synthetic datasets to write, in table order." default:"29"`
	Episodes  int      `placeholder:"N" help:"Train episodes per dataset (val gets a tenth, at least 2); 0 keeps each dataset's default, 12 to 48."`
	Steps     int      `placeholder:"N" help:"Steps of every episode (at least 2); 0 draws each episode's length from its dataset's range, 20 to 120."`
	Shards    int      `placeholder:"N" help:"Train shards per dataset; 0 keeps the default, one per 6 episodes."`
	ShardSize sizeFlag `placeholder:"SIZE" help:"With --shards: episodes per dataset such that each train shard holds about SIZE (e.g. 40MB), as OXE's large shards do; overrides --episodes."`
	Seed      uint64   `placeholder:"S" help:"Seed: the same seed writes the same bytes."`
	Workers   int      `placeholder:"N" help:"Shards encoded in parallel; 0 means one per CPU."`
}

func (c *synthCmd) Run(ctx context.Context, log *slog.Logger) error {
	var bar progress
	res, err := synth.Generate(ctx, synth.Options{
		Dir:        c.Dir,
		Datasets:   c.Datasets,
		Episodes:   c.Episodes,
		Steps:      c.Steps,
		Shards:     c.Shards,
		ShardBytes: int64(c.ShardSize),
		Seed:       c.Seed,
		Workers:    c.Workers,
		Log:        log,
		Start: func(datasets, episodes int) {
			bar = newBar(int64(episodes), fmt.Sprintf("synth: %d datasets", datasets), "episodes")
		},
		Progress: func(episodes int, _ int64) { _ = bar.Add(episodes) },
	})
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return err
	}
	secs := res.Elapsed.Seconds()
	fmt.Printf("wrote %d datasets, %d episodes, %d frames, %.1f MB under %s in %s (%.1f episodes/s, %.1f MB/s)\n",
		len(res.Datasets), res.Episodes, res.Frames, float64(res.Bytes)/1e6, c.Dir,
		res.Elapsed.Round(100*time.Millisecond), float64(res.Episodes)/secs, float64(res.Bytes)/1e6/secs)
	for _, f := range res.MixFiles {
		fmt.Println(f)
	}
	return nil
}
