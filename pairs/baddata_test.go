package pairs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format/rlds"
	"github.com/oxefs/oxefs/format/rlds/example"
	"github.com/oxefs/oxefs/format/rlds/tfrecord"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/store"
)

// openDir opens a TFDS dataset directory as RLDS, as the byte studies here
// and in bomb_test.go do with the shards they rewrite; name "" keeps the
// dataset's own.
func openDir(t testing.TB, s *store.Store, name, dir string) *rlds.Dataset {
	t.Helper()
	ds, err := rlds.Open(context.Background(), s, name, local.New(dir))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// copyDataset copies a TFDS dataset directory into a temporary one,
// rewriting the records of one shard with edit (which may change any
// record's features; records it returns false for are copied as they
// are), and applies fixFeatures to features.json.
func copyDataset(t *testing.T, src, shard string, edit func(rec int, b *example.Builder) bool, fixFeatures func(string) string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		switch e.Name() {
		case shard:
			b = rewriteShard(t, b, edit)
		case "features.json":
			if fixFeatures != nil {
				b = []byte(fixFeatures(string(b)))
			}
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func rewriteShard(t *testing.T, shard []byte, edit func(rec int, b *example.Builder) bool) []byte {
	t.Helper()
	r := bytes.NewReader(shard)
	spans, err := tfrecord.Index(r, int64(len(shard)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	w := tfrecord.NewWriter(bw)
	for i, sp := range spans {
		raw, err := tfrecord.ReadRecord(r, sp, nil)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := example.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		var b example.Builder
		for _, k := range ex.Keys() {
			f, _ := ex.Feature(k)
			switch f.Kind() {
			case example.KindBytes:
				b.AddBytes(k, f.AppendBytes(nil)...)
			case example.KindFloat:
				b.AddFloats(k, f.AppendFloats(nil)...)
			case example.KindInt64:
				b.AddInt64s(k, f.AppendInt64s(nil)...)
			}
		}
		if edit(i, &b) {
			raw = b.Marshal()
		}
		if err := w.Write(raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// replaceStep returns the values of a bytes feature of a record with one
// step replaced.
func replaceStep(t *testing.T, ep episode.Episode, key string, step int, val []byte) [][]byte {
	t.Helper()
	v, err := ep.Feature(key)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([][]byte, ep.Steps())
	for i := range vals {
		vals[i] = v.Bytes(i)
	}
	vals[step] = val
	return vals
}

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestBadData: every kind of bad data gives its typed error — a
// *episode.CorruptError naming dataset, shard and record (wrapping an
// *frames.ImageError naming the key and step for images) — and the decoder keeps
// working after it.
func TestBadData(t *testing.T) {
	s := newStore(t)
	table := openFixture(t, s, "tiny_table")
	bridge := openFixture(t, s, "tiny_bridge")
	const tableShard = "tiny_table-train.tfrecord-00000-of-00002"
	const bridgeShard = "tiny_bridge-train.tfrecord-00000-of-00003"
	tableEp := func(rec int) episode.Episode {
		return loadEpisode(t, table, rlds.Ref{Split: "train", Shard: 0, Record: rec})
	}
	bridgeEp := func(rec int) episode.Episode {
		return loadEpisode(t, bridge, rlds.Ref{Split: "train", Shard: 0, Record: rec})
	}
	const rgb, cam, wrist = "steps/observation/rgb", "steps/observation/image", "steps/observation/wrist_image"

	// tiny_table (PNG, declared 40x72): step 1 of records 0-3 damaged,
	// record 4's action one value short.
	pngImg := tableEp(2)
	pngBytes, _ := pngImg.Feature(rgb)
	tableEdits := map[int][][]byte{
		0: replaceStep(t, tableEp(0), rgb, 1, []byte{}),
		1: replaceStep(t, tableEp(1), rgb, 1, []byte("GIF89a: not a format TFDS writes")),
		2: replaceStep(t, tableEp(2), rgb, 1, pngBytes.Bytes(1)[:len(pngBytes.Bytes(1))/2]),
		3: replaceStep(t, tableEp(3), rgb, 1, pngOf(t, 32, 32)),
	}
	shortAction := func() []float32 {
		v, _ := tableEp(4).Feature("steps/action")
		f, _ := v.Float64s(nil)
		out := make([]float32, len(f)-1)
		for i := range out {
			out[i] = float32(f[i])
		}
		return out
	}()
	tableDir := copyDataset(t, filepath.Join(fixtureDir, "datasets", "tiny_table", "1.0.0"), tableShard,
		func(rec int, b *example.Builder) bool {
			if vals, ok := tableEdits[rec]; ok {
				b.AddBytes(rgb, vals...)
				return true
			}
			if rec == 4 {
				b.AddFloats("steps/action", shortAction...)
				return true
			}
			return false
		}, nil)
	// The same with features.json declaring no image size: a frame must
	// then match the sample's first frame.
	anySizeDir := copyDataset(t, tableDir, tableShard, func(int, *example.Builder) bool { return false },
		func(s string) string {
			return regexp.MustCompile(`"40",\s*"72",`).ReplaceAllString(s, `"-1", "-1",`)
		})

	// tiny_bridge (JPEG, declared 96x128): step 1 of records 0-2 damaged.
	jpg, _ := bridgeEp(0).Feature(cam)
	good := jpg.Bytes(1)
	garbled := bytes.Clone(good)
	for i := len(garbled) / 3; i < len(garbled)-2; i++ {
		garbled[i] = 0xFF
	}
	wr, _ := bridgeEp(2).Feature(wrist)
	bridgeEdits := map[int][][]byte{
		0: replaceStep(t, bridgeEp(0), cam, 1, good[:len(good)*2/3]),
		1: replaceStep(t, bridgeEp(1), cam, 1, garbled),
		2: replaceStep(t, bridgeEp(2), cam, 1, wr.Bytes(1)), // 64x64
	}
	bridgeDir := copyDataset(t, filepath.Join(fixtureDir, "datasets", "tiny_bridge", "1.0.0"), bridgeShard,
		func(rec int, b *example.Builder) bool {
			if vals, ok := bridgeEdits[rec]; ok {
				b.AddBytes(cam, vals...)
				return true
			}
			return false
		}, nil)

	cases := []struct {
		name    string
		dir     string
		dataset string
		shard   string
		record  int
		image   error  // the *frames.ImageError's cause; nil: not an image error
		msg     string // in the error text
	}{
		{"empty image", tableDir, "tiny_table", tableShard, 0, frames.ErrEmptyImage, "step 1"},
		{"not an image", tableDir, "tiny_table", tableShard, 1, frames.ErrImageFormat, "47 49 46"},
		{"truncated PNG", tableDir, "tiny_table", tableShard, 2, frames.ErrUndecodable, "image/png"},
		{"PNG of the wrong size", tableDir, "tiny_table", tableShard, 3, frames.ErrImageSize, "decoded 32x32 (WxH), features.json declares 72x40"},
		{"PNG unlike the first frame", anySizeDir, "tiny_table", tableShard, 3, frames.ErrImageSize, "decoded 32x32 (WxH), the sample's first frame is 72x40"},
		{"action one value short", tableDir, "tiny_table", tableShard, 4, nil, `"steps/action" has 27 values`},
		{"missing image feature", filepath.Join(fixtureDir, "corrupt", "missing_image"), "tiny_table", tableShard, 3, nil, `"steps/observation/rgb" missing`},
		{"truncated JPEG", bridgeDir, "tiny_bridge", bridgeShard, 0, frames.ErrUndecodable, "step 1"},
		{"garbled JPEG", bridgeDir, "tiny_bridge", bridgeShard, 1, frames.ErrUndecodable, "step 1"},
		{"JPEG of the wrong size", bridgeDir, "tiny_bridge", bridgeShard, 2, frames.ErrImageSize, "decoded 64x64 (WxH), features.json declares 128x96"},
	}
	for _, choice := range []string{frames.JPEGTurbo, frames.JPEGGo} {
		t.Run(choice, func(t *testing.T) {
			w := testWorker(t, choice)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					ds := openDir(t, newStore(t), "", tc.dir)
					cfg := fixtureConfig(tc.dataset)
					cfg.Frames = config.Frames{Mode: config.FramesEndpoints, Offset: config.FixedOffset(1)} // steps 0 and 1 of unit 0
					a := mustNew(t, ds, cfg)
					slot := make([]byte, a.SampleBytes())
					var m Meta
					ep := loadEpisode(t, ds, rlds.Ref{Split: "train", Shard: 0, Record: tc.record})
					err := w.build(a, t.Context(), plan.Sample{Episode: ep.Key(), Unit: 0}, ep, slot, &m)
					var ce *episode.CorruptError
					if !errors.Is(err, episode.ErrCorrupt) || !errors.As(err, &ce) {
						t.Fatalf("got %v, want a *episode.CorruptError", err)
					}
					if ce.Dataset != tc.dataset || ce.Shard != tc.shard || ce.Record != tc.record {
						t.Errorf("error names %s/%s/%d, want %s/%s/%d", ce.Dataset, ce.Shard, ce.Record, tc.dataset, tc.shard, tc.record)
					}
					if !strings.Contains(err.Error(), tc.msg) {
						t.Errorf("error %q does not say %q", err, tc.msg)
					}
					if tc.image != nil {
						var ie *frames.ImageError
						if !errors.As(err, &ie) || !errors.Is(err, tc.image) || ie.Key != cfg.ImageKey || ie.Step != 1 {
							t.Errorf("got %v, want an *frames.ImageError for step 1 of %s wrapping %v", err, cfg.ImageKey, tc.image)
						}
					}
					t.Logf("%v", err)
					// The decoder still works: an intact record of the next shard.
					good := loadEpisode(t, ds, rlds.Ref{Split: "train", Shard: 1, Record: 0})
					if err := w.build(a, t.Context(), plan.Sample{Episode: good.Key()}, good, slot, &m); err != nil {
						t.Fatalf("good record after a bad one: %v", err)
					}
				})
			}
		})
	}
}
