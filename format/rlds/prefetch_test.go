package rlds

import (
	"context"
	"testing"

	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/store"
)

func TestPrefetchFillsDiskCacheInOrderWithinBudget(t *testing.T) {
	m := loadManifest(t)
	md := m.Datasets["tiny_bridge"]
	srcs := gcsFixture(t, md.Dir)
	ctx := context.Background()

	var refs []ShardRef
	open := func(budget int64) (*store.Store, *Dataset) {
		s, err := store.NewStore(mustOptions(stackOptions(t, t.TempDir(), budget, retry.Policy{})))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		ds, err := Open(ctx, s, "", srcs[md.Dir])
		if err != nil {
			t.Fatal(err)
		}
		refs = refs[:0]
		for _, split := range []string{"val", "train"} {
			info, _ := ds.Meta.Split(split)
			for i := range info.ShardLengths {
				refs = append(refs, ShardRef{Dataset: ds, Split: split, Shard: i})
			}
		}
		return s, ds
	}

	// A roomy budget: every listed shard is fetched.
	s, ds := open(1 << 30)
	n, err := Prefetch(ctx, s, refs, 2, nil)
	if err != nil || n != len(refs) {
		t.Fatalf("Prefetch = %d, %v; want all %d shards", n, err, len(refs))
	}
	for _, r := range refs {
		name, _ := ds.ShardName(r.Split, r.Shard)
		if !wholeCached(t, ds, name) {
			t.Errorf("%s not in the disk cache after Prefetch", name)
		}
	}
	// Reads after a prefetch are disk cache hits.
	misses := s.Disk().Stats.Misses.Load()
	if _, err := ds.Episode(ctx, Ref{Split: "train", Shard: 2, Record: 0}); err != nil {
		t.Fatal(err)
	}
	if s.Disk().Stats.Misses.Load() != misses {
		t.Error("a read after Prefetch missed the disk cache")
	}

	// A budget whose half holds about two shards: only the first ones in
	// the given order are fetched.
	shard := ShardRef{Dataset: ds, Split: "train"}.estimatedSize()
	s, ds = open(5 * shard)
	n, err = Prefetch(ctx, s, refs, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || n >= len(refs) {
		t.Fatalf("Prefetch fetched %d of %d shards under a budget of about 2.5 shards", n, len(refs))
	}
	for i, r := range refs {
		name, _ := ds.ShardName(r.Split, r.Shard)
		if got := wholeCached(t, ds, name); got != (i < n) {
			t.Errorf("shard %d (%s) cached=%v; want the first %d in order", i, name, got, n)
		}
	}
}
