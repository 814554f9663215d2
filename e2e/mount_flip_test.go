package e2e

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/internal/missing"
	"github.com/oxefs/oxefs/internal/testkit"
)

// flipEnv puts a proxy in front of srv that flips one byte of the object
// reads (not the metadata answers) that flip picks, and returns the
// environment that points the storage client at it. The byte flipped
// differs with each read of the same range, as damage in transit does.
func flipEnv(t *testing.T, srv *fakestorage.Server, flip func(r testkit.SeenRequest, nth int) bool) ([]string, *testkit.FaultProxy) {
	t.Helper()
	proxy := testkit.NewRequestFaultProxy(t, srv.URL(), func(r testkit.SeenRequest, nth int) testkit.Fault {
		if r.Method == "GET" && !strings.HasPrefix(r.Path, "/storage/v1/") && flip(r, nth) {
			return testkit.FlipAt(3 + int64(nth%8))
		}
		return testkit.Pass()
	})
	return []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(proxy.URL(), "http://")}, proxy
}

// firstReads flips the first read of every object and range.
func firstReads(_ testkit.SeenRequest, nth int) bool { return nth == 0 }

// mountHashes mounts cfg over cacheDir with env and returns the hashes of
// its first train batches (up to 6) and val batches (up to 2).
func mountHashes(t *testing.T, env []string, cfg, cacheDir string, extra ...string) (train, val []string) {
	t.Helper()
	mnt := t.TempDir()
	d := startMount(t, mnt, env, append([]string{"--config", cfg, "--cache-dir", cacheDir,
		"--fetch-timeout", "5s", "--fetch-stall", "2s"}, extra...)...)
	defer d.stop(t)
	var info mountInfo
	readJSON(t, filepath.Join(mnt, "info.json"), &info)
	if info.Val == nil {
		t.Fatal("no val view")
	}
	train = hashBatches(t, mnt, "batches", min(info.NumBatches, 6), 2, 0)
	val = hashBatches(t, mnt, "val/batches", min(info.Val.NumBatches, 2), 1, 0)
	return train, val
}

// sameHashes fails the test for each batch whose hash differs.
func sameHashes(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d batches, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: batch %d differs from the run without faults", what, i)
		}
	}
}

// TestMountFlippedBytesNeverCached: with a proxy that flips a byte in the
// first response to every object read (header hops, records, whole
// shards, metadata), a cold mount serves every batch as a run without
// faults does; a restart over the same cache with no faults serves them
// the same again (nothing wrong was kept).
func TestMountFlippedBytesNeverCached(t *testing.T) {
	testkit.RequireFUSE(t)
	cfg := offlineMix(t) // samples_per_episode 0: the length index reads every episode too
	srv := fakeGCS(t, "robotics", map[string]string{"tiny_bridge/1.0.0": "testdata/datasets/tiny_bridge/1.0.0"})
	clean := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(srv.URL(), "http://")}
	wantTrain, wantVal := mountHashes(t, clean, cfg, t.TempDir())

	cacheDir := t.TempDir()
	env, proxy := flipEnv(t, srv, firstReads)
	train, val := mountHashes(t, env, cfg, cacheDir)
	if proxy.Flipped() == 0 {
		t.Fatal("the proxy flipped nothing: the test tests nothing")
	}
	t.Logf("cold: %d responses flipped", proxy.Flipped())
	sameHashes(t, "cold, flipped train", train, wantTrain)
	sameHashes(t, "cold, flipped val", val, wantVal)

	train, val = mountHashes(t, clean, cfg, cacheDir)
	sameHashes(t, "restart, no faults, train", train, wantTrain)
	sameHashes(t, "restart, no faults, val", val, wantVal)
}

// TestWarmFlippedThenOffline: `oxefs warm` through a proxy that flips the
// first response to every object read fetches the damaged ones again and
// says so; `mount --offline` then serves every batch as a run without
// faults does. A shard damaged on every read is not kept, and warm does
// not claim that --offline can serve the mix: it names the shard.
func TestWarmFlippedThenOffline(t *testing.T) {
	testkit.RequireFUSE(t)
	cfg := offlineMix(t)
	srv := fakeGCS(t, "robotics", map[string]string{"tiny_bridge/1.0.0": "testdata/datasets/tiny_bridge/1.0.0"})
	clean := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(srv.URL(), "http://")}
	wantTrain, wantVal := mountHashes(t, clean, cfg, t.TempDir())

	const bad = "tiny_bridge-train.tfrecord-00001-of-00003"
	env, _ := flipEnv(t, srv, func(r testkit.SeenRequest, _ int) bool { return strings.HasSuffix(r.Path, "/"+bad) })
	for _, spe := range []string{"0", "2"} {
		// samples_per_episode 0: the length index reads every episode,
		// and fails; 2: warm goes on to fetch the shards.
		out, stderr, code := runOxefs(t, env, "warm", "--config", offlineMixSPE(t, spe), "--cache-dir", t.TempDir(),
			"--fetch-timeout", "5s", "--fetch-stall", "2s")
		t.Logf("warm, samples_per_episode %s, one shard damaged on every read: exit %d\n%s", spe, code, out)
		if strings.Contains(out, "mount --offline can serve this mix") {
			t.Fatalf("warm claims --offline can serve a mix whose shard %s it could not fetch undamaged:\n%s\n%s", bad, out, stderr)
		}
		if !strings.Contains(out+stderr, bad) {
			t.Errorf("warm does not name the shard it could not keep, %s:\n%s\n%s", bad, out, stderr)
		}
		if spe == "2" && (code != 0 || !strings.Contains(out, "mount --offline cannot serve this mix") || !strings.Contains(out, "came damaged")) {
			t.Errorf("warm, samples_per_episode 2: exit %d; want 0, the damage reported and --offline refused:\n%s\n%s", code, out, stderr)
		}
	}

	cacheDir := t.TempDir()
	env, proxy := flipEnv(t, srv, firstReads)
	out, stderr, code := runOxefs(t, env, "warm", "--config", cfg, "--cache-dir", cacheDir,
		"--fetch-timeout", "5s", "--fetch-stall", "2s")
	if code != 0 {
		t.Fatalf("warm, first reads damaged: exit %d\n%s\n%s", code, out, stderr)
	}
	if proxy.Flipped() == 0 {
		t.Fatal("the proxy flipped nothing: the test tests nothing")
	}
	for _, want := range []string{"5 of 5 shards in the disk cache", "came damaged", "mount --offline can serve this mix"} {
		if !strings.Contains(out, want) {
			t.Errorf("warm's output lacks %q:\n%s", want, out)
		}
	}
	srv.Stop()
	train, val := mountHashes(t, clean, cfg, cacheDir, "--offline")
	sameHashes(t, "warm + --offline, train", train, wantTrain)
	sameHashes(t, "warm + --offline, val", val, wantVal)
}

