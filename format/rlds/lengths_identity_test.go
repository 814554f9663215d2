package rlds

import (
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/storage/retry"

	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// TestLengthIndexFollowsRewrites: a dataset rewritten in place with the same
// layout (dataset_info.json unchanged) but other episodes is indexed again,
// locally (the shard's size and mtime changed) and on GCS (its generation
// and CRC32C changed; the stale copy in the disk cache is not read either).
func TestLengthIndexFollowsRewrites(t *testing.T) {
	md := loadManifest(t).Datasets["tiny_bridge"]
	train := md.Splits["train"]
	shardLengths := func(i int) []int32 {
		var out []int32
		for _, r := range train.Shards[i].Records {
			out = append(out, int32(r.NumSteps))
		}
		return out
	}
	if slices.Equal(shardLengths(0), shardLengths(1)) || len(train.Shards) != 3 {
		t.Fatal("fixture: shards 0 and 1 of tiny_bridge train must hold episodes of other lengths")
	}
	before := slices.Concat(shardLengths(0), shardLengths(1), shardLengths(2))
	// The rewrite puts shard 1's records in shard 0: same record count.
	after := slices.Concat(shardLengths(1), shardLengths(1), shardLengths(2))
	objects := fixtureObjects(t, md.Dir)
	shard0, shard1 := train.Shards[0].File, train.Shards[1].File
	rewritten := objects[path.Join(md.Dir, shard1)]

	// index opens the dataset in a new store over cacheDir (as a new mount
	// would) and builds or loads its train length index.
	index := func(t *testing.T, cacheDir string, src storage.Backend) []int32 {
		t.Helper()
		s := newTestStore(t, cacheDir)
		ds, err := Open(context.Background(), s, "", src)
		if err != nil {
			t.Fatal(err)
		}
		l, err := ds.BuildLengths(context.Background(), []string{"train"}, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l.Splits["train"]
	}
	check := func(t *testing.T, what string, got, want []int32) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: train lengths %v, want %v", what, got, want)
		}
	}

	t.Run("local", func(t *testing.T) {
		dir := t.TempDir()
		for name, b := range objects {
			if err := os.WriteFile(filepath.Join(dir, path.Base(name)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cacheDir := t.TempDir()
		src := local.New(dir)
		check(t, "first index", index(t, cacheDir, src), before)
		if err := os.WriteFile(filepath.Join(dir, shard0), rewritten, 0o644); err != nil {
			t.Fatal(err)
		}
		check(t, "after the rewrite", index(t, cacheDir, src), after)
		check(t, "reloaded", index(t, cacheDir, src), after)
	})

	t.Run("gcs", func(t *testing.T) {
		srv := testkit.StartFakeGCS(t, objects)
		src := gcs.NewWithClient(testkit.NewGCSClient(t, srv.URL()), testkit.GCSBucket, path.Join(testkit.GCSPrefix, md.Dir))
		cacheDir := t.TempDir()
		check(t, "first index", index(t, cacheDir, src), before)
		srv.CreateObject(fakestorage.Object{
			ObjectAttrs: fakestorage.ObjectAttrs{BucketName: testkit.GCSBucket, Name: path.Join(testkit.GCSPrefix, md.Dir, shard0)},
			Content:     rewritten,
		})
		check(t, "after the rewrite", index(t, cacheDir, src), after)
		check(t, "reloaded", index(t, cacheDir, src), after)
	})
}

// TestStatClassifiesErrors: both sources report a missing file as
// fs.ErrNotExist from Stat, and retry's Stat gives a dead source up as
// ErrUnavailable.
func TestStatClassifiesErrors(t *testing.T) {
	md := loadManifest(t).Datasets["tiny_bridge"]
	srv := testkit.StartFakeGCS(t, fixtureObjects(t, md.Dir))
	remote := gcs.NewWithClient(testkit.NewGCSClient(t, srv.URL()), testkit.GCSBucket, path.Join(testkit.GCSPrefix, md.Dir))
	dir := local.New(filepath.Join(fixtureDir, md.Dir))
	for _, src := range []storage.Backend{dir, remote} {
		f := retry.New(src, retry.Policy{}, nil, nil)
		info, err := f.Stat(context.Background(), "dataset_info.json")
		if err != nil || info.Size == 0 || info.Version == "" {
			t.Errorf("%s: Stat(dataset_info.json) = %+v, %v", src.Location(), info, err)
		}
		if _, err := f.Stat(context.Background(), "nope.json"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: Stat of a missing file: %v, want fs.ErrNotExist", src.Location(), err)
		}
	}
	proxy := newObjectProxy(t, srv.URL(), func(string, int) proxyAction { return actHang })
	dead := gcs.NewWithClient(testkit.NewGCSClient(t, proxy.URL()), testkit.GCSBucket, path.Join(testkit.GCSPrefix, md.Dir))
	f := retry.New(dead, retry.Policy{InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		MaxElapsed: 300 * time.Millisecond, StallTimeout: 100 * time.Millisecond}, nil, nil)
	if _, err := f.Stat(context.Background(), "dataset_info.json"); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Stat through a hanging source: %v, want ErrUnavailable", err)
	}
}
