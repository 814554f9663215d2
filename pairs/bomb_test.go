package pairs

import (
	"errors"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format/rlds"
	"github.com/oxefs/oxefs/format/rlds/example"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/plan"
)

// TestDecompressionBombInEpisode: a PNG bomb as one frame of an episode is
// corrupt data for that record (substituted, counted), found quickly,
// whether features.json declares the frame size or not.
func TestDecompressionBombInEpisode(t *testing.T) {
	const rgb = "steps/observation/rgb"
	const shard = "tiny_table-train.tfrecord-00000-of-00002"
	bomb := testkit.PNGBomb(t, 4096, 4096, 16, 6)
	s := newStore(t)
	table := openFixture(t, s, "tiny_table")
	vals := replaceStep(t, loadEpisode(t, table, rlds.Ref{Split: "train", Shard: 0, Record: 0}), rgb, 0, bomb)
	dir := copyDataset(t, filepath.Join(fixtureDir, "datasets", "tiny_table", "1.0.0"), shard,
		func(rec int, b *example.Builder) bool {
			if rec == 0 {
				b.AddBytes(rgb, vals...)
				return true
			}
			return false
		}, nil)
	anySize := copyDataset(t, dir, shard, func(int, *example.Builder) bool { return false },
		func(s string) string {
			return regexp.MustCompile(`"40",\s*"72",`).ReplaceAllString(s, `"-1", "-1",`)
		})
	for _, tc := range []struct{ name, dir string }{{"declared 40x72", dir}, {"size not declared", anySize}} {
		t.Run(tc.name, func(t *testing.T) {
			ds := openDir(t, newStore(t), "", tc.dir)
			cfg := fixtureConfig("tiny_table")
			cfg.Frames = config.Frames{Mode: config.FramesEndpoints, Offset: config.FixedOffset(1)} // steps 0 and 1
			a := mustNew(t, ds, cfg)
			w := testWorkerWith(t, frames.DecoderOptions{JPEG: frames.JPEGGo, Memory: frames.NewDecodeMemory(32 << 20)})
			slot := make([]byte, a.SampleBytes())
			ep := loadEpisode(t, ds, rlds.Ref{Split: "train", Shard: 0, Record: 0})
			var err error
			n := testkit.Allocated(func() { err = w.build(a, t.Context(), plan.Sample{Episode: ep.Key()}, ep, slot, nil) })
			var ie *frames.ImageError
			if !errors.Is(err, episode.ErrCorrupt) || !errors.As(err, &ie) || ie.Step != 0 {
				t.Fatalf("got %v, want a corrupt-data error for step 0", err)
			}
			if n > 4<<20 {
				t.Errorf("the bomb allocated %d bytes, want well under its 128 MiB", n)
			}
			t.Logf("%v (%d bytes allocated)", err, n)
		})
	}
}
