package main

import (
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
	Source    string   `arg:"" help:"Dataset directory: a local TFDS dir (/data/oxe/bridge/0.1.0) or gs://bucket/prefix/name/version."`
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
	ds, err := store.Open(ctx, "", src)
	if err != nil {
		return err
	}
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
	desc := ds.Describe()
	if c.JSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(desc)
	}
	fmt.Print(desc)
	return nil
}
