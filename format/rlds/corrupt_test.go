package rlds

import (
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/local"

	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

type corruptIndex struct {
	Variants map[string]struct {
		Shard       string `json:"shard"`
		RecordIndex int    `json:"record_index"`
		Kind        string `json:"kind"`
		MissingKey  string `json:"missing_key"`
		Dir         string `json:"dir"`
	} `json:"variants"`
}

// TestCorruptVariants reads every episode of each corrupt fixture, from the
// local directory and through GCS: exactly the damaged record fails, with a
// *episode.CorruptError naming the dataset, shard and record; every other record
// reads; nothing panics.
func TestCorruptVariants(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(fixtureDir, "corrupt", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx corruptIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bad_crc", "truncated", "not_example", "missing_image"} {
		if _, ok := idx.Variants[want]; !ok {
			t.Fatalf("corrupt/index.json lacks variant %s", want)
		}
	}
	var dirs []string
	for _, v := range idx.Variants {
		dirs = append(dirs, v.Dir)
	}
	gcs := gcsFixture(t, dirs...)
	ctx := context.Background()
	for name, v := range idx.Variants {
		for _, via := range []string{"local", "gcs"} {
			t.Run(name+"/"+via, func(t *testing.T) {
				s := newTestStore(t, "")
				var src storage.Backend = local.New(filepath.Join(fixtureDir, v.Dir))
				if via == "gcs" {
					src = gcs[v.Dir]
				}
				ds, err := Open(ctx, s, name, src)
				if err != nil {
					t.Fatal(err)
				}
				info, _ := ds.Meta.Split("train")
				failures := 0
				for shard, n := range info.ShardLengths {
					for rec := range int(n) {
						ep, err := ds.Episode(ctx, Ref{Split: "train", Shard: shard, Record: rec})
						if err == nil && v.MissingKey != "" {
							_, err = ep.Feature(v.MissingKey)
						}
						shardName, _ := ds.ShardName("train", shard)
						bad := shardName == v.Shard && rec == v.RecordIndex
						if !bad {
							if err != nil {
								t.Errorf("intact record %s/%d: %v", shardName, rec, err)
							}
							continue
						}
						failures++
						var ce *episode.CorruptError
						if !errors.Is(err, episode.ErrCorrupt) || !errors.As(err, &ce) {
							t.Fatalf("damaged record %s/%d: got %v, want a *episode.CorruptError", shardName, rec, err)
						}
						if ce.Dataset != name || ce.Shard != v.Shard || ce.Record != v.RecordIndex {
							t.Errorf("error names %s/%s/%d, want %s/%s/%d", ce.Dataset, ce.Shard, ce.Record, name, v.Shard, v.RecordIndex)
						}
						t.Logf("%s: %v", v.Kind, err)
					}
				}
				if failures != 1 {
					t.Fatalf("%d damaged records checked, want 1", failures)
				}
			})
		}
	}
}
