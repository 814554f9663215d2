package main

import (
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/storage"

	"context"
	"fmt"
	"log/slog"

	"github.com/oxefs/oxefs/format/rlds"
)

type warmCmd struct {
	pipelineFlags
	All     bool  `help:"Fetch every shard of every dataset, not only those the first batches need."`
	Batches int64 `help:"Fetch the shards of this many batches from the start, in plan order." default:"10000"`
}

// Run opens the mix (which builds missing episode-length indexes, with
// progress) and fetches remote shards into the disk cache, the first
// needed first, up to half of --disk.
func (c *warmCmd) Run(ctx context.Context, log *slog.Logger) error {
	p, err := c.open(ctx, log)
	if err != nil {
		return err
	}
	defer p.Close()
	train := p.Mix.Train
	var keys []plan.ShardKey
	if c.All {
		for d := range p.Mix.Datasets {
			keys = append(keys, train.DatasetShards(d)...)
		}
	} else {
		keys = train.ShardsAhead(0, int(min(c.Batches, train.NumBatches())), nil)
	}
	var remote []rlds.ShardRef
	for _, r := range p.Mix.ShardRefs(keys) {
		if _, local := r.Dataset.Source.(storage.Filer); !local {
			remote = append(remote, r)
		}
	}
	if len(remote) == 0 {
		fmt.Println("every dataset is local: shards are read in place, nothing to fetch; episode-length indexes are ready")
		return nil
	}
	bar := newBar(int64(len(remote)), "fetching shards", "shards")
	n, err := p.Store.Prefetch(ctx, remote, 4, func() { _ = bar.Add(1) })
	_ = bar.Finish()
	if err != nil {
		return err
	}
	fmt.Printf("%d of %d shards in the disk cache %s", n, len(remote), c.CacheDir)
	if n < len(remote) {
		fmt.Printf(" (the rest would exceed half of --disk %s, or failed: see the log)", rlds.HumanBytes(int64(c.Disk)))
	}
	fmt.Println()
	return nil
}