// TestWarmFlippedLeRobotThenOffline: `oxefs warm` of a remote LeRobot
// dataset through a proxy that flips a byte in the first response to
// every file read fetches the damaged files again (each is checked against
// its CRC32C), and `mount --offline` then serves every batch as an online
// mount without faults does.
func TestWarmFlippedLeRobotThenOffline(t *testing.T) {
	testkit.RequireFUSE(t)
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	cfg := lerobotFlipMix(t, "gs://robotics/lerobot_av1")
	srv := fakeGCS(t, "robotics", map[string]string{"lerobot_av1": "testdata/lerobot/lerobot_av1"})
	clean := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(srv.URL(), "http://")}
	wantTrain, wantVal := mountHashes(t, clean, cfg, t.TempDir())

	cacheDir := t.TempDir()
	env, proxy := flipEnv(t, srv, firstReads)
	out, stderr, code := runOxefs(t, env, "warm", "--config", cfg, "--cache-dir", cacheDir,
		"--fetch-timeout", "5s", "--fetch-stall", "2s")
	if code != 0 {
		t.Fatalf("warm, first reads damaged: exit %d\n%s\n%s", code, out, stderr)
	}
	if proxy.Flipped() == 0 {
		t.Fatal("the proxy flipped nothing: the test tests nothing")
	}
	t.Logf("warm, %d responses flipped:\n%s", proxy.Flipped(), out)
	if !strings.Contains(out, "mount --offline can serve this mix") {
		t.Fatalf("warm's output lacks the offline verdict:\n%s", out)
	}
	srv.Stop()
	train, val := mountHashes(t, clean, cfg, cacheDir, "--offline")
	sameHashes(t, "LeRobot, warm + --offline, train", train, wantTrain)
	sameHashes(t, "LeRobot, warm + --offline, val", val, wantVal)
}

// TestMountFlippedLeRobotSamplesNeverCached: a remote LeRobot dataset
// mounted through a proxy that flips a byte where no parser looks (in the
// first response of each ranged read of video sample data, and a value of
// each data parquet file's first block) serves every batch as a mount of
// the local copy does, cold (--verify-ranges twice compares two copies of
// each such range), and again after a restart over the same cache with no
// faults (nothing wrong was kept).
func TestMountFlippedLeRobotSamplesNeverCached(t *testing.T) {
	testkit.RequireFUSE(t)
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	const fixture = "testdata/lerobot/lerobot_av1"
	abs, err := filepath.Abs(fixture)
	if err != nil {
		t.Fatal(err)
	}
	wantTrain, wantVal := mountHashes(t, nil, lerobotFlipMix(t, abs), t.TempDir())

	srv := fakeGCS(t, "robotics", map[string]string{"lerobot_av1": fixture})
	var on atomic.Bool
	on.Store(true)
	flips := testkit.LeRobotSampleFlips(t, testkit.ReadDirFiles(t, fixture), &on)
	proxy := testkit.NewRequestFaultProxy(t, srv.URL(), flips)
	env := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(proxy.URL(), "http://")}
	cfg, cacheDir := lerobotFlipMix(t, "gs://robotics/lerobot_av1"), t.TempDir()
	train, val := mountHashes(t, env, cfg, cacheDir)
	if proxy.Flipped() == 0 {
		t.Fatal("the proxy flipped nothing: the test tests nothing")
	}
	t.Logf("cold: %d responses flipped", proxy.Flipped())
	sameHashes(t, "LeRobot samples flipped, cold, train", train, wantTrain)
	sameHashes(t, "LeRobot samples flipped, cold, val", val, wantVal)

	on.Store(false)
	train, val = mountHashes(t, env, cfg, cacheDir)
	sameHashes(t, "LeRobot, restart, no faults, train", train, wantTrain)
	sameHashes(t, "LeRobot, restart, no faults, val", val, wantVal)
}

// lerobotFlipMix writes the flip tests' mix of the lerobot_av1 fixture
// read from source: train and val, the top camera, actions, state and
// the task.
func lerobotFlipMix(t *testing.T, source string) string {
	t.Helper()
	return writeMixText(t, `batch_size: 2
image_size: [32, 40]
datasets:
  - name: lr
    source: `+source+`
    anonymous: true
    split: train
    image_key: observation.images.top
    val_split: val
    offset: [1, 3]
    language_key: task
    action_keys: [action]
    state_key: observation.state
`)
}
