package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/internal/missing"
	"github.com/oxefs/oxefs/internal/testkit"
)

// TestMountOfflineLeRobot: `oxefs warm` fetches every file the train and
// val selections of two datasets reading one remote LeRobot source need
// (other episodes, other cameras); with the fake GCS server stopped, `mount --offline` serves the same train and val batches as an
// online mount of the same config. Before warm, the offline mount is
// refused, naming what the cache lacks.
func TestMountOfflineLeRobot(t *testing.T) {
	testkit.RequireFUSE(t)
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	cfg := writeMixText(t, `batch_size: 2
image_size: [32, 40]
datasets:
  - name: lr
    source: gs://robotics/lerobot_av1
    anonymous: true
    split: train[:2]
    image_key: observation.images.top
    val_split: val
    offset: [1, 3]
    language_key: task
    action_keys: [action]
    state_key: observation.state
  - name: lr_wrist
    source: gs://robotics/lerobot_av1
    anonymous: true
    split: train[3:]
    image_key: observation.images.wrist
    offset: 2
    action_keys: [action]
`)
	srv := fakeGCS(t, "robotics", map[string]string{"lerobot_av1": "testdata/lerobot/lerobot_av1"})
	env := []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(srv.URL(), "http://")}
	cacheDir := t.TempDir()

	_, stderr, code := runOxefs(t, env, "mount", "--config", cfg, "--cache-dir", cacheDir, "--offline", t.TempDir())
	if code == 0 || !strings.Contains(stderr, "oxefs warm") {
		t.Fatalf("mount --offline before warm: exit %d, want a refusal that names oxefs warm:\n%s", code, stderr)
	}
	t.Logf("mount --offline before warm:\n%s", stderr)

	out, stderr, code := runOxefs(t, env, "warm", "--config", cfg, "--cache-dir", cacheDir)
	if code != 0 {
		t.Fatalf("warm: exit %d\n%s\n%s", code, out, stderr)
	}
	t.Logf("warm:\n%s", out)
	for _, want := range []string{"files of LeRobot dataset lr in the disk cache", "files of LeRobot dataset lr_wrist in the disk cache", "mount --offline can serve this mix"} {
		if !strings.Contains(out, want) {
			t.Fatalf("warm's output lacks %q:\n%s", want, out)
		}
	}

	offline := sameOnlineOffline(t, srv.Stop, env, cfg, cacheDir, 2)
	var stats struct {
		Subs map[string]int64 `json:"substitutions"`
	}
	readJSON(t, filepath.Join(offline, "stats.json"), &stats)
	if len(stats.Subs) != 0 {
		t.Errorf("offline mount substituted episodes: %v", stats.Subs)
	}

	// A video file gone from the cache: the offline mount is refused,
	// naming it.
	var gone []string
	err := filepath.WalkDir(cacheDir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(filepath.Dir(p), filepath.Join("observation.images.wrist", "chunk-000", "file-001.mp4.versions")) && !strings.HasSuffix(p, ".lock") {
			gone = append(gone, p)
		}
		return err
	})
	if err != nil || len(gone) != 1 {
		t.Fatalf("the cached wrist video file-001.mp4: %v, %v", gone, err)
	}
	if err := os.Remove(gone[0]); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runOxefs(t, env, "mount", "--config", cfg, "--cache-dir", cacheDir, "--offline", t.TempDir())
	if code == 0 || !strings.Contains(stderr, "files of its selections: videos/observation.images.wrist/chunk-000/file-001.mp4") {
		t.Fatalf("mount --offline without a cached video file: exit %d, want a refusal naming it:\n%s", code, stderr)
	}
}
