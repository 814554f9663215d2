package rlds

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format/rlds/tfrecord"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/local"
)

// TestRecordCRCOnce: a record's data CRC is computed on its first load from
// a file and skipped on later loads of the same record from the same file,
// local or in the disk cache, with the same bytes; the damaged record of
// the bad_crc fixture fails on every load (fetched from GCS, it is refused
// as it arrives); a local shard rewritten in
// place with one byte of an intact record flipped and its modification
// time set back (its change time moves) is checked again and fails.
func TestRecordCRCOnce(t *testing.T) {
	defer func(s time.Duration) { settled = s }(settled)
	settled = 100 * time.Millisecond
	const shard, bad = "tiny_table-train.tfrecord-00000-of-00002", 2
	dir := t.TempDir()
	src := filepath.Join(fixtureDir, "corrupt", "bad_crc")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gcs := gcsFixture(t, "corrupt/bad_crc")
	ctx := context.Background()
	for _, via := range []string{"local", "gcs"} {
		t.Run(via, func(t *testing.T) {
			var b storage.Backend = local.New(dir)
			if via == "gcs" {
				b = gcs["corrupt/bad_crc"]
			}
			cacheDir := t.TempDir()
			ds, err := Open(ctx, newTestStore(t, cacheDir), "bad_crc", b)
			if err != nil {
				t.Fatal(err)
			}
			load := func(rec int) (*Episode, error) {
				ep, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: rec})
				if err != nil {
					return nil, err
				}
				return ep.(*Episode), nil
			}
			// A local shard written just now is checked on every load until
			// it settles (see settled).
			time.Sleep(2 * settled)
			skipped := ds.checked.Skipped.Load()
			want := int64(1) // the second load
			if via == "gcs" {
				// Fetched into the disk cache and checked as it arrives,
				// then read back from the cache file and checked: the
				// first load; the other two skip.
				ep, err := load(1)
				if err != nil {
					t.Fatal(err)
				}
				ep.Release()
				want = 2
			}
			first, err := load(1)
			if err != nil {
				t.Fatal(err)
			}
			again, err := load(1)
			if err != nil {
				t.Fatal(err)
			}
			if n := ds.checked.Skipped.Load() - skipped; n != want {
				t.Fatalf("loads of one record skipped the data CRC %d times, want %d (all but the first)", n, want)
			}
			if !bytes.Equal(first.rec.buf, again.rec.buf) {
				t.Fatal("a load without the data CRC read other bytes")
			}
			want1 := bytes.Clone(first.rec.buf)
			first.Release()
			again.Release()
			if via == "gcs" {
				// The cached record replaced by a damaged file of the same
				// size, published by rename as a fetch publishes (a new
				// file, whatever its inode number): checked again, dropped
				// and fetched again.
				var kept []string
				ranges, _ := filepath.Glob(filepath.Join(cacheDir, "files", "*", shard+".ranges", "*", "*-*"))
				for _, p := range ranges {
					if !strings.HasSuffix(p, ".lock") {
						kept = append(kept, p)
					}
				}
				if len(kept) != 1 {
					t.Fatalf("cached ranges of %s: %q, want record 1's", shard, kept)
				}
				good, err := os.ReadFile(kept[0])
				if err != nil {
					t.Fatal(err)
				}
				good[len(good)/2] ^= 0x5a
				if err := os.WriteFile(kept[0]+".new", good, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(kept[0]+".new", kept[0]); err != nil {
					t.Fatal(err)
				}
				skipped := ds.checked.Skipped.Load()
				ep, err := load(1)
				if err != nil {
					t.Fatalf("a damaged cached record published anew: %v; want it fetched again", err)
				}
				if ds.checked.Skipped.Load() != skipped {
					t.Fatal("a cached record published anew skipped its data CRC")
				}
				if !bytes.Equal(ep.rec.buf, want1) {
					t.Fatal("a damaged cached record published anew was served")
				}
				ep.Release()
			}
			for range 2 {
				if _, err := load(bad); !errors.Is(err, episode.ErrCorrupt) {
					t.Fatalf("record %d of %s (bad data CRC): %v, want a corrupt record on every load", bad, shard, err)
				}
			}
		})
	}
	t.Run("rewritten", func(t *testing.T) {
		ds, err := Open(ctx, newTestStore(t, ""), "bad_crc", local.New(dir))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, shard)
		ep, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: 1})
		if err != nil {
			t.Fatal(err)
		}
		ep.(*Episode).Release()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		spans, err := tfrecord.Index(f, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		at := spans[1].Offset + tfrecord.HeaderLen + spans[1].Len/2
		var one [1]byte
		if _, err := f.ReadAt(one[:], at); err != nil {
			t.Fatal(err)
		}
		one[0] ^= 0x5a
		if _, err := f.WriteAt(one[:], at); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * settled)
		if _, err := ds.Episode(ctx, Ref{Split: "train", Shard: 0, Record: 1}); !errors.Is(err, episode.ErrCorrupt) {
			t.Fatalf("record 1 of %s, a byte flipped in place (same size and mtime): %v, want a corrupt record", shard, err)
		}
	})
}
