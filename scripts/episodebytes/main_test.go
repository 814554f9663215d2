package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/oxefs/oxefs/format/rlds/synth"
)

// TestMeasure writes a small synth dataset of two train shards of three
// episodes each and measures episodes of it against the files' sizes.
func TestMeasure(t *testing.T) {
	dir := t.TempDir()
	res, err := synth.Generate(context.Background(), synth.Options{Dir: dir, Datasets: 1, Episodes: 6, Shards: 2, Steps: 3})
	if err != nil {
		t.Fatal(err)
	}
	name := res.Datasets[0].Name
	shards, err := filepath.Glob(filepath.Join(res.Datasets[0].Dir, name+"-train.tfrecord-*"))
	if err != nil || len(shards) != 2 {
		t.Fatalf("train shards %v, %v", shards, err)
	}
	st, err := os.Stat(shards[0])
	if err != nil {
		t.Fatal(err)
	}
	id := func(shard, record string) string { return name + "/train/" + shard + "/" + record }

	// Every record of shard 0, one of them twice: the whole file, reached
	// in three hops.
	sum, err := measure(dir, []string{id("0", "2"), id("0", "0"), id("0", "1"), id("0", "2")})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Samples != 4 || sum.Episodes != 3 || sum.Shards != 1 || sum.Hops != 3 || sum.Bytes != st.Size() {
		t.Errorf("shard 0 whole: %+v, want 4 samples, 3 episodes, 1 shard, 3 hops, %d bytes", sum, st.Size())
	}
	if sum.DatasetBytes[name] != sum.Bytes {
		t.Errorf("dataset bytes %v, total %d", sum.DatasetBytes, sum.Bytes)
	}

	// The first record of each shard: one hop each, concurrently; less
	// than both files.
	sum, err = measure(dir, []string{id("0", "0"), id("1", "0")})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Episodes != 2 || sum.Shards != 2 || sum.Hops != 1 || sum.Bytes <= 0 || sum.Bytes >= st.Size() {
		t.Errorf("first records: %+v", sum)
	}

	// A batch's metadata file names its episodes.
	batch := filepath.Join(t.TempDir(), "000000.json")
	if err := os.WriteFile(batch, []byte(`{"dataset_name":["a","a"],"episode_id":["`+id("1", "2")+`","`+id("1", "2")+`"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ids, err := batchEpisodes(batch)
	if err != nil || len(ids) != 2 {
		t.Fatalf("batch episodes %v, %v", ids, err)
	}
	if sum, err = measure(dir, ids); err != nil || sum.Episodes != 1 || sum.Hops != 3 {
		t.Errorf("batch file: %+v, %v", sum, err)
	}

	for _, bad := range []string{name + "/train/0", name + "/train/0/9", name + "/train/5/0", "nosuch/train/0/0", name + "/train/x/0"} {
		if _, err := measure(dir, []string{bad}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
