package main

import (
	"github.com/oxefs/oxefs/format/lerobot"
	"github.com/oxefs/oxefs/format/rlds"
	"github.com/oxefs/oxefs/loader"
	"github.com/oxefs/oxefs/storage"

	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime"
)

type inspectCmd struct {
	Source    string   `arg:"" help:"Dataset directory, local or gs://: an RLDS (TFDS) dir such as /data/oxe/bridge/0.1.0, or a LeRobot v3 dataset root (the folder holding meta/info.json)."`
	JSON      bool     `help:"Print the description as one JSON object." name:"json"`
	Anonymous bool     `help:"Read a public GCS bucket without credentials (e.g. gs://gresearch/robotics)."`
	Index     bool     `help:"Build the episode-length index first (reads every episode; remote shards go through the disk cache)."`
	CacheDir  string   `help:"Disk cache and index directory." default:"${cache_dir}" name:"cache-dir" type:"path"`
	Disk      sizeFlag `help:"Disk cache bound, e.g. 50GiB." default:"50GiB"`
}

func (c *inspectCmd) Run(ctx context.Context, log *slog.Logger) error {
	st, err := loader.OpenStorage(loader.StorageOptions{CacheDir: c.CacheDir, Disk: int64(c.Disk), Log: log})
	if err != nil {
		return err
	}
	defer st.Close()
	store := st.Store
	src, err := storage.Open(ctx, c.Source, storage.Options{Anonymous: c.Anonymous})
	if err != nil {
		return err
	}
	data, err := loader.OpenData(ctx, "", src, store, nil)
	if err != nil {
		return err
	}
	if lr, ok := data.(*lerobot.Dataset); ok {
		if c.Index {
			log.Info("LeRobot datasets store their episode lengths: --index has nothing to build")
		}
		return printDescription(lr.Describe(), c.JSON)
	}
	ds := data.(*rlds.Dataset)
	if c.Index {
		var total int64
		for _, s := range ds.Meta.Splits {
			total += s.NumExamples()
		}
		bar := newBar(total, "indexing episode lengths", "episodes")
		_, err := ds.BuildLengths(ctx, ds.Splits(), runtime.GOMAXPROCS(0), func(n int) { _ = bar.Add(n) })
		_ = bar.Finish()
		if err != nil {
			return err
		}
	}
	return printDescription(ds.Describe(), c.JSON)
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
