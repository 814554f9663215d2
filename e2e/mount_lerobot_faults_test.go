package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/internal/missing"
	"github.com/oxefs/oxefs/internal/testkit"
)

// deadLeRobotYAML mixes four LeRobot entries over three sources on fake
// GCS, so that a batch needs the data and video files of several
// datasets. $BUCKET is the gs:// prefix.
const deadLeRobotYAML = `
seed: 2
batch_size: 8
image_size: [24, 32]
datasets:
  - name: av1_top
    source: $BUCKET/lerobot_av1
    anonymous: true
    image_key: observation.images.top
    offset: 1
  - name: av1_wrist
    source: $BUCKET/lerobot_av1
    anonymous: true
    image_key: observation.images.wrist
    offset: 1
  - name: h264
    source: $BUCKET/lerobot_h264
    anonymous: true
    image_key: observation.images.front
    offset: 1
  - name: hevc
    source: $BUCKET/lerobot_hevc
    anonymous: true
    offset: 1
`

// TestMountDeadLeRobotSource: with every data and video file of a remote
// LeRobot mix hanging (its metadata answers), a batch read gets EIO
// within --fetch-timeout + --fetch-stall, however many files the batch
// needs (the test allows 3x for a loaded machine): the files of a batch
// are given up together, not one after another. Once the source is
// back, batches are served.
func TestMountDeadLeRobotSource(t *testing.T) {
	testkit.RequireFUSE(t)
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	const (
		stall   = time.Second
		timeout = 2 * time.Second
		promise = timeout + stall
		window  = timeout // the failure memo: min(--fetch-timeout, 10s)
	)
	data, _ := filepath.Abs("testdata/lerobot")
	srv := fakeGCS(t, "robotics", map[string]string{
		"lr/lerobot_av1":  filepath.Join(data, "lerobot_av1"),
		"lr/lerobot_h264": filepath.Join(data, "lerobot_h264"),
		"lr/lerobot_hevc": filepath.Join(data, "lerobot_hevc"),
	})
	proxy := testkit.NewHangProxy(t, srv.URL(), func(p string) bool {
		return strings.Contains(p, "/data/") || strings.Contains(p, "/videos/") ||
			strings.Contains(p, "%2Fdata%2F") || strings.Contains(p, "%2Fvideos%2F")
	})
	cfg := writeMixText(t, strings.ReplaceAll(deadLeRobotYAML, "$BUCKET", "gs://robotics/lr"))
	mnt := t.TempDir()
	env := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(proxy.URL(), "http://")}
	d := startMount(t, mnt, env, "--config", cfg, "--cache-dir", t.TempDir(),
		"--fetch-stall", stall.String(), "--fetch-timeout", timeout.String(), "--readahead", "0", "--workers", "1")
	read := func(n int) (time.Duration, error) {
		start := time.Now()
		_, err := os.ReadFile(filepath.Join(mnt, "batches", fmt.Sprintf("%06d.npy", n)))
		return time.Since(start), err
	}
	proxy.Hang.Store(true)
	for _, n := range []int{0, 1} {
		took, err := read(n)
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("batch %d with dead data and video files: %v, want EIO\n%s", n, err, d.stderr())
		}
		t.Logf("batch %d: EIO after %v (promise %v)", n, took.Round(time.Millisecond), promise)
		if took > 3*promise {
			t.Fatalf("batch %d: EIO after %v; the promise is %v\n%s", n, took, promise, d.stderr())
		}
	}
	proxy.Hang.Store(false)
	back := time.Now()
	for {
		_, err := read(0)
		if err == nil {
			break
		}
		if time.Since(back) > 3*(window+promise) {
			t.Fatalf("batch 0 still fails %v after the source came back: %v\n%s", time.Since(back), err, d.stderr())
		}
		time.Sleep(100 * time.Millisecond) // polling pace only
	}
	t.Logf("batch 0 read %v after the source came back", time.Since(back).Round(time.Millisecond))
}

// missingYAML reads one camera of a LeRobot dataset at $DIR.
const missingYAML = `
seed: 3
batch_size: 4
image_size: [24, 32]
samples_per_episode: 2
datasets:
  - name: lr
    source: $DIR
    split: $SPLIT
    image_key: $CAMERA
    offset: 1
`

