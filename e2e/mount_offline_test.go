package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/oxefs/oxefs/internal/testkit"
)

// offlineMix is a remote dataset with a val view, plus a local one, which
// --offline reads in place. samples_per_episode 0 needs the length index.
func offlineMix(t *testing.T) string { return offlineMixSPE(t, "0") }

// offlineMixSPE is offlineMix with another samples_per_episode.
func offlineMixSPE(t *testing.T, spe string) string {
	table, _ := filepath.Abs("testdata/datasets/tiny_table/1.0.0")
	return writeMixText(t, `batch_size: 4
image_size: [32, 32]
samples_per_episode: `+spe+`
datasets:
  - source: gs://robotics/tiny_bridge/1.0.0
    anonymous: true
    image_key: steps/observation/image
    val_split: val
  - name: table
    source: `+table+`
`)
}

// warmOffline serves tiny_bridge from fake GCS, runs `oxefs warm` of cfg
// into a new cache dir and returns the server, its env and the cache dir.
func warmOffline(t *testing.T, cfg string) (*fakestorage.Server, []string, string) {
	t.Helper()
	srv := fakeGCS(t, "robotics", map[string]string{"tiny_bridge/1.0.0": "testdata/datasets/tiny_bridge/1.0.0"})
	env := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(srv.URL(), "http://")}
	cacheDir := t.TempDir()
	out, stderr, code := runOxefs(t, env, "warm", "--config", cfg, "--cache-dir", cacheDir)
	if code != 0 {
		t.Fatalf("warm: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"5 of 5 shards in the disk cache", "train 3 of 3, val 2 of 2", "mount --offline can serve this mix"} {
		if !strings.Contains(out, want) {
			t.Fatalf("warm's output lacks %q:\n%s", want, out)
		}
	}
	return srv, env, cacheDir
}

// TestMountOffline: after `oxefs warm`, with the fake GCS server stopped,
// `mount --offline` serves the same train and val batches (.npy and .json)
// as an online mount of the same config, without a disk cache miss.
func TestMountOffline(t *testing.T) {
	testkit.RequireFUSE(t)
	cfg := offlineMix(t)
	srv, env, cacheDir := warmOffline(t, cfg)

	offline := sameOnlineOffline(t, srv.Stop, env, cfg, cacheDir, 3)
	var stats struct {
		Disk struct{ Hits, Misses int64 } `json:"disk_cache"`
	}
	readJSON(t, filepath.Join(offline, "stats.json"), &stats)
	if stats.Disk.Misses != 0 || stats.Disk.Hits == 0 {
		t.Fatalf("offline mount: %d disk cache misses, %d hits; want only hits", stats.Disk.Misses, stats.Disk.Hits)
	}
}

// TestMountOfflineIncomplete: `mount --offline` over a cache that lacks
// something the mix needs refuses to mount, naming each missing item and
// the remedy; a missing local source is still an error.
func TestMountOfflineIncomplete(t *testing.T) {
	testkit.RequireFUSE(t)
	cfg := offlineMix(t)
	slugDir := func(t *testing.T, cacheDir string) string {
		dirs, _ := filepath.Glob(filepath.Join(cacheDir, "index", "tiny_bridge-1.0.0-*"))
		if len(dirs) != 1 {
			t.Fatalf("index dirs of tiny_bridge: %v", dirs)
		}
		return dirs[0]
	}
	remove := func(t *testing.T, pattern string) {
		t.Helper()
		files, _ := filepath.Glob(pattern)
		if len(files) != 1 {
			t.Fatalf("%s matches %v", pattern, files)
		}
		if err := os.Remove(files[0]); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, cacheDir string)
		want   []string
	}{
		{"val shard", func(t *testing.T, cacheDir string) {
			remove(t, filepath.Join(cacheDir, "files", "*", "tiny_bridge-val.tfrecord-00001-of-00002.versions", strings.Repeat("?", 16)))
		}, []string{"1 of the 5 shards of its selections: tiny_bridge-val.tfrecord-00001-of-00002"}},
		{"train shard and length index", func(t *testing.T, cacheDir string) {
			remove(t, filepath.Join(cacheDir, "files", "*", "tiny_bridge-train.tfrecord-00002-of-00003.versions", strings.Repeat("?", 16)))
			remove(t, filepath.Join(slugDir(t, cacheDir), "lengths.json"))
		}, []string{"tiny_bridge-train.tfrecord-00002-of-00003", "the episode-length index (samples_per_episode 0)"}},
		{"metadata", func(t *testing.T, cacheDir string) {
			remove(t, filepath.Join(slugDir(t, cacheDir), "features.json"))
		}, []string{"metadata features.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, env, cacheDir := warmOffline(t, cfg)
			srv.Stop()
			tc.break_(t, cacheDir)
			stderr, code := mountRefusedEnv(t, t.TempDir(), env, "--config", cfg, "--cache-dir", cacheDir, "--offline")
			if code == 0 {
				t.Fatal("mount --offline accepted an incomplete cache")
			}
			t.Logf("refused:\n%s", stderr)
			want := append([]string{"--offline: the cache lacks what this mix needs",
				"dataset tiny_bridge (gs://robotics/tiny_bridge/1.0.0)", "run `oxefs warm` with the same --config and --cache-dir"}, tc.want...)
			for _, w := range want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "dataset table") {
				t.Errorf("the local dataset is reported missing:\n%s", stderr)
			}
		})
	}
	t.Run("missing local source", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nope")
		cfg := writeMixText(t, "datasets:\n  - name: gone\n    source: "+missing+"\n")
		stderr, code := mountRefusedEnv(t, t.TempDir(), nil, "--config", cfg, "--cache-dir", t.TempDir(), "--offline")
		if code == 0 || !strings.Contains(stderr, missing) || !strings.Contains(stderr, "no such directory") {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
	})
}

