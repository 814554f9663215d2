package lerobot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage/local"
)

// TestTruncatedVideoKeepsItsHead: a video file with its sample table first
// (LeRobot's faststart files), cut in the middle, costs only the episodes
// whose samples lie past the cut. Episode 5, before the cut in
// truncated_mp4, loads with the same samples as from the whole file, all
// within what is left of it, and reads the same bytes; episode 6, past
// it, is corrupt.
func TestTruncatedVideoKeepsItsHead(t *testing.T) {
	ctx := context.Background()
	dir := testkit.LeRobotDamaged(t, "truncated_mp4")
	cut, err := Open(ctx, "cut", local.New(dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	whole := openFixture(t, "lerobot_av1")
	const top = "observation.images.top"
	fi, err := os.Stat(filepath.Join(dir, "videos", top, "chunk-000", "file-001.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	view := func(d *Dataset, i int64) (episode.Video, error) {
		key, _ := d.Key(i)
		ep, err := d.Episode(ctx, key)
		if err != nil {
			return nil, err
		}
		v, err := ep.Feature(top)
		if err != nil {
			return nil, err
		}
		return v.(episode.Video), nil
	}
	got, err := view(cut, 5)
	if err != nil {
		t.Fatalf("episode 5, before the cut: %v", err)
	}
	want, err := view(whole, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got.Samples() != want.Samples() {
		t.Fatalf("%d samples, want %d", got.Samples(), want.Samples())
	}
	for j := got.Start(0); j < got.Samples(); j++ {
		off, size, pts, key := got.Sample(j)
		woff, wsize, wpts, wkey := want.Sample(j)
		if off != woff || size != wsize || pts != wpts || key != wkey {
			t.Fatalf("sample %d: %d+%d pts %d key %v, want %d+%d pts %d key %v", j, off, size, pts, key, woff, wsize, wpts, wkey)
		}
		if size == 0 {
			continue
		}
		if off+int64(size) > fi.Size() {
			t.Fatalf("sample %d ends at %d, past the cut at %d", j, off+int64(size), fi.Size())
		}
		a, b := make([]byte, size), make([]byte, size)
		if _, err := got.ReadAt(ctx, a, off); err != nil {
			t.Fatal(err)
		}
		if _, err := want.ReadAt(ctx, b, off); err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Fatalf("sample %d: bytes differ", j)
		}
	}
	if _, err := view(cut, 6); !errors.Is(err, episode.ErrCorrupt) {
		t.Errorf("episode 6, past the cut: %v, want corrupt", err)
	}
}
