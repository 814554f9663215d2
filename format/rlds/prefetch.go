package rlds

import (
	"context"
	"errors"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/store"
)

// ShardRef names one shard of one dataset.
type ShardRef struct {
	Dataset *Dataset
	Split   string
	Shard   int
}

// estimatedSize is the mean shard size of the split, from dataset_info.json.
func (r ShardRef) estimatedSize() int64 {
	s, ok := r.Dataset.Meta.Split(r.Split)
	if !ok || len(s.ShardLengths) == 0 {
		return 0
	}
	return s.NumBytes / int64(len(s.ShardLengths))
}

// Prefetch fetches remote shards into the disk cache in the given order, at
// most parallel at a time. It stops before the listed shards would take more
// than half of the disk budget: the other half holds the shards being read,
// so prefetching never evicts what the reads in progress need. Shards of local
// sources need no fetch and are skipped. A failed fetch is logged and
// skipped; the read that needs the shard retries it and reports the error.
// A fetch that fails with storage.ErrUnavailable ends the pass, and Prefetch returns
// its error: the source is down, and each further shard would wait out the
// retry budget again while the reads wait too.
// It returns the number of shards now in the cache, or an error.
// progress, when not nil, is called after each shard (fetched or failed),
// from several goroutines.
func Prefetch(ctx context.Context, s *store.Store, refs []ShardRef, parallel int, progress func()) (int, error) {
	budget := s.DiskBudget()
	if budget == 0 {
		return 0, nil // no remote source can have been opened
	}
	limit := budget / 2
	var (
		planned int64
		done    atomic.Int64
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(parallel, 1))
	for _, r := range refs {
		if storage.IsFiler(r.Dataset.Source) {
			continue
		}
		planned += r.estimatedSize()
		if planned > limit {
			break
		}
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if progress != nil {
				defer progress()
			}
			name, err := r.Dataset.ShardName(r.Split, r.Shard)
			if err != nil {
				return err
			}
			f, _, err := r.Dataset.openShard(gctx, name, true)
			if err != nil {
				if errors.Is(err, storage.ErrUnavailable) {
					return err
				}
				if gctx.Err() == nil {
					s.Log().Warn("prefetch failed; the read will retry", "dataset", r.Dataset.Name, "shard", name, "err", err)
				}
				return nil
			}
			done.Add(1)
			return f.Close()
		})
	}
	err := g.Wait()
	if err == nil {
		err = ctx.Err()
	}
	if errors.Is(err, context.Canceled) && ctx.Err() == nil {
		err = nil
	}
	return int(done.Load()), err
}
