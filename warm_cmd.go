package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/internal/bytesize"
	"github.com/oxefs/oxefs/loader"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/storage"
)

type warmCmd struct {
	pipelineFlags
	All     bool  `help:"Fetch every train shard of every dataset, not only those the first batches need."`
	Batches int64 `help:"Fetch the train shards of this many batches from the start, in plan order." default:"10000"`
	Stats   bool  `help:"Also compute each dataset's normalisation statistics (as oxefs stats does; it reads every train episode, so every train shard is fetched)."`
}

// Run opens the mix (which builds missing episode-length indexes, with
// progress), saves what each remote dataset's format needs for mount
// --offline (loader.Dataset.Warm: an RLDS dataset's metadata, every file
// a LeRobot dataset's selections read, whole), and fetches remote shards
// into the disk cache (format.Prefetch): the
// train shards, the first needed first, then those of the val view, up to
// half of --disk. It ends by saying whether mount --offline can serve the
// mix.
func (c *warmCmd) Run(ctx context.Context, log *slog.Logger) error {
	p, err := c.open(ctx, log, false, nil, false)
	if err != nil {
		return err
	}
	defer p.Close()
	warmed := 0 // files fetched whole (LeRobot)
	for _, d := range p.Mix.Datasets {
		var bar progress
		n, err := d.Warm(ctx, func(done, total int) {
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
			fmt.Printf("%d files of %s dataset %s in the disk cache %s\n", n, format.NameOf(d.Data), d.Config.Name, c.CacheDir)
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
	var valRefs []format.ShardRef
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
	reportDamage(p)
	err = loader.CheckOffline(ctx, p.Mix.Config, p.Env)
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

// reportDamage says how many fetches came damaged (failed their checksum
// or their format's check) and were fetched again, and how many objects
// came damaged every time and were not kept: those are not in the cache,
// so the offline check that follows names them.
func reportDamage(p *loader.Pipeline) {
	disk := p.Storage.Disk
	if disk == nil {
		return
	}
	if n := disk.Stats.Damaged.Load(); n > 0 {
		fmt.Printf("%d fetches came damaged (failed their checksum) and were fetched again; "+
			"%d reads got damaged bytes on every try and kept nothing (see the log)\n", n, disk.Stats.Rejected.Load())
	}
}

// stats computes and prints the statistics with --stats.
func (c *warmCmd) stats(ctx context.Context, p *loader.Pipeline) error {
	if !c.Stats {
		return nil
	}
	return printStats(ctx, p, c.Workers, c.Decoder, false)
}

// remoteRefs keeps the shards of sources whose files are not read in place.
func remoteRefs(refs []format.ShardRef) []format.ShardRef {
	var out []format.ShardRef
	for _, r := range refs {
		if !storage.IsFiler(r.Dataset.Backend()) {
			out = append(out, r)
		}
	}
	return out
}

// cachedOf counts the shards in the disk cache.
func cachedOf(refs []format.ShardRef) int {
	n := 0
	for _, r := range refs {
		if ok, err := format.FetcherOf(r.Dataset).ShardCached(r); err == nil && ok {
			n++
		}
	}
	return n
}

// fetchShards fetches the remote shards into the disk cache, the
// train shards first, up to half of --disk, and says how many are there.
func (c *warmCmd) fetchShards(ctx context.Context, p *loader.Pipeline, trainRefs, valRefs []format.ShardRef) error {
	remote := append(append([]format.ShardRef(nil), trainRefs...), valRefs...)
	if len(remote) == 0 {
		return nil
	}
	bar := newBar(int64(len(remote)), "fetching shards", "shards")
	n, err := format.Prefetch(ctx, remote, 4, func() { _ = bar.Add(1) })
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
