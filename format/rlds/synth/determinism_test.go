package synth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// tree hashes every file under dir by its relative path. The mix configs
// name dir itself, which is replaced by "DIR" first.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".yaml") {
			b = bytes.ReplaceAll(b, []byte(dir), []byte("DIR"))
		}
		rel, _ := filepath.Rel(dir, path)
		sum := sha256.Sum256(b)
		sums[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

func TestSameSeedSameBytes(t *testing.T) {
	o := Options{Datasets: 4, Episodes: 1, Steps: 3}

	serial := o
	serial.Dir, serial.Workers = t.TempDir(), 1
	old := runtime.GOMAXPROCS(1)
	generate(t, serial)
	runtime.GOMAXPROCS(max(old, 4))
	parallel := o
	parallel.Dir, parallel.Workers = t.TempDir(), 8
	generate(t, parallel)
	runtime.GOMAXPROCS(old)

	other := o
	other.Dir, other.Seed = t.TempDir(), 1
	generate(t, other)

	a, b, c := tree(t, serial.Dir), tree(t, parallel.Dir), tree(t, other.Dir)
	if len(a) < 4*4+3 {
		t.Fatalf("only %d files written", len(a))
	}
	for name, sum := range a {
		if b[name] != sum {
			t.Errorf("%s differs between 1 worker at GOMAXPROCS=1 and 8 workers at GOMAXPROCS=%d", name, max(old, 4))
		}
	}
	if len(b) != len(a) {
		t.Errorf("%d files, then %d", len(a), len(b))
	}
	for name, sum := range a {
		if strings.Contains(name, ".tfrecord-") && c[name] == sum {
			t.Errorf("%s is the same for seeds 0 and 1", name)
		}
	}
}

// concatShards returns a split's shard files end to end: the records in
// order, whatever the sharding.
func concatShards(t *testing.T, dir, dataset, split string) []byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, dataset+"-"+split+".tfrecord-*"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	var all []byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

func TestRerunReplacesCleanly(t *testing.T) {
	dir := t.TempDir()
	o := Options{Dir: dir, Datasets: 2, Episodes: 6, Steps: 3, Shards: 3}
	first := generate(t, o)
	d0 := first.Datasets[0]
	before := concatShards(t, d0.Dir, d0.Name, "train")

	o.Shards = 2
	second := generate(t, o)
	entries, err := os.ReadDir(d0.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{
		"dataset_info.json", "features.json",
		d0.Name + "-train.tfrecord-00000-of-00002", d0.Name + "-train.tfrecord-00001-of-00002",
		d0.Name + "-val.tfrecord-00000-of-00001",
	}
	if !slices.Equal(names, want) {
		t.Errorf("after a re-run with 2 shards the directory holds %v, want %v", names, want)
	}
	// The same episodes, sharded differently.
	if after := concatShards(t, d0.Dir, d0.Name, "train"); !bytes.Equal(before, after) {
		t.Errorf("train records changed with the shard count (%d bytes, then %d)", len(before), len(after))
	}
	if second.Datasets[0].Bytes != first.Datasets[0].Bytes {
		t.Errorf("dataset bytes %d, then %d", first.Datasets[0].Bytes, second.Datasets[0].Bytes)
	}

	// A run stopped part-way leaves no dataset_info.json for what it had not
	// finished, and no temporary files.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Workers = 1
	o.Progress = func(int, int64) { cancel() }
	if _, err := Generate(ctx, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run returned %v", err)
	}
	for _, d := range second.Datasets {
		if _, err := os.Stat(filepath.Join(d.Dir, "dataset_info.json")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: dataset_info.json after an interrupted run: %v", d.Name, err)
		}
		tmp, _ := filepath.Glob(filepath.Join(d.Dir, ".*"))
		if len(tmp) > 0 {
			t.Errorf("%s: temporary files left: %v", d.Name, tmp)
		}
	}
}
