package rlds

import (
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/gcs"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/store"

	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oxefs/oxefs/format/rlds/tfrecord"
	"github.com/oxefs/oxefs/internal/testkit"
)

// copyFixture copies a fixture dataset directory into a new temp dir.
func copyFixture(t *testing.T, dir string) string {
	t.Helper()
	return testkit.CopyDir(t, filepath.Join(fixtureDir, dir))
}

// editInfo rewrites a dataset_info.json through edit.
func editInfo(t *testing.T, dir string, edit func(info map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, "dataset_info.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var info map[string]any
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	edit(info)
	if b, err = json.Marshal(info); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// trainShardLengths returns the shardLengths list of the train split.
func trainShardLengths(info map[string]any) []any {
	for _, s := range info["splits"].([]any) {
		if s := s.(map[string]any); s["name"] == "train" {
			return s["shardLengths"].([]any)
		}
	}
	panic("no train split")
}

// wantUnreadable checks that err is a counted-substitution kind of error
// naming the dataset, shard and record, and never a not-found error (which
// would reach a reader as ENOENT for a listed file).
func wantUnreadable(t *testing.T, err error, dataset, shard string, record int, reason string) {
	t.Helper()
	var ce *episode.CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, episode.ErrCorrupt) {
		t.Fatalf("got %v, want a *episode.CorruptError", err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%v matches fs.ErrNotExist: a reader would see ENOENT for a listed batch", err)
	}
	if ce.Dataset != dataset || ce.Shard != shard || ce.Record != record {
		t.Errorf("error names %s/%s/%d, want %s/%s/%d", ce.Dataset, ce.Shard, ce.Record, dataset, shard, record)
	}
	if !strings.Contains(err.Error(), reason) {
		t.Errorf("%q does not say %q", err, reason)
	}
}

// TestMissingShardIsUnreadableData: a shard deleted while the dataset is
// open, or an object missing from GCS, makes its episodes corrupt data
// (episode.ErrMissingShard), not a not-found error; the other shards read.
func TestMissingShardIsUnreadableData(t *testing.T) {
	const shard = "tiny_table-train.tfrecord-00001-of-00002"
	ctx := context.Background()
	check := func(t *testing.T, src storage.Backend) {
		s := newTestStore(t, "")
		ds, err := Open(ctx, s, "table", src)
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := src.(*local.Backend); ok {
			if err := os.Remove(l.Path(shard)); err != nil {
				t.Fatal(err)
			}
		}
		_, err = ds.Episode(ctx, Ref{Split: "train", Shard: 1, Record: 3})
		wantUnreadable(t, err, "table", shard, 3, "missing")
		if !errors.Is(err, episode.ErrMissingShard) {
			t.Errorf("%v does not match episode.ErrMissingShard", err)
		}
		if _, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: 1}); err != nil {
			t.Fatalf("intact shard: %v", err)
		}
	}
	t.Run("local deleted", func(t *testing.T) {
		check(t, local.New(copyFixture(t, "datasets/tiny_table/1.0.0")))
	})
	t.Run("gcs 404", func(t *testing.T) {
		objects := fixtureObjects(t, "datasets/tiny_table/1.0.0")
		delete(objects, path.Join("datasets/tiny_table/1.0.0", shard))
		srv := testkit.StartFakeGCS(t, objects)
		check(t, gcs.NewWithClient(testkit.NewGCSClient(t, srv.URL()), testkit.GCSBucket, path.Join(testkit.GCSPrefix, "datasets/tiny_table/1.0.0")))
	})
}

// TestSourceDownIsUnavailable: a GCS server that stops answering gives
// ErrUnavailable (EIO, retried by later reads), never a not-found error.
func TestSourceDownIsUnavailable(t *testing.T) {
	srv := testkit.StartFakeGCS(t, fixtureObjects(t, "datasets/tiny_table/1.0.0"))
	src := gcs.NewWithClient(testkit.NewGCSClient(t, srv.URL()), testkit.GCSBucket, path.Join(testkit.GCSPrefix, "datasets/tiny_table/1.0.0"))
	s, err := store.NewStore(mustOptions(stackOptions(t, t.TempDir(), 1<<30, retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		MaxElapsed: 200 * time.Millisecond, StallTimeout: time.Second})))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	ds, err := Open(ctx, s, "table", src)
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	_, err = ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: 0})
	if !errors.Is(err, storage.ErrUnavailable) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, episode.ErrCorrupt) {
		t.Fatalf("server down: got %v, want ErrUnavailable only", err)
	}
}

