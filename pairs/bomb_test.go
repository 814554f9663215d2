package pairs

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"

	"github.com/oxefs/oxefs/cache"
	"github.com/oxefs/oxefs/cache/example"
	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/mix"
)

// pngBomb writes a valid PNG of w×h pixels of one colour (all zeros), of
// the given bit depth and colour type (2: RGB, 6: RGBA, 0: gray): a few KB
// that image/png would decode into w·h·(bytes per pixel) bytes.
func pngBomb(t testing.TB, w, h, depth, colorType int) []byte {
	t.Helper()
	channels := map[int]int{0: 1, 2: 3, 4: 2, 6: 4}[colorType]
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&out, binary.BigEndian, uint32(len(data)))
		c := crc32.NewIEEE()
		c.Write([]byte(typ))
		c.Write(data)
		out.WriteString(typ)
		out.Write(data)
		binary.Write(&out, binary.BigEndian, c.Sum32())
	}
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	ihdr = append(ihdr, byte(depth), byte(colorType), 0, 0, 0)
	chunk("IHDR", ihdr)
	var idat bytes.Buffer
	zw, err := zlib.NewWriterLevel(&idat, flate.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	row := make([]byte, 1+(w*channels*depth+7)/8) // filter byte 0, then zeros
	for range h {
		if _, err := zw.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	chunk("IDAT", idat.Bytes())
	chunk("IEND", nil)
	return out.Bytes()
}

// allocated returns the bytes f allocates on the Go heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecompressionBombs: PNGs of a few KB that declare huge images are
// refused from their header, before image/png allocates anything like
// their decoded size, whatever features.json declares; an image within the
// bounds still decodes.
func TestDecompressionBombs(t *testing.T) {
	bombs := []struct {
		name       string
		png        []byte
		decodedMiB int // what image/png would allocate
	}{
		// 16 MP of 16-bit RGBA: NRGBA64, 8 bytes a pixel, under the old
		// 32 MP cap.
		{"4096x4096 RGBA 16-bit", pngBomb(t, 4096, 4096, 16, 6), 128},
		// Wider than any camera: refused by the side bound.
		{"30000x600 gray", pngBomb(t, 30000, 600, 8, 0), 17},
	}
	for _, bomb := range bombs {
		t.Logf("%s: %d bytes of PNG, %d MiB decoded", bomb.name, len(bomb.png), bomb.decodedMiB)
	}
	mem := NewDecodeMemory(32 << 20)
	for _, choice := range []string{JPEGTurbo, JPEGGo} {
		d := testDecoder(t, choice)
		d.mem = mem
		for _, bomb := range bombs {
			t.Run(choice+"/"+bomb.name, func(t *testing.T) {
				var err error
				n := allocated(func() { _, err = d.decode(bomb.png, size{}, "", nil, 0, 0) })
				if !errors.Is(err, ErrUndecodable) {
					t.Fatalf("got %v, want ErrUndecodable", err)
				}
				if n > 4<<20 {
					t.Errorf("refusing the bomb allocated %d bytes, want well under its %d MiB", n, bomb.decodedMiB)
				}
				t.Logf("%v (%d bytes allocated)", err, n)
			})
		}
		// Within the budget: 1024×1024 RGBA 16-bit needs 8 MiB + 3 MiB.
		img, err := d.decode(pngBomb(t, 1024, 1024, 16, 6), size{}, "", nil, 0, 0)
		if err != nil || img.W != 1024 || img.H != 1024 {
			t.Fatalf("%s: a 1024x1024 PNG within the budget: %v", choice, err)
		}
		d.release()
	}
	if held, _, _ := mem.Stats(); held != 0 {
		t.Errorf("decode memory still holds %d bytes after the decodes", held)
	}
}

// TestDecompressionBombInEpisode: a PNG bomb as one frame of an episode is
// corrupt data for that record (substituted, counted), found quickly,
// whether features.json declares the frame size or not.
func TestDecompressionBombInEpisode(t *testing.T) {
	const rgb = "steps/observation/rgb"
	const shard = "tiny_table-train.tfrecord-00000-of-00002"
	bomb := pngBomb(t, 4096, 4096, 16, 6)
	s := newStore(t)
	table := openFixture(t, s, "tiny_table")
	vals := replaceStep(t, episode(t, table, cache.Ref{Split: "train", Shard: 0, Record: 0}), rgb, 0, bomb)
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
			d := testDecoder(t, JPEGGo)
			d.mem = NewDecodeMemory(32 << 20)
			slot := make([]byte, a.SampleBytes())
			ep := episode(t, ds, cache.Ref{Split: "train", Shard: 0, Record: 0})
			var err error
			n := allocated(func() { err = a.Build(d, mix.Sample{Episode: ep.Ref}, ep, slot, nil) })
			var ie *ImageError
			if !errors.Is(err, cache.ErrCorrupt) || !errors.As(err, &ie) || ie.Step != 0 {
				t.Fatalf("got %v, want a corrupt-data error for step 0", err)
			}
			if n > 4<<20 {
				t.Errorf("the bomb allocated %d bytes, want well under its 128 MiB", n)
			}
			t.Logf("%v (%d bytes allocated)", err, n)
		})
	}
}
