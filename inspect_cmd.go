package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/loader"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/retry"
)

type inspectCmd struct {
	Source    string   `arg:"" help:"Dataset directory, local, gs://, s3:// or hf://datasets/OWNER/NAME[@REVISION][/PATH]: an RLDS (TFDS) dir such as /data/oxe/bridge/0.1.0, or a LeRobot v3 dataset root (the folder holding meta/info.json)."`
	JSON      bool     `help:"Print the description as one JSON object." name:"json"`
	Anonymous bool     `help:"Read a public bucket without credentials (e.g. gs://gresearch/robotics, or a public s3:// bucket), or a Hub dataset without the HF_TOKEN token."`
	Index     bool     `help:"Build the episode-length index first (reads every episode; remote shards go through the disk cache)."`
	CacheDir  string   `help:"Disk cache and index directory." default:"${cache_dir}" name:"cache-dir" type:"path"`
	Disk      sizeFlag `help:"Disk cache bound, e.g. 50GiB." default:"50GiB"`
	// The same bounds as mount's: a source that does not answer fails
	// the command within --fetch-timeout + --fetch-stall.
	FetchStall   time.Duration `help:"Abandon a source attempt that sends nothing for this long, and retry." name:"fetch-stall" default:"30s"`
	FetchTimeout time.Duration `help:"Give up on a source after this long without progress." name:"fetch-timeout" default:"2m"`
}

// Run opens the dataset in the format its files show, builds its
// episode-length index with --index where its format keeps one
// (format.LengthIndexer), and prints its description (format.Describer).
func (c *inspectCmd) Run(ctx context.Context, log *slog.Logger) error {
	if c.FetchStall <= 0 || c.FetchTimeout <= 0 {
		return fmt.Errorf("--fetch-stall %v, --fetch-timeout %v: each must be more than 0", c.FetchStall, c.FetchTimeout)
	}
	st, err := loader.OpenStorage(loader.StorageOptions{CacheDir: c.CacheDir, Disk: int64(c.Disk), Log: log,
		Retry: retry.Policy{StallTimeout: c.FetchStall, MaxElapsed: c.FetchTimeout}})
	if err != nil {
		return err
	}
	defer st.Close()
	src, err := storage.Open(ctx, c.Source, storage.Options{Anonymous: c.Anonymous})
	if err != nil {
		return err
	}
	data, err := format.Open(ctx, "", src, &format.Env{Store: st.Store})
	if err != nil {
		return err
	}
	if c.Index {
		ix, ok := data.(format.LengthIndexer)
		if !ok {
			log.Info(format.NameOf(data) + " datasets store their episode lengths: --index has nothing to build")
		} else if err := buildLengths(ctx, data, ix); err != nil {
			return err
		}
	}
	desc, ok := data.(format.Describer)
	if !ok {
		return fmt.Errorf("%s: its format (%s) cannot describe it", c.Source, format.NameOf(data))
	}
	return printDescription(desc.Describe(), c.JSON)
}

// buildLengths indexes the episode lengths of every split, with progress.
func buildLengths(ctx context.Context, data format.Dataset, ix format.LengthIndexer) error {
	info := data.Info()
	var total int64
	for _, s := range info.Splits {
		total += s.Episodes()
	}
	bar := newBar(total, "indexing episode lengths", "episodes")
	_, err := ix.BuildLengths(ctx, info.SplitNames(), runtime.GOMAXPROCS(0), func(n int) { _ = bar.Add(n) })
	_ = bar.Finish()
	return err
}

// printDescription prints a dataset's description for people, or as one
// JSON object.
func printDescription(desc fmt.Stringer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(desc)
	}
	fmt.Print(desc)
	return nil
}