// TestMountLeRobotMissingVideo: through a real mount, a deleted video
// file costs only the batches that read it, and never answers ENOENT.
//   - A camera the mix does not read loses both its files: every batch is
//     byte for byte what the whole dataset gives.
//   - One of the two files of the camera read is deleted: every batch is
//     served, the episodes in it substituted and counted as missing_shard
//     in stats.json; with --strict exactly the batches that hold one of
//     them answer EIO, the others are served.
//   - The only file of the camera read is deleted: no episode is usable,
//     and every batch answers EIO.
func TestMountLeRobotMissingVideo(t *testing.T) {
	testkit.RequireFUSE(t)
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	data, _ := filepath.Abs("testdata/lerobot")
	const top, wrist = "observation.images.top", "observation.images.wrist"
	mount := func(t *testing.T, dir, camera, split string, args ...string) string {
		cfg := writeMixText(t, strings.NewReplacer("$DIR", dir, "$CAMERA", camera, "$SPLIT", split).Replace(missingYAML))
		mnt := t.TempDir()
		startMount(t, mnt, nil, append([]string{"--config", cfg, "--cache-dir", t.TempDir()}, args...)...)
		return mnt
	}
	without := func(t *testing.T, fixture string, files ...string) string {
		dir := testkit.CopyDir(t, filepath.Join(data, fixture))
		for _, f := range files {
			if err := os.Remove(filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	readBatch := func(mnt string, n int) ([]byte, error) {
		return os.ReadFile(filepath.Join(mnt, "batches", fmt.Sprintf("%06d.npy", n)))
	}

	whole := mount(t, filepath.Join(data, "lerobot_av1"), top, "train+val")
	var info mountInfo
	readJSON(t, filepath.Join(whole, "info.json"), &info)
	n := int(info.NumBatches)
	want := hashBatches(t, whole, "batches", int64(n), 1, 0)
	ids := make([][]string, n)
	for i := range n {
		var meta struct {
			EpisodeID []string `json:"episode_id"`
		}
		readJSON(t, filepath.Join(whole, "batches", fmt.Sprintf("%06d.json", i)), &meta)
		ids[i] = meta.EpisodeID
	}

	t.Run("unused camera", func(t *testing.T) {
		dir := without(t, "lerobot_av1", "videos/"+wrist+"/chunk-000/file-000.mp4", "videos/"+wrist+"/chunk-000/file-001.mp4")
		mnt := mount(t, dir, top, "train+val", "--strict")
		got := hashBatches(t, mnt, "batches", int64(n), 1, 0)
		for i := range n {
			if got[i] != want[i] {
				t.Errorf("batch %d differs from the whole dataset's", i)
			}
		}
	})

	// The episodes whose top camera lies in file-000: those of the first
	// data file in lerobot_av1 (episodes 0..4).
	gone := "videos/" + top + "/chunk-000/file-000.mp4"
	lost := func(i int) bool {
		for _, id := range ids[i] {
			var e int
			if _, err := fmt.Sscanf(id[strings.LastIndex(id, "_")+1:], "%d", &e); err == nil && e < 5 {
				return true
			}
		}
		return false
	}

	t.Run("used camera", func(t *testing.T) {
		mnt := mount(t, without(t, "lerobot_av1", gone), top, "train+val")
		for i := range n {
			if _, err := readBatch(mnt, i); err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
		}
		var stats struct {
			Substitutions map[string]int64 `json:"substitutions"`
		}
		readJSON(t, filepath.Join(mnt, "stats.json"), &stats)
		if stats.Substitutions["missing_shard"] == 0 {
			t.Errorf("stats.json substitutions %v; want missing_shard counted", stats.Substitutions)
		}
	})

	t.Run("used camera, strict", func(t *testing.T) {
		mnt := mount(t, without(t, "lerobot_av1", gone), top, "train+val", "--strict")
		failed := 0
		for i := range n {
			_, err := readBatch(mnt, i)
			switch {
			case lost(i) && !errors.Is(err, syscall.EIO):
				t.Errorf("batch %d holds an episode of the deleted file: %v, want EIO", i, err)
			case !lost(i) && err != nil:
				t.Errorf("batch %d needs nothing of the deleted file: %v", i, err)
			case err != nil:
				failed++
			}
		}
		if failed == 0 {
			t.Error("no batch needed the deleted file")
		}
	})

	t.Run("only file of the camera", func(t *testing.T) {
		mnt := mount(t, without(t, "lerobot_h264", "videos/observation.images.front/chunk-000/file-000.mp4"), "observation.images.front", "train")
		for i := range 2 {
			if _, err := readBatch(mnt, i); !errors.Is(err, syscall.EIO) {
				t.Errorf("batch %d of a dataset whose camera is gone: %v, want EIO", i, err)
			}
		}
	})
}

// synthDamageYAML reads two LeRobot synth datasets, one camera each
// (synth_bridge has two: image_0 and image_1). $DIR is synth's output.
const synthDamageYAML = `
seed: 5
batch_size: 4
image_size: [32, 32]
samples_per_episode: 2
datasets:
  - name: fractal
    source: $DIR/synth_fractal
    image_key: observation.images.image
    offset: 1
  - name: bridge
    source: $DIR/synth_bridge
    image_key: observation.images.image_0
    offset: 1
`

// TestMountLeRobotDamagedVideo: on `oxefs synth --format lerobot` data
// (each camera's episodes in one video file, its sample table first, as
// LeRobot writes), a damaged video file costs only what it holds of what
// the mix reads.
//   - The camera the mix does not read (bridge's image_1) deleted: every
//     batch is byte for byte the whole data's.
//   - The camera read cut to 60%: every batch is served; the episodes
//     past the cut are substituted and counted as corrupt in stats.json
//     (bad_episodes names them, all of bridge, and not all of bridge's);
//     no dataset is unusable.
func TestMountLeRobotDamagedVideo(t *testing.T) {
	testkit.RequireFUSE(t)
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	data := t.TempDir()
	if _, stderr, code := runOxefs(t, nil, "synth", "--format", "lerobot", "--codec", "h264", "--datasets", "2", "--episodes", "6", "--steps", "10", data); code != 0 {
		t.Fatalf("synth: exit %d\n%s", code, stderr)
	}
	mount := func(t *testing.T, dir string) string {
		cfg := writeMixText(t, strings.ReplaceAll(synthDamageYAML, "$DIR", dir))
		mnt := t.TempDir()
		startMount(t, mnt, nil, "--config", cfg, "--cache-dir", t.TempDir())
		return mnt
	}
	whole := mount(t, data)
	var info mountInfo
	readJSON(t, filepath.Join(whole, "info.json"), &info)
	n := info.NumBatches
	want := hashBatches(t, whole, "batches", n, 1, 0)
	const bridge = "synth_bridge/videos/observation.images.image_%d/chunk-000/file-000.mp4"

	t.Run("unused camera deleted", func(t *testing.T) {
		dir := testkit.CopyDir(t, data)
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf(bridge, 1))); err != nil {
			t.Fatal(err)
		}
		got := hashBatches(t, mount(t, dir), "batches", n, 1, 0)
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("batch %d differs from the whole data's", i)
			}
		}
	})

	t.Run("camera read cut short", func(t *testing.T) {
		dir := testkit.CopyDir(t, data)
		video := filepath.Join(dir, fmt.Sprintf(bridge, 0))
		b, err := os.ReadFile(video)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(video, b[:len(b)*6/10], 0o644); err != nil {
			t.Fatal(err)
		}
		mnt := mount(t, dir)
		for i := range n {
			if _, err := os.ReadFile(filepath.Join(mnt, "batches", fmt.Sprintf("%06d.npy", i))); err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
		}
		var stats struct {
			Substitutions map[string]int64                   `json:"substitutions"`
			Bad           []struct{ Episode, Reason string } `json:"bad_episodes"`
			Unusable      map[string]string                  `json:"unusable_datasets"`
		}
		readJSON(t, filepath.Join(mnt, "stats.json"), &stats)
		if stats.Substitutions["corrupt"] == 0 || len(stats.Bad) == 0 || len(stats.Unusable) > 0 {
			t.Fatalf("stats.json: substitutions %v, bad episodes %v, unusable %v; want the episodes past the cut substituted, nothing unusable",
				stats.Substitutions, stats.Bad, stats.Unusable)
		}
		for _, e := range stats.Bad {
			if !strings.HasPrefix(e.Episode, "bridge/") || !strings.Contains(e.Reason, "truncated") {
				t.Errorf("bad episode %s: %s; want bridge's, cut short", e.Episode, e.Reason)
			}
		}
		if len(stats.Bad) >= 6 {
			t.Errorf("%d of bridge's 6 train episodes substituted: the cut should cost only those past it", len(stats.Bad))
		}
		t.Logf("substituted: %v", stats.Bad)
	})
}
