package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/internal/testkit"
)

// missingVideoYAML reads lerobot_av1's top camera; the fixture also has a
// wrist camera, each camera's episodes in two video files.
const missingVideoYAML = "seed: 3\nbatch_size: 4\nimage_size: [24, 32]\nsamples_per_episode: 3\ndatasets:\n  - source: %s\n    name: lr\n    split: train+val\n    image_key: observation.images.top\n    offset: 1\n    action_keys: [action]\n    state_key: observation.state\n    language_key: task\n"

// openMissingPipeline opens missingVideoYAML over dir.
func openMissingPipeline(t *testing.T, dir string, strict bool) *Pipeline {
	t.Helper()
	cfg, err := config.Parse(fmt.Appendf(nil, missingVideoYAML, dir))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(context.Background(), Options{
		Config: cfg, CacheDir: t.TempDir(), Mem: 256 << 20, Disk: 1 << 30, Strict: strict,
		Workers: 2, Version: "test", Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// topFile0Episodes are the episodes of lerobot_av1 whose top camera lies
// in videos/observation.images.top/chunk-000/file-000.mp4: those of its
// first data file (testdata/generate_lerobot.py rolls both over together).
var topFile0Episodes = []string{"episode_000000", "episode_000001", "episode_000002", "episode_000003", "episode_000004"}

// TestLeRobotMissingVideo: a video file deleted from a LeRobot dataset
// costs only what reads it. A camera the mix does not read may lose its
// files: every batch is what the whole dataset gives, byte for byte, with
// nothing substituted. A file of the camera it reads costs the episodes in
// it: they are substituted and counted as missing_shard (like a missing
// data file), naming the file; with --strict the batches that hold them
// fail with a read error that does not match fs.ErrNotExist (the mount
// answers EIO, never ENOENT) while the others build.
func TestLeRobotMissingVideo(t *testing.T) {
	requireVideo(t)
	fixture := filepath.Join(lerobotFixtures, "lerobot_av1")
	whole := openMissingPipeline(t, fixture, false)
	n := whole.Mix.Train.NumBatches()
	want := make([]builtBatch, n)
	for i := range n {
		want[i] = getBatch(t, whole, i)
	}

	t.Run("unused camera", func(t *testing.T) {
		dir := testkit.CopyDir(t, fixture)
		for _, f := range []string{"file-000.mp4", "file-001.mp4"} {
			if err := os.Remove(filepath.Join(dir, "videos/observation.images.wrist/chunk-000", f)); err != nil {
				t.Fatal(err)
			}
		}
		p := openMissingPipeline(t, dir, true) // --strict: nothing may be substituted
		for i := range n {
			got := getBatch(t, p, i)
			if !bytes.Equal(got.frames, want[i].frames) || fmt.Sprint(got.meta.EpisodeID) != fmt.Sprint(want[i].meta.EpisodeID) {
				t.Errorf("batch %d differs from the whole dataset's: %v, want %v", i, got.meta.EpisodeID, want[i].meta.EpisodeID)
			}
		}
		if subs, bad := p.Builds.Substitutions(); len(subs) > 0 || len(bad) > 0 {
			t.Errorf("substitutions %v %v; the camera read is whole", subs, bad)
		}
	})

	const top = "observation.images.top"
	lost := topFile0Episodes
	gone := "videos/observation.images.top/chunk-000/file-000.mp4"
	holds := func(b builtBatch) bool {
		for _, id := range b.meta.EpisodeID {
			for _, e := range lost {
				if strings.HasSuffix(id, e) {
					return true
				}
			}
		}
		return false
	}

	t.Run("used camera", func(t *testing.T) {
		dir := testkit.CopyDir(t, fixture)
		if err := os.Remove(filepath.Join(dir, gone)); err != nil {
			t.Fatal(err)
		}
		p := openMissingPipeline(t, dir, false)
		for i := range n {
			if b := getBatch(t, p, i); holds(b) {
				t.Errorf("batch %d holds an episode of the deleted %s: %v", i, gone, b.meta.EpisodeID)
			}
		}
		subs, bad := p.Builds.Substitutions()
		if subs["missing_shard"] == 0 || subs["corrupt"] != 0 {
			t.Errorf("substitutions %v; want missing_shard only", subs)
		}
		for _, b := range bad {
			if !strings.Contains(b.Reason, "file-000.mp4") || !strings.Contains(b.Reason, top) {
				t.Errorf("%s: reason %q names neither the camera nor the file", b.Episode, b.Reason)
			}
		}
	})

	t.Run("used camera, strict", func(t *testing.T) {
		dir := testkit.CopyDir(t, fixture)
		if err := os.Remove(filepath.Join(dir, gone)); err != nil {
			t.Fatal(err)
		}
		p := openMissingPipeline(t, dir, true)
		failed := 0
		for i := range n {
			b, err := p.Train.Get(context.Background(), i)
			if !holds(want[i]) {
				if err != nil {
					t.Errorf("batch %d, which needs no episode of %s: %v", i, gone, err)
					continue
				}
				b.Release()
				continue
			}
			if err == nil {
				b.Release()
				t.Errorf("batch %d holds an episode of the deleted %s and built under --strict", i, gone)
				continue
			}
			failed++
			if errors.Is(err, fs.ErrNotExist) {
				t.Errorf("batch %d: %v matches fs.ErrNotExist: the mount would answer ENOENT for a listed batch", i, err)
			}
			if !strings.Contains(err.Error(), "file-000.mp4") {
				t.Errorf("batch %d: %v does not name the missing file", i, err)
			}
		}
		if failed == 0 {
			t.Fatal("no batch needed the deleted file")
		}
	})
}

// TestLeRobotTruncatedDataFile: a data file cut short costs the episodes
// stored in it, and only those: every batch builds, the bad episodes are
// counted as corrupt naming that file, none of them is in a batch, and
// the episodes of the other data files are.
func TestLeRobotTruncatedDataFile(t *testing.T) {
	requireVideo(t)
	dir := testkit.CopyDir(t, filepath.Join(lerobotFixtures, "lerobot_av1"))
	data := filepath.Join(dir, "data/chunk-000/file-001.parquet")
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	p := openMissingPipeline(t, dir, false)
	served := map[string]bool{}
	for i := range p.Mix.Train.NumBatches() {
		for _, id := range getBatch(t, p, i).meta.EpisodeID {
			served[id] = true
		}
	}
	subs, bad := p.Builds.Substitutions()
	if subs["corrupt"] == 0 || len(bad) == 0 {
		t.Fatalf("substitutions %v: the truncated file's episodes should be", subs)
	}
	for _, e := range bad {
		if !strings.Contains(e.Reason, "file-001.parquet") {
			t.Errorf("%s: %q does not name the truncated file", e.Episode, e.Reason)
		}
		if served[e.Episode] {
			t.Errorf("%s is bad but in a batch", e.Episode)
		}
	}
	if len(served) == 0 || len(bad) >= 7 {
		t.Errorf("%d episodes served, %d bad: the other data files' episodes should be served", len(served), len(bad))
	}
	t.Logf("served %d episodes; bad: %v", len(served), bad)
}

// TestLeRobotDamageFromGCS: from a gs:// source, a damaged video file
// costs what it costs locally. The top camera's second file cut to 60%
// (its sample table first) makes episode 6 corrupt and leaves every
// other episode readable; its first file deleted makes episodes 0..4
// missing_shard, without fs.ErrNotExist.
func TestLeRobotDamageFromGCS(t *testing.T) {
	dir := testkit.LeRobotDamaged(t, "truncated_mp4")
	if err := os.Remove(filepath.Join(dir, "videos/observation.images.top/chunk-000/file-000.mp4")); err != nil {
		t.Fatal(err)
	}
	upstream := testkit.StartFakeGCS(t, testkit.ReadDirFiles(t, dir))
	st, data := openRemote(t, gcsSource(t, upstream.URL()), t.TempDir(), 1<<30)
	defer st.Close()
	data = mustLeRobot(t, data)
	d := &Dataset{Config: config.DatasetConfig{Name: "lr", ImageKey: "observation.images.top"}, Data: data}
	if err := useCameras([]opened{{ds: d}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, key := range episodeKeys(t, data) {
		_, err := data.Episode(ctx, key)
		switch {
		case i < 5:
			if !errors.Is(err, episode.ErrMissingShard) || errors.Is(err, fs.ErrNotExist) {
				t.Errorf("episode %d, in the deleted file: %v, want missing_shard and not fs.ErrNotExist", i, err)
			}
		case i == 6:
			if !errors.Is(err, episode.ErrCorrupt) || !strings.Contains(err.Error(), "truncated") {
				t.Errorf("episode %d, past the cut: %v, want corrupt, truncated", i, err)
			}
		case err != nil:
			t.Errorf("episode %d: %v; the damage does not touch it", i, err)
		}
	}
}
