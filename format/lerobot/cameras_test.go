package lerobot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage/local"
)

// TestUseCameras: a dataset told which cameras are read loads its
// episodes with another camera's video files deleted, lists only the
// read cameras' files, and says which cameras it reads when asked for
// another; an unknown key is refused, naming the features. A deleted
// file of a camera read makes its episodes missing_shard, with an error
// that names the camera and the file and does not match fs.ErrNotExist.
func TestUseCameras(t *testing.T) {
	dir := testkit.CopyDir(t, filepath.Join(fixtures, "lerobot_av1"))
	const wrist, top = "observation.images.wrist", "observation.images.top"
	gone := "videos/" + wrist + "/chunk-000/file-000.mp4"
	if err := os.Remove(filepath.Join(dir, gone)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	open := func() *Dataset {
		d, err := Open(ctx, "lr", local.New(dir), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	key := episode.Key{Split: "train", Shard: 0, Record: 0}

	d := open()
	if err := d.UseCameras([]string{"observation.images.nope"}); err == nil || !strings.Contains(err.Error(), top) {
		t.Errorf("an unknown camera: %v, want an error naming the features", err)
	}
	if err := d.UseCameras([]string{top, "action"}); err != nil {
		t.Fatal(err)
	}
	ep, err := d.Episode(ctx, key)
	if err != nil {
		t.Fatalf("episode with an unread camera's file deleted: %v", err)
	}
	if _, err := ep.Feature(top); err != nil {
		t.Errorf("camera read: %v", err)
	}
	if _, err := ep.Feature(wrist); err == nil || errors.Is(err, episode.ErrCorrupt) || !strings.Contains(err.Error(), top) {
		t.Errorf("camera not read: %v, want an error saying which cameras are read, not corrupt data", err)
	}
	files, err := d.Files(mustSelect(t, d, "train"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.Contains(f, wrist) {
			t.Errorf("Files lists %s, of a camera not read", f)
		}
	}

	d = open() // every camera, as a dataset not told otherwise reads
	_, err = d.Episode(ctx, key)
	if !errors.Is(err, episode.ErrMissingShard) || errors.Is(err, os.ErrNotExist) {
		t.Fatalf("episode whose camera file is deleted: %v, want missing_shard, not fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), wrist) || !strings.Contains(err.Error(), "file-000.mp4") {
		t.Errorf("%v names neither the camera nor the file", err)
	}
}

func mustSelect(t *testing.T, d *Dataset, spec string) []episode.Range {
	t.Helper()
	r, err := d.Select(spec)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
