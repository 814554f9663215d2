package format

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// SynthOptions are what `oxefs synth` asks of a format that writes
// synthetic datasets (Format.Synth).
type SynthOptions struct {
	// Dir receives the datasets and the mix configs that read them.
	Dir string
	// Datasets is how many of the synthetic datasets to write, in table
	// order (0: all); Episodes overrides each one's train episodes and
	// Steps every episode's length, when positive.
	Datasets, Episodes, Steps int
	// Shards and ShardBytes shape the files of a format that shards its
	// episodes (RLDS): train shards per dataset, and a target shard size.
	// A format whose files roll over by size refuses them.
	Shards     int
	ShardBytes int64
	Seed       uint64
	// Workers bounds the files written at once; 0 means GOMAXPROCS.
	Workers int
	// Codec and NewEncoder write the cameras of a format that stores them
	// as video (LeRobot): one encoder of Codec per episode and camera.
	// Such a format calls VideoAvailable, when set, before writing
	// anything, and fails with its error; other formats ignore all three.
	Codec          string
	NewEncoder     func(width, height, fps int) (VideoEncoder, error)
	VideoAvailable func() error
	// Start, when set, is told the totals before any work; Progress each
	// episode written, with its bytes, from several goroutines at once.
	Start    func(datasets, episodes int)
	Progress func(episodes int, bytes int64)
	Log      *slog.Logger
}

// VideoEncoder compresses one camera's frames of one episode.
type VideoEncoder interface {
	Encode(rgb []byte) error
	Flush() error
	// Samples returns the compressed frames produced since the last call,
	// in decode order, with times in frames (time base 1/fps).
	Samples() []VideoSample
	// Config is the MP4 sample entry's codec payload (av1C, avcC).
	Config() []byte
	Close()
}

// VideoSample is one compressed frame.
type VideoSample struct {
	Data     []byte
	PTS, DTS int64
	Key      bool
}

// SynthResult summarises what a synth wrote.
type SynthResult struct {
	Datasets, Episodes, Frames int
	// Bytes are the datasets' data files.
	Bytes   int64
	Elapsed time.Duration
	// MixFiles are the mix configs written, as absolute paths.
	MixFiles []string
}

// Synth writes synthetic datasets in the registered format called name
// (case aside: "rlds", "lerobot").
func Synth(ctx context.Context, name string, opts SynthOptions) (SynthResult, error) {
	return registry.Synth(ctx, name, opts)
}

// Synth writes synthetic datasets in the format called name.
func (r *Registry) Synth(ctx context.Context, name string, opts SynthOptions) (SynthResult, error) {
	var valid []string
	for _, f := range r.list() {
		if f.Synth == nil {
			continue
		}
		if strings.EqualFold(f.Name, name) {
			return f.Synth(ctx, opts)
		}
		valid = append(valid, strings.ToLower(f.Name))
	}
	return SynthResult{}, fmt.Errorf("synth: no format %q writes synthetic datasets (valid: %s)", name, strings.Join(valid, ", "))
}
