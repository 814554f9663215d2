package rlds

import (
	"context"
	"errors"
	"fmt"

	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/store"
)

// FetchShards brings the remote shards that a batch is about to read into
// the disk cache, all at once and as reads (prefetches yield to them), and
// waits for them. It returns as soon as one of them fails with
// storage.ErrUnavailable (or is remembered to have failed: see diskcache), so a
// batch over dead shards fails within one retry budget, MaxElapsed +
// StallTimeout, however many shards or samples it has; the fetches
// themselves go on under the store's lifetime for whoever needs them next.
// Other errors (a missing shard, a disk cache failure) are left to the
// episode reads, which meet them again and report or substitute per
// episode. Local shards need no fetch and are skipped.
//
// It runs one goroutine per shard: refs is one batch's shards, so their
// number is bounded by the batch size.
func FetchShards(ctx context.Context, s *store.Store, refs []ShardRef) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the waits still running return; their fills go on
	errs := make(chan error, len(refs))
	n := 0
	for _, r := range refs {
		if storage.IsFiler(r.Dataset.Source) {
			continue
		}
		n++
		go func() {
			errs <- fetchShard(ctx, s, r)
		}()
	}
	for range n {
		if err := <-errs; errors.Is(err, storage.ErrUnavailable) {
			return err
		}
	}
	return ctx.Err()
}

// fetchShard opens one shard through the disk cache and closes it.
func fetchShard(ctx context.Context, s *store.Store, r ShardRef) error {
	name, err := r.Dataset.ShardName(r.Split, r.Shard)
	if err != nil {
		return err
	}
	done, ok := s.Begin()
	if !ok {
		return context.Canceled
	}
	defer done()
	f, _, err := r.Dataset.openShard(ctx, name, false)
	if err != nil {
		return fmt.Errorf("dataset %s split %s: %w", r.Dataset.Name, r.Split, err)
	}
	return f.Close()
}

// EpisodeRef names one episode of one dataset.
type EpisodeRef struct {
	Dataset *Dataset
	Ref     Ref
}

// FetchEpisodes brings the episodes that a batch is about to read into the
// disk cache, each on its own (the record's byte range, after indexing its
// shard by header hops) unless its whole shard is there already, all at
// once, and waits for them. Like FetchShards it returns as soon as one
// fails with storage.ErrUnavailable, leaves other errors to the episode
// reads, and skips local sources; unlike it, it never waits for a whole
// shard. Each episode is fetched once however many refs name it.
//
// It runs one goroutine per episode: refs is one batch's, so their number
// is bounded by the batch size; the shards indexed at once are bounded
// by the store.
func FetchEpisodes(ctx context.Context, s *store.Store, refs []EpisodeRef) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(refs))
	seen := make(map[EpisodeRef]bool, len(refs))
	n := 0
	for _, r := range refs {
		if storage.IsFiler(r.Dataset.Source) || seen[r] {
			continue
		}
		seen[r] = true
		n++
		go func() {
			errs <- fetchEpisode(ctx, s, r)
		}()
	}
	for range n {
		if err := <-errs; errors.Is(err, storage.ErrUnavailable) {
			return err
		}
	}
	return ctx.Err()
}

// fetchEpisode opens one episode's record through the disk cache and
// closes it.
func fetchEpisode(ctx context.Context, s *store.Store, r EpisodeRef) error {
	name, err := r.Dataset.ShardName(r.Ref.Split, r.Ref.Shard)
	if err != nil {
		return err
	}
	done, ok := s.Begin()
	if !ok {
		return context.Canceled
	}
	defer done()
	f, _, _, err := r.Dataset.openRecord(ctx, r.Ref, name)
	if err != nil {
		return err
	}
	return f.Close()
}
