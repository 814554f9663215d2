package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/format/rlds/tfrecord"
	"github.com/oxefs/oxefs/internal/testkit"
)

const tableShard0 = "tiny_table-train.tfrecord-00000-of-00002"
const tableShard1 = "tiny_table-train.tfrecord-00001-of-00002"

// tableMix writes a one-dataset mix config over source.
func tableMix(t *testing.T, source string, extra string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "mix.yaml")
	text := "batch_size: 4\nimage_size: [32, 32]\nnum_batches: 30\ndatasets:\n  - name: table\n    source: " + source + "\n" + extra
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

type subStats struct {
	Substitutions map[string]int64                   `json:"substitutions"`
	BadEpisodes   []struct{ Episode, Reason string } `json:"bad_episodes"`
}

// readAllBatches reads every listed train batch, .npy and .json, and
// fails on any error.
func readAllBatches(t *testing.T, mnt string) {
	t.Helper()
	var info mountInfo
	readJSON(t, filepath.Join(mnt, "info.json"), &info)
	if info.NumBatches == 0 {
		t.Fatal("no batches listed")
	}
	for i := range info.NumBatches {
		for _, ext := range []string{".npy", ".json"} {
			if _, err := os.ReadFile(filepath.Join(mnt, "batches", fmt.Sprintf("%06d%s", i, ext))); err != nil {
				t.Fatalf("batch %d%s: %v", i, ext, err)
			}
		}
	}
}

// wantSubstituted checks stats.json: substitutions of kind counted, and
// the bad episodes of shard (index) listed with a reason naming reason.
func wantSubstituted(t *testing.T, mnt, kind string, shard int, reason string) {
	t.Helper()
	var stats subStats
	readJSON(t, filepath.Join(mnt, "stats.json"), &stats)
	if stats.Substitutions[kind] == 0 {
		t.Fatalf("stats.json substitutions %v, want %s counted", stats.Substitutions, kind)
	}
	named := 0
	for _, b := range stats.BadEpisodes {
		if !strings.HasPrefix(b.Episode, fmt.Sprintf("table/train/%d/", shard)) {
			t.Errorf("bad episode %s (%s) is not in shard %d", b.Episode, b.Reason, shard)
		}
		if strings.Contains(b.Reason, reason) {
			named++
		}
	}
	if named == 0 {
		t.Fatalf("no bad episode names %q: %+v", reason, stats.BadEpisodes)
	}
}

// TestMountLocalShardDeleted deletes a shard of a local dataset while it is
// mounted: every listed batch still reads, with the shard's episodes
// substituted, counted as missing_shard and named in stats.json and the
// log. With --strict the batches that need it fail with EIO, never ENOENT.
func TestMountLocalShardDeleted(t *testing.T) {
	testkit.RequireFUSE(t)
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			data := testkit.CopyDir(t, "testdata/datasets/tiny_table/1.0.0")
			mnt := t.TempDir()
			args := []string{"--config", tableMix(t, data, ""), "--cache-dir", t.TempDir(), "--readahead", "0"}
			if strict {
				args = append(args, "--strict")
			}
			d := startMount(t, mnt, nil, args...)
			if err := os.Remove(filepath.Join(data, tableShard1)); err != nil {
				t.Fatal(err)
			}
			if !strict {
				readAllBatches(t, mnt)
				wantSubstituted(t, mnt, "missing_shard", 1, tableShard1)
				if !strings.Contains(d.stderr(), "missing") || !strings.Contains(d.stderr(), tableShard1) {
					t.Fatalf("no log line names the missing shard:\n%s", d.stderr())
				}
				return
			}
			var info mountInfo
			readJSON(t, filepath.Join(mnt, "info.json"), &info)
			failed := 0
			for i := range info.NumBatches {
				_, err := os.ReadFile(filepath.Join(mnt, "batches", fmt.Sprintf("%06d.npy", i)))
				switch {
				case err == nil:
				case errors.Is(err, syscall.EIO):
					failed++
				default:
					t.Fatalf("batch %d: %v, want data or EIO", i, err)
				}
			}
			if failed == 0 {
				t.Fatal("--strict: no batch failed although a shard is gone")
			}
		})
	}
}

