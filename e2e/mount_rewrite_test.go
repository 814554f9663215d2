package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/internal/testkit/fakehub"
)

// reversedShards returns files with the records of every TFRecord shard in
// reverse order: valid shards of the same names, record counts and sizes
// (dataset_info.json still holds), whose episodes are other bytes.
func reversedShards(t *testing.T, files map[string][]byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	changed := 0
	for name, b := range files {
		if !strings.Contains(name, ".tfrecord-") {
			out[name] = b
			continue
		}
		// TFRecord framing: a little-endian uint64 length, its CRC (4
		// bytes), the data, the data's CRC (4 bytes). Whole records move,
		// so every CRC still holds.
		var records [][]byte
		for off := 0; off < len(b); {
			if off+12 > len(b) {
				t.Fatalf("%s: a record header cut at %d", name, off)
			}
			end := off + 12 + int(binary.LittleEndian.Uint64(b[off:])) + 4
			if end > len(b) {
				t.Fatalf("%s: a record cut at %d", name, off)
			}
			records = append(records, b[off:end])
			off = end
		}
		var r []byte
		for i := len(records) - 1; i >= 0; i-- {
			r = append(r, records[i]...)
		}
		if !bytes.Equal(r, b) {
			changed++
		}
		out[name] = r
	}
	if changed == 0 {
		t.Fatal("no shard changed")
	}
	return out
}

// TestMountAfterRewrite: the dataset's shards are rewritten at the source
// (their records reversed: same names and sizes, other bytes) on each
// scheme's way of making a new version: an overwrite in a versioned S3
// bucket (a new version id), one in an unversioned bucket (a new ETag), a
// GCS rewrite (a new generation) and a Hub branch moved to a new commit. A
// second daemon on the first one's disk cache serves what a fresh mount of
// the new data serves, batch for batch, while the first daemon, still
// running, keeps serving the version it read; `oxefs warm` of the new data
// over the old cache, then `mount --offline`, serves the new data too.
func TestMountAfterRewrite(t *testing.T) {
	testkit.RequireFUSE(t)
	old := testkit.ReadDirFiles(t, "testdata/datasets/tiny_bridge/1.0.0")
	rewritten := reversedShards(t, old)
	for _, tc := range []struct {
		name string
		// start serves files and returns the source, the environment
		// that reaches it, and a function that writes new files over
		// the old ones.
		start func(t *testing.T, files map[string][]byte) (source string, env []string, put func(map[string][]byte))
	}{
		{"s3 versioned", func(t *testing.T, files map[string][]byte) (string, []string, func(map[string][]byte)) {
			srv := testkit.StartFakeS3(t, "robotics", nil)
			srv.Versioned(t, "robotics")
			put := func(fs map[string][]byte) {
				for name, b := range fs {
					srv.Put(t, "robotics", "tiny_bridge/1.0.0/"+name, b)
				}
			}
			put(files)
			return "s3://robotics/tiny_bridge/1.0.0", srv.Env(), put
		}},
		{"s3 unversioned", func(t *testing.T, files map[string][]byte) (string, []string, func(map[string][]byte)) {
			srv := testkit.StartFakeS3(t, "robotics", nil)
			put := func(fs map[string][]byte) {
				for name, b := range fs {
					srv.Put(t, "robotics", "tiny_bridge/1.0.0/"+name, b)
				}
			}
			put(files)
			return "s3://robotics/tiny_bridge/1.0.0", srv.Env(), put
		}},
		{"gcs", func(t *testing.T, files map[string][]byte) (string, []string, func(map[string][]byte)) {
			srv := fakeGCS(t, "robotics", nil)
			srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "robotics", VersioningEnabled: true})
			put := func(fs map[string][]byte) {
				for name, b := range fs {
					srv.CreateObject(fakestorage.Object{
						ObjectAttrs: fakestorage.ObjectAttrs{BucketName: "robotics", Name: "tiny_bridge/1.0.0/" + name},
						Content:     b,
					})
				}
			}
			put(files)
			return "gs://robotics/tiny_bridge/1.0.0", []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(srv.URL(), "http://")}, put
		}},
		{"hub branch", func(t *testing.T, files map[string][]byte) (string, []string, func(map[string][]byte)) {
			hub := fakehub.New(t, fakehub.Options{})
			put := func(fs map[string][]byte) {
				hub.Commit("oxe/tiny_bridge", "main", fs)
			}
			put(files)
			return "hf://datasets/oxe/tiny_bridge", []string{"HF_ENDPOINT=" + hub.URL(), "HF_TOKEN=", "HF_HOME=" + t.TempDir()}, put
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			source, env, put := tc.start(t, old)
			cfg := filepath.Join(t.TempDir(), "mix.yaml")
			mix := fmt.Sprintf("batch_size: 8\nimage_size: [32, 32]\nsamples_per_episode: 2\ndatasets:\n"+
				"  - source: %s\n    anonymous: true\n    image_key: steps/observation/image\n    val_split: val\n", source)
			if err := os.WriteFile(cfg, []byte(mix), 0o644); err != nil {
				t.Fatal(err)
			}
			cache := t.TempDir()
			mnt := t.TempDir()
			first := startMount(t, mnt, env, "--config", cfg, "--cache-dir", cache, "--fetch-timeout", "5s", "--fetch-stall", "2s")
			var info mountInfo
			readJSON(t, filepath.Join(mnt, "info.json"), &info)
			firstTrain := hashBatches(t, mnt, "batches", info.NumBatches, 2, 0)

			put(rewritten)
			fresh, freshVal := mountHashes(t, env, cfg, t.TempDir())
			second, secondVal := mountHashes(t, env, cfg, cache)
			sameHashes(t, "a second daemon on the first one's cache, against a fresh mount of the new data", second, fresh)
			sameHashes(t, "its val batches", secondVal, freshVal)
			if firstTrain[0] == fresh[0] && firstTrain[1] == fresh[1] {
				t.Fatal("the rewrite changed no batch: the test proves nothing")
			}
			again := hashBatches(t, mnt, "batches", info.NumBatches, 2, 0)
			sameHashes(t, "the first daemon after the rewrite, against its own reads before", again, firstTrain)
			first.stop(t)

			// warm of the old data, the rewrite, warm again over that
			// cache, then offline: the new data.
			put(old)
			warmed := t.TempDir()
			for _, files := range []map[string][]byte{old, rewritten} {
				put(files)
				if _, stderr, code := runOxefs(t, env, "warm", "--config", cfg, "--cache-dir", warmed); code != 0 {
					t.Fatalf("warm: exit %d\n%s", code, stderr)
				}
			}
			put(old) // the source no longer matters: offline never asks it
			offline, offlineVal := mountHashes(t, env, cfg, warmed, "--offline")
			sameHashes(t, "mount --offline after warm of the new data over the old", offline, fresh)
			sameHashes(t, "its val batches", offlineVal, freshVal)
		})
	}
}
