package rlds

import (
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/internal/testkit/cachekit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/offline"
	"github.com/oxefs/oxefs/store"

	"context"
	"errors"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"testing"
)

// TestOfflineOpen: before SaveOffline an offline store lacks the
// dataset's record and says which files; after it, with the fake server
// stopped, it opens the dataset with the same metadata, takes the length
// index built online as its own, reads the cached shard, and reports an
// uncached one as not cached (never as a missing shard, which would be
// substituted as corrupt data).
func TestOfflineOpen(t *testing.T) {
	ctx := context.Background()
	md := loadManifest(t).Datasets["tiny_bridge"]
	srv := testkit.StartFakeGCS(t, fixtureObjects(t, md.Dir))
	src := gcs.NewWithClient(testkit.NewGCSClient(t, srv.URL()), testkit.GCSBucket, path.Join(testkit.GCSPrefix, md.Dir))
	cacheDir := t.TempDir()

	offlineStore := func(t *testing.T) *store.Store {
		t.Helper()
		disk := cachekit.Disk(t, cacheDir, 1<<30, testkit.TestLogger(t), 0)
		s, err := store.NewStore(store.Options{IndexDir: cacheDir, Disk: disk, Offline: true, Log: testkit.TestLogger(t),
			Remote: func(b storage.Backend) storage.Backend { return offline.New(b) }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}

	s := offlineStore(t)
	if got := MissingOffline(s, src); !slices.Equal(got, []string{"dataset_info.json", "features.json", "shards.json"}) {
		t.Fatalf("MissingOffline before SaveOffline: %v", got)
	}
	var nc *offline.NotCachedError
	if _, err := Open(ctx, s, "", src); !errors.As(err, &nc) || nc.Name != "dataset_info.json" {
		t.Fatalf("offline open without a record: %v, want a NotCachedError naming dataset_info.json", err)
	}

	online := newTestStore(t, cacheDir)
	ds, err := Open(ctx, online, "", src)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ds.BuildLengths(ctx, []string{"train"}, 2, nil) // fetches every train shard
	if err != nil {
		t.Fatal(err)
	}
	cached, _ := ds.ShardName("train", 0)
	if _, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: 0}); err != nil {
		t.Fatal(err)
	}
	if err := ds.SaveOffline(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Stop()

	s = offlineStore(t)
	if got := MissingOffline(s, src); len(got) != 0 {
		t.Fatalf("MissingOffline after SaveOffline: %v", got)
	}
	off, err := Open(ctx, s, "", src)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(off.Info(), ds.Info()) || !reflect.DeepEqual(off.Meta, ds.Meta) {
		t.Fatal("the offline open describes the dataset differently")
	}
	got, err := off.LoadLengths()
	if err != nil {
		t.Fatalf("offline LoadLengths: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("offline length index %+v, want %+v", got, want)
	}
	if name, ok, _ := off.ShardCached("train", 0); !ok || name != cached {
		t.Fatalf("ShardCached(train, 0) = %s, %v; want %s, true", name, ok, cached)
	}
	if _, err := off.Episode(ctx, Ref{Split: "train", Shard: 0, Record: 1}); err != nil {
		t.Fatalf("episode of a cached shard, offline: %v", err)
	}
	if _, ok, _ := off.ShardCached("val", 0); ok {
		t.Fatal("ShardCached(val, 0): true for a shard never fetched")
	}
	_, err = off.Episode(ctx, Ref{Split: "val", Shard: 0, Record: 0})
	if !errors.Is(err, offline.ErrNotCached) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, episode.ErrCorrupt) {
		t.Fatalf("episode of an uncached shard, offline: %v; want ErrNotCached, not missing or corrupt", err)
	}
}
