package formats

import (
	"context"
	"errors"
	"fmt"

	"github.com/oxefs/oxefs/format"
	lrsynth "github.com/oxefs/oxefs/format/lerobot/synth"
	rldssynth "github.com/oxefs/oxefs/format/rlds/synth"
)

// synthRLDS writes OXE-like RLDS datasets (format/rlds/synth).
func synthRLDS(ctx context.Context, o format.SynthOptions) (format.SynthResult, error) {
	res, err := rldssynth.Generate(ctx, rldssynth.Options{
		Dir: o.Dir, Datasets: o.Datasets, Episodes: o.Episodes, Steps: o.Steps,
		Shards: o.Shards, ShardBytes: o.ShardBytes, Seed: o.Seed, Workers: o.Workers,
		Start: o.Start, Progress: o.Progress, Log: o.Log,
	})
	if err != nil {
		return format.SynthResult{}, err
	}
	return format.SynthResult{Datasets: len(res.Datasets), Episodes: res.Episodes, Frames: res.Frames, Bytes: res.Bytes, Elapsed: res.Elapsed, MixFiles: res.MixFiles}, nil
}

// synthLeRobot writes LeRobot v3 datasets with video cameras
// (format/lerobot/synth).
func synthLeRobot(ctx context.Context, o format.SynthOptions) (format.SynthResult, error) {
	if o.Shards != 0 || o.ShardBytes != 0 {
		return format.SynthResult{}, errors.New("synth: --shards and --shard-size are for --format rlds; LeRobot files roll over by size")
	}
	if o.VideoAvailable != nil {
		if err := o.VideoAvailable(); err != nil {
			return format.SynthResult{}, fmt.Errorf("synth --format lerobot encodes video: %w", err)
		}
	}
	res, err := lrsynth.Generate(ctx, lrsynth.Options{
		Dir: o.Dir, Datasets: o.Datasets, Episodes: o.Episodes, Steps: o.Steps,
		Seed: o.Seed, Workers: o.Workers, Codec: o.Codec, NewEncoder: o.NewEncoder,
		Start: o.Start, Progress: o.Progress, Log: o.Log,
	})
	if err != nil {
		return format.SynthResult{}, err
	}
	return format.SynthResult{Datasets: len(res.Datasets), Episodes: res.Episodes, Frames: res.Frames, Bytes: res.Bytes, Elapsed: res.Elapsed, MixFiles: res.MixFiles}, nil
}
