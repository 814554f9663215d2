package diskcache

import (
	"bytes"
	"context"
	"testing"
)

// BenchmarkReadAtWarm: a ranged read served from a cached range (a record
// read again, say): what a warm read costs the cache. Nothing is checked
// or summed on this path.
func BenchmarkReadAtWarm(b *testing.B) {
	bc, src := readerCache(b, 64<<20)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	src.put("f", data)
	o := object(b, bc, "f")
	ctx := context.Background()
	p := make([]byte, 64<<10)
	if _, err := bc.ReadAt(ctx, o, p, 4096, ReadOptions{Keep: KeepRange}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bc.ReadAt(ctx, o, p, 4096, ReadOptions{Keep: KeepRange}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFill: a whole 64 MiB object filled from an in-memory source,
// in one stream and in slices, from a source that publishes no checksum
// and from one that publishes its CRC32C (checked before the object is
// kept): the cost of verification on a cold fill, with no network to hide
// it (a real fetch is slower, so the share is smaller).
func BenchmarkFill(b *testing.B) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 4<<20) // 64 MiB
	for _, mode := range []struct {
		name string
		sl   slicing
	}{{"stream", slicing{min: 1 << 40, size: 8 << 20, inFlight: 6}}, {"slices", slicing{min: 1, size: 8 << 20, inFlight: 6}}} {
		for _, publish := range []bool{false, true} {
			name := mode.name + "/no-checksum"
			if publish {
				name = mode.name + "/crc32c"
			}
			b.Run(name, func(b *testing.B) {
				c, err := Open(b.TempDir(), 1<<30, testLog(b), 0)
				if err != nil {
					b.Fatal(err)
				}
				c.slicing = mode.sl
				src := newVersioned()
				src.publish = publish
				src.put("f", data)
				bc := c.Wrap(src, "src", context.Background())
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					f, err := bc.OpenFile(context.Background(), "f")
					if err != nil {
						b.Fatal(err)
					}
					f.Close()
					if err := bc.Forget("f"); err != nil {
						b.Fatal(err)
					}
				}
				if publish && c.Stats.Verified.Load() == 0 {
					b.Fatal("nothing was verified")
				}
			})
		}
	}
}
