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
		t.Skipf("LeRobot video needs libavcodec: %v", err)
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