// TestShardShorterThanListed: a shard cut exactly at a record boundary, or
// a dataset_info.json listing more records than a shard holds, makes the
// records past the end corrupt data naming the shard; the rest read.
func TestShardShorterThanListed(t *testing.T) {
	const shard = "tiny_table-train.tfrecord-00000-of-00002"
	ctx := context.Background()
	t.Run("truncated at a record boundary", func(t *testing.T) {
		dir := copyFixture(t, "datasets/tiny_table/1.0.0")
		p := filepath.Join(dir, shard)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		spans, err := tfrecord.Index(f, st.Size())
		f.Close()
		if err != nil || len(spans) < 3 {
			t.Fatalf("fixture shard: %d records, %v", len(spans), err)
		}
		if err := os.Truncate(p, spans[2].Offset); err != nil {
			t.Fatal(err)
		}
		ds, err := Open(ctx, newTestStore(t, ""), "table", local.New(dir))
		if err != nil {
			t.Fatal(err)
		}
		for rec := range len(spans) {
			_, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: rec})
			if rec < 2 {
				if err != nil {
					t.Fatalf("record %d: %v", rec, err)
				}
				continue
			}
			wantUnreadable(t, err, "table", shard, rec, "holds 2 records")
		}
	})
	t.Run("info lists more", func(t *testing.T) {
		dir := copyFixture(t, "datasets/tiny_table/1.0.0")
		editInfo(t, dir, func(info map[string]any) {
			trainShardLengths(info)[0] = "7" // the shard holds 5
		})
		ds, err := Open(ctx, newTestStore(t, ""), "table", local.New(dir))
		if err != nil {
			t.Fatal(err)
		}
		info, _ := ds.Meta.Split("train")
		if info.ShardLengths[0] != 7 {
			t.Fatalf("edited shard length reads %d", info.ShardLengths[0])
		}
		_, err = ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: 6})
		wantUnreadable(t, err, "table", shard, 6, "dataset_info.json lists 7")
	})
}

// TestCheckSplit: metadata that disagrees with the files in a way that is
// cheap to see is an error naming the dataset and the shard.
func TestCheckSplit(t *testing.T) {
	ctx := context.Background()
	const shard1 = "tiny_table-train.tfrecord-00001-of-00002"
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, dir string)
		want string // "" for no error
	}{
		{"intact", func(*testing.T, string) {}, ""},
		{"info lists fewer", func(t *testing.T, dir string) {
			editInfo(t, dir, func(info map[string]any) { trainShardLengths(info)[0] = "3" })
		}, ""},
		{"shard missing", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, shard1)); err != nil {
				t.Fatal(err)
			}
		}, "shard " + shard1 + " is missing"},
		{"shard length 1e15", func(t *testing.T, dir string) {
			editInfo(t, dir, func(info map[string]any) {
				trainShardLengths(info)[1] = "1000000000000000"
				for _, s := range info["splits"].([]any) {
					delete(s.(map[string]any), "numBytes")
				}
			})
		}, "shard " + shard1 + " is"},
		{"more than numBytes holds", func(t *testing.T, dir string) {
			editInfo(t, dir, func(info map[string]any) {
				for _, s := range info["splits"].([]any) {
					s.(map[string]any)["numBytes"] = "100" // 6 records at most; 10 listed
				}
			})
		}, "numBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyFixture(t, "datasets/tiny_table/1.0.0")
			tc.edit(t, dir)
			ds, err := Open(ctx, newTestStore(t, ""), "table", local.New(dir))
			if err != nil {
				t.Fatal(err)
			}
			err = ds.CheckSplit("train")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "table")):
				t.Fatalf("got %v, want an error naming the dataset and %q", err, tc.want)
			}
		})
	}
}
