package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/loader"
	"github.com/oxefs/oxefs/storage/diskcache"
	"github.com/oxefs/oxefs/storage/retry"
)

// pipelineFlags are the flags that shape what is built, shared by mount,
// bench, warm and stats. Their check is in flags_check.go.
type pipelineFlags struct {
	Config       string        `help:"Mix config (YAML), e.g. mix.yaml; without it, the built-in demo mix." type:"path" placeholder:"FILE"`
	CacheDir     string        `help:"Disk cache and index directory." default:"${cache_dir}" name:"cache-dir" type:"path"`
	Mem          sizeFlag      `help:"Bound on everything the daemon holds: batches, readahead, RAM cache, buffers." default:"${mem}"`
	Disk         sizeFlag      `help:"Bound on the disk cache of remote shards." default:"50GiB"`
	Workers      int           `help:"Decode workers shared by all datasets." default:"${workers}"`
	Decoder      string        `help:"JPEG decoder: auto (libjpeg-turbo when libturbojpeg.so.0 loads, else image/jpeg), turbo (libjpeg-turbo, or fail), go (image/jpeg)." default:"auto" env:"OXEFS_DECODER"`
	Readahead    int           `help:"Batches built ahead of each one read, while memory allows." default:"8"`
	Rank         int           `help:"This node's rank: serve global batches rank, rank+world, ..." default:"0"`
	World        int           `help:"Number of ranks." default:"1"`
	Seed         *uint64       `help:"Override the config's seed."`
	Strict       bool          `help:"Corrupt data is an I/O error instead of a counted substitution."`
	Augment      string        `help:"on: the config's augment blocks augment training frames; off: none (the batches of the config without them, for a quick comparison; info.json says augment_off)." default:"on" enum:"on,off" placeholder:"on|off"`
	MaxFetchRate sizeFlag      `help:"Cap on bytes per second fetched from remote sources, e.g. 70MB; 0: no cap." name:"max-fetch-rate" default:"0"`
	FetchStall   time.Duration `help:"Abandon a source attempt that sends nothing for this long, and retry." name:"fetch-stall" default:"30s"`
	FetchTimeout time.Duration `help:"Give up on a source after this long without progress: the read gets EIO; that shard then fails at once for min(this, 10s) before it is tried again." name:"fetch-timeout" default:"2m"`
	VerifyRanges string        `help:"Ranges of remote files that no format check covers (video samples, parquet blocks): twice (fetch two copies at once, keep them when they agree) or off (one copy, kept as it came: only for links you trust not to damage bytes)." name:"verify-ranges" default:"twice" placeholder:"twice|off"`

	verifyRanges diskcache.VerifyRanges // VerifyRanges, parsed by check
}

// loadConfig reads --config, or writes out the demo mix.
func (f *pipelineFlags) loadConfig(log *slog.Logger) (*config.Config, error) {
	var (
		cfg *config.Config
		err error
	)
	if f.Config == "" {
		text, derr := writeDemo(f.CacheDir)
		if derr != nil {
			return nil, derr
		}
		log.Info("no --config: serving the built-in demo mix", "datasets", filepath.Join(f.CacheDir, "demo"))
		cfg, err = config.Parse(text)
	} else {
		cfg, err = config.Load(f.Config)
	}
	if err != nil {
		return nil, err
	}
	if f.Seed != nil {
		cfg.Seed = *f.Seed
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// offlineHelp is --offline's help, for mount and bench.
const offlineHelp = "Never contact remote sources: serve from what `oxefs warm` cached (metadata, length indexes, the shards of both views); fail at start, naming what is missing, if the cache lacks anything."

// open builds the pipeline, validating the whole config against the data;
// offline, from the cache alone (see --offline).
//
// ranks, when not nil, are the ranks one daemon serves (mount --ranks);
// --rank is then left out.
func (f *pipelineFlags) open(ctx context.Context, log *slog.Logger, offline bool, ranks []int, memfd bool) (*loader.Pipeline, error) {
	if err := f.check(hostMemory()); err != nil {
		return nil, err
	}
	if f.World < 1 || f.Rank < 0 || f.Rank >= f.World {
		return nil, fmt.Errorf("--rank %d --world %d: the rank must be in 0..%d", f.Rank, f.World, max(f.World, 1)-1)
	}
	cfg, err := f.loadConfig(log)
	if err != nil {
		return nil, err
	}
	return loader.Open(ctx, loader.Options{
		Config:       cfg,
		CacheDir:     f.CacheDir,
		Mem:          int64(f.Mem),
		Disk:         int64(f.Disk),
		Workers:      f.Workers,
		Decoder:      f.Decoder,
		Readahead:    f.Readahead,
		Rank:         f.Rank,
		World:        f.World,
		Ranks:        ranks,
		Strict:       f.Strict,
		AugmentOff:   f.Augment == "off",
		MaxFetchRate: int64(f.MaxFetchRate),
		Offline:      offline,
		Memfd:        memfd,
		Retry:        retry.Policy{StallTimeout: f.FetchStall, MaxElapsed: f.FetchTimeout},
		VerifyRanges: f.verifyRanges,
		Progress:     indexProgress(),
		Version:      version,
		Log:          log,
	})
}
