package rlds

import (
	"github.com/oxefs/oxefs/storage/local"

	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format/rlds/example"
	"github.com/oxefs/oxefs/format/rlds/tfrecord"
	"github.com/oxefs/oxefs/internal/testkit"
)

// zlibOf compresses b.
func zlibOf(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// withShardRewritten copies the dataset directory src into a temporary one
// with the records of shard file shard passed through edit.
func withShardRewritten(t *testing.T, src, shard string, edit func(rec int, ex *example.Example) []byte) string {
	t.Helper()
	return testkit.CopyDirEdit(t, src, func(name string, b []byte) []byte {
		if name == shard {
			r := bytes.NewReader(b)
			spans, err := tfrecord.Index(r, int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			w := tfrecord.NewWriter(&out)
			for i, sp := range spans {
				raw, err := tfrecord.ReadRecord(r, sp, nil)
				if err != nil {
					t.Fatal(err)
				}
				ex, err := example.Parse(raw)
				if err != nil {
					t.Fatal(err)
				}
				if nb := edit(i, ex); nb != nil {
					raw = nb
				}
				if err := w.Write(raw); err != nil {
					t.Fatal(err)
				}
			}
			b = out.Bytes()
		}
		return b
	})
}

// rebuild copies every feature of ex into a Builder, with key's values
// replaced by vals.
func rebuild(ex *example.Example, key string, vals [][]byte) []byte {
	var b example.Builder
	for _, k := range ex.Keys() {
		f, _ := ex.Feature(k)
		switch {
		case k == key:
			b.AddBytes(k, vals...)
		case f.Kind() == example.KindBytes:
			b.AddBytes(k, f.AppendBytes(nil)...)
		case f.Kind() == example.KindFloat:
			b.AddFloats(k, f.AppendFloats(nil)...)
		case f.Kind() == example.KindInt64:
			b.AddInt64s(k, f.AppendInt64s(nil)...)
		}
	}
	return b.Marshal()
}

// TestZlibTensorBomb: a zlib-encoded float32[16,16] tensor (1 KiB once
// inflated) that inflates to 64 MiB is corrupt data, found without
// inflating more than the declared size.
func TestZlibTensorBomb(t *testing.T) {
	const key = "steps/observation/depth"
	bomb := zlibOf(t, make([]byte, 64<<20))
	oneBig := zlibOf(t, make([]byte, 16*16*4+1)) // one byte too many
	src := filepath.Join(fixtureDir, "datasets/tiny_kuka/1.0.0")
	const shard = "tiny_kuka-train.tfrecord-00000-of-00002"
	dir := withShardRewritten(t, src, shard, func(rec int, ex *example.Example) []byte {
		if rec > 1 {
			return nil
		}
		f, _ := ex.Feature(key)
		vals := f.AppendBytes(nil)
		vals[len(vals)-1] = [][]byte{bomb, oneBig}[rec]
		return rebuild(ex, key, vals)
	})
	s := newTestStore(t, "")
	ctx := context.Background()
	ds, err := Open(ctx, s, "kuka_bomb", local.New(dir))
	if err != nil {
		t.Fatal(err)
	}
	for rec, what := range []string{"64 MiB bomb", "one byte too many"} {
		ep, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: rec})
		if err != nil {
			t.Fatal(err)
		}
		v, err := ep.Feature(key)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = v.Float64s(nil)
		runtime.ReadMemStats(&after)
		var ce *episode.CorruptError
		if !errors.Is(err, episode.ErrCorrupt) || !errors.As(err, &ce) || ce.Record != rec {
			t.Fatalf("%s: got %v, want a *episode.CorruptError for record %d", what, err, rec)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
			t.Errorf("%s: decoding allocated %d bytes, want well under the bomb's 64 MiB", what, alloc)
		}
		t.Logf("%s: %v", what, err)
	}
	// The intact records still read.
	ep, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: 2})
	if err == nil {
		var v episode.View
		if v, err = ep.Feature(key); err == nil {
			_, err = v.Float64s(nil)
		}
	}
	if err != nil {
		t.Fatalf("intact record: %v", err)
	}
}
