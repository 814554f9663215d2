package main

import (
	"github.com/oxefs/oxefs/internal/bytesize"
	"github.com/oxefs/oxefs/loader"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/storage"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/oxefs/oxefs/format/rlds"
)

type warmCmd struct {
	pipelineFlags
	All     bool  `help:"Fetch every train shard of every dataset, not only those the first batches need."`
	Batches int64 `help:"Fetch the train shards of this many batches from the start, in plan order." default:"10000"`
	Stats   bool  `help:"Also compute each dataset's normalisation statistics (as oxefs stats does; it reads every train episode, so every train shard is fetched)."`
}

// Run opens the mix (which builds missing episode-length indexes, with
// progress), records each remote RLDS dataset's metadata for mount
// --offline, fetches every file the selections of each remote LeRobot
// dataset need, whole, and fetches remote shards into the disk cache: the
// train shards, the first needed first, then those of the val view, up to
// half of --disk. It ends by saying whether mount --offline can serve the
// mix.
func (c *warmCmd) Run(ctx context.Context, log *slog.Logger) error {
	p, err := c.open(ctx, log, false, nil, false)
	if err != nil {
		return err
	}
	defer p.Close()
	warmed := 0 // files of remote LeRobot datasets
	for _, d := range p.Mix.Datasets {
		if r := d.RLDS(); r != nil {
			if err := r.SaveOffline(ctx); err != nil {
				return err
			}
			continue
		}
		var bar progress
		n, err := loader.WarmLeRobot(ctx, d, p.Store, func(done, total int) {
			if bar == nil {
				bar = newBar(int64(total), "fetching "+d.Config.Name, "files")
			}
			_ = bar.Add(1)
		})
		if bar != nil {
			_ = bar.Finish()
		}
		if err != nil {
			return err
		}
		if n > 0 {
			fmt.Printf("%d files of LeRobot dataset %s in the disk cache %s\n", n, d.Config.Name, c.CacheDir)
		}
		warmed += n
	}
	train := p.Mix.Train
	var keys []plan.ShardKey
	if c.All {
		for d := range p.Mix.Datasets {
			keys = append(keys, train.DatasetShards(d)...)
		}
	} else {
		keys = train.ShardsAhead(0, int(min(c.Batches, train.NumBatches())), nil)
	}
	trainRefs := remoteRefs(p.Mix.ShardRefs(keys))
	var valRefs []rlds.ShardRef
	if p.Mix.Val != nil {
		keys = keys[:0]
		for d := range p.Mix.Datasets {
			keys = append(keys, p.Mix.Val.DatasetShards(d)...)
		}
		valRefs = remoteRefs(p.Mix.ShardRefs(keys))
	}
	if len(trainRefs)+len(valRefs) == 0 && warmed == 0 {
		fmt.Println("every dataset is local: shards are read in place, nothing to fetch; episode-length indexes are ready")
		return c.stats(ctx, p)
	}
	if err := c.fetchShards(ctx, p, trainRefs, valRefs); err != nil {
		return err
	}
	err = loader.CheckOffline(ctx, p.Mix.Config, p.Store)
	if oe, ok := errors.AsType[*loader.OfflineError](err); ok {
		fmt.Printf("mount --offline cannot serve this mix from this cache; it lacks:\n  %s\n", strings.Join(oe.Missing, "\n  "))
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Println("mount --offline can serve this mix from this cache")
	return c.stats(ctx, p)
}

// stats computes and prints the statistics with --stats.
func (c *warmCmd) stats(ctx context.Context, p *loader.Pipeline) error {
	if !c.Stats {
		return nil
	}
	return printStats(ctx, p, c.Workers, false)
}

// remoteRefs keeps the shards of sources whose files are not read in place.
func remoteRefs(refs []rlds.ShardRef) []rlds.ShardRef {
	var out []rlds.ShardRef
	for _, r := range refs {
		if _, local := r.Dataset.Source.(storage.Filer); !local {
			out = append(out, r)
		}
	}
	return out
}

// cachedOf counts the shards in the disk cache.
func cachedOf(refs []rlds.ShardRef) int {
	n := 0
	for _, r := range refs {
		if _, ok, err := r.Dataset.ShardCached(r.Split, r.Shard); err == nil && ok {
			n++
		}
	}
	return n
}

// fetchShards fetches the remote RLDS shards into the disk cache, the
// train shards first, up to half of --disk, and says how many are there.
func (c *warmCmd) fetchShards(ctx context.Context, p *loader.Pipeline, trainRefs, valRefs []rlds.ShardRef) error {
	remote := append(append([]rlds.ShardRef(nil), trainRefs...), valRefs...)
	if len(remote) == 0 {
		return nil
	}
	bar := newBar(int64(len(remote)), "fetching shards", "shards")
	n, err := p.Store.Prefetch(ctx, remote, 4, func() { _ = bar.Add(1) })
	_ = bar.Finish()
	if err != nil {
		return err
	}
	fmt.Printf("%d of %d shards in the disk cache %s (train %d of %d, val %d of %d)",
		n, len(remote), c.CacheDir, cachedOf(trainRefs), len(trainRefs), cachedOf(valRefs), len(valRefs))
	if n < len(remote) {
		fmt.Printf(" (the rest would exceed half of --disk %s, or failed: see the log)", bytesize.Format(int64(c.Disk)))
	}
	fmt.Println()
	return nil
}