// TestMountGCSObjectMissing serves a dataset from fake GCS with one shard
// object absent: every batch reads, the shard's episodes substituted and
// counted as missing_shard.
func TestMountGCSObjectMissing(t *testing.T) {
	testkit.RequireFUSE(t)
	data := testkit.CopyDir(t, "testdata/datasets/tiny_table/1.0.0")
	if err := os.Remove(filepath.Join(data, tableShard1)); err != nil {
		t.Fatal(err)
	}
	srv := fakeGCS(t, "robotics", map[string]string{"tiny_table/1.0.0": data})
	env := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(srv.URL(), "http://")}
	mnt := t.TempDir()
	startMount(t, mnt, env, "--config", tableMix(t, "gs://robotics/tiny_table/1.0.0", "    anonymous: true\n"),
		"--cache-dir", t.TempDir())
	readAllBatches(t, mnt)
	wantSubstituted(t, mnt, "missing_shard", 1, tableShard1)
}

// TestMountShardCutAtRecordBoundary cuts a shard exactly after its third
// record (dataset_info.json lists five): the two lost episodes are
// substituted and counted as corrupt, and every batch reads.
func TestMountShardCutAtRecordBoundary(t *testing.T) {
	testkit.RequireFUSE(t)
	data := testkit.CopyDir(t, "testdata/datasets/tiny_table/1.0.0")
	p := filepath.Join(data, tableShard0)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	spans, err := tfrecord.Index(f, st.Size())
	f.Close()
	if err != nil || len(spans) != 5 {
		t.Fatalf("fixture shard: %d records, %v", len(spans), err)
	}
	if err := os.Truncate(p, spans[3].Offset); err != nil {
		t.Fatal(err)
	}
	mnt := t.TempDir()
	startMount(t, mnt, nil, "--config", tableMix(t, data, ""), "--cache-dir", t.TempDir())
	readAllBatches(t, mnt)
	wantSubstituted(t, mnt, "corrupt", 0, "holds 3 records")
}

// TestMountRefusesMetadataThatDisagrees: a local shard that
// dataset_info.json lists but that is not there, or a shard length no file
// could hold, stops the mount with a message naming the dataset and shard.
func TestMountRefusesMetadataThatDisagrees(t *testing.T) {
	testkit.RequireFUSE(t)
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, dir string)
		want string
	}{
		{"shard missing", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, tableShard1)); err != nil {
				t.Fatal(err)
			}
		}, tableShard1 + " is missing"},
		{"shard length 1e15", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "dataset_info.json")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			edited := strings.Replace(string(b), `"shardLengths": [
        "5",
        "5"
      ]`, `"shardLengths": ["5", "1000000000000000"]`, 1)
			if edited == string(b) {
				t.Fatalf("fixture dataset_info.json has another layout:\n%s", b)
			}
			if err := os.WriteFile(p, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "1000000000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := testkit.CopyDir(t, "testdata/datasets/tiny_table/1.0.0")
			tc.edit(t, data)
			dir := t.TempDir()
			cmd := exec.Command(oxefsBin, "mount", dir, "--config", tableMix(t, data, ""), "--cache-dir", t.TempDir())
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case err := <-exited:
				if err == nil {
					t.Fatalf("mount exited 0:\n%s", stderr.String())
				}
			case <-time.After(60 * time.Second): // it mounted and serves
				cmd.Process.Signal(syscall.SIGTERM)
				<-exited
				t.Fatalf("mount accepted metadata that disagrees with the files:\n%s", stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) || !strings.Contains(stderr.String(), "table") {
				t.Fatalf("stderr lacks %q and the dataset name:\n%s", tc.want, stderr.String())
			}
		})
	}
}