// TestMountSourceDownNotOffline: without --offline a warm cache is no
// fallback: with the source down the mount fails, naming what it could not
// reach.
func TestMountSourceDownNotOffline(t *testing.T) {
	testkit.RequireFUSE(t)
	cfg := offlineMix(t)
	srv, env, cacheDir := warmOffline(t, cfg)
	srv.Stop()
	start := time.Now()
	stderr, code := mountRefusedEnv(t, t.TempDir(), env, "--config", cfg, "--cache-dir", cacheDir,
		"--fetch-timeout", "1s", "--fetch-stall", "1s")
	if code == 0 {
		t.Fatal("mounted with the source down and without --offline")
	}
	// The first request that failed is named: the format probe's first
	// read of the dataset (LeRobot's meta/info.json is looked for first),
	// whose give-up ends the open rather than RLDS waiting out a second
	// budget on the same outage.
	for _, w := range []string{"gs://robotics/tiny_bridge/1.0.0/meta/info.json", "giving up after", "connection refused"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	t.Logf("refused after %v", time.Since(start).Round(time.Millisecond))
}

// TestBenchOffline: `bench --offline` builds the batches in-process from a
// warmed cache with the source stopped, here for a mix that needs no
// length index.
func TestBenchOffline(t *testing.T) {
	cfg := offlineMixSPE(t, "2")
	srv, env, cacheDir := warmOffline(t, cfg)
	srv.Stop()
	out := t.TempDir()
	if _, stderr, code := runOxefs(t, env, "bench", "--config", cfg, "--cache-dir", cacheDir, "--offline",
		"--readers", "1", "--warmup", "0", "--batches", "3", "--out", out, "--json"); code != 0 {
		t.Fatalf("bench --offline: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := runOxefs(t, env, "bench", "--config", cfg, "--cache-dir", cacheDir, "--val", "--offline",
		"--readers", "1", "--warmup", "0", "--batches", "1", "--out", out, "--json"); code != 0 {
		t.Fatalf("bench --offline --val: exit %d\n%s", code, stderr)
	}
}

// sameOnlineOffline mounts cfg online over cacheDir and reads up to 6 train
// and maxVal val batches, stops the source, mounts again with --offline and checks
// that the same batches read the same; it returns the offline mountpoint.
func sameOnlineOffline(t *testing.T, stopSource func(), env []string, cfg, cacheDir string, maxVal int64) string {
	t.Helper()
	online := t.TempDir()
	d := startMount(t, online, env, "--config", cfg, "--cache-dir", cacheDir)
	var info mountInfo
	readJSON(t, filepath.Join(online, "info.json"), &info)
	if info.Val == nil {
		t.Fatal("no val view")
	}
	n, nv := min(info.NumBatches, 6), min(info.Val.NumBatches, maxVal)
	wantTrain := hashBatches(t, online, "batches", n, 2, 0)
	wantVal := hashBatches(t, online, "val/batches", nv, 1, 0)
	d.stop(t)

	stopSource()
	offline := t.TempDir()
	startMount(t, offline, env, "--config", cfg, "--cache-dir", cacheDir, "--offline",
		"--fetch-timeout", "1s", "--fetch-stall", "1s")
	gotTrain := hashBatches(t, offline, "batches", n, 2, 3)
	gotVal := hashBatches(t, offline, "val/batches", nv, 1, 0)
	for i := range gotTrain {
		if gotTrain[i] != wantTrain[i] {
			t.Errorf("train batch %d offline differs from online", i)
		}
	}
	for i := range gotVal {
		if gotVal[i] != wantVal[i] {
			t.Errorf("val batch %d offline differs from online", i)
		}
	}
	t.Logf("%d train and %d val batches equal online and offline", len(gotTrain), len(gotVal))
	return offline
}
