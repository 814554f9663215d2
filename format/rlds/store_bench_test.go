package rlds

import (
	"context"
	"testing"
)

// BenchmarkLoadWarm measures read + CRC + Example parse of every fixture
// episode from a warm disk cache (GCS shards already fetched, in the page
// cache), bypassing the RAM cache: the store's per-core ceiling before any
// decode. Bytes are record bytes.
func BenchmarkLoadWarm(b *testing.B) {
	m := loadManifest(b)
	var dirs []string
	for _, md := range m.Datasets {
		dirs = append(dirs, md.Dir)
	}
	srcs := gcsFixture(b, dirs...)
	s := newTestStore(b, "")
	ctx := context.Background()
	type item struct {
		ds  *Dataset
		ref Ref
	}
	var items []item
	for _, md := range m.Datasets {
		ds, err := Open(ctx, s, "", srcs[md.Dir])
		if err != nil {
			b.Fatal(err)
		}
		for split, sp := range md.Splits {
			for si, sh := range sp.Shards {
				for _, r := range sh.Records {
					ref := Ref{Split: split, Shard: si, Record: r.Index}
					if _, err := ds.load(ctx, ref); err != nil { // warms the disk cache
						b.Fatal(err)
					}
					items = append(items, item{ds, ref})
				}
			}
		}
	}
	b.SetBytes(s.Stats.BytesRead.Load()) // record bytes of one pass
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, it := range items {
			if _, err := it.ds.load(ctx, it.ref); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(items))*float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
}
