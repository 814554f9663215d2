package diskcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
)

// fastRefetch fetches damaged bytes again without waiting long.
var fastRefetch = refetchPolicy{tries: 3, backoff: time.Millisecond}

func TestCRC32CCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := testkit.RandomBytes(t, 1<<16)
	for range 200 {
		a := rng.IntN(len(data) + 1)
		b := a + rng.IntN(len(data)-a+1)
		crcA := crc32.Checksum(data[:a], storage.CastagnoliTable)
		crcB := crc32.Checksum(data[a:b], storage.CastagnoliTable)
		want := crc32.Checksum(data[:b], storage.CastagnoliTable)
		if got := crc32cCombine(crcA, crcB, int64(b-a)); got != want {
			t.Fatalf("combine of [0,%d) and [%d,%d): %08x, want %08x", a, a, b, got, want)
		}
	}
}

// TestSinkSums: the sink's CRC32C of bytes written in any order of
// disjoint pieces (a stream, slices, ranges copied in) is the object's;
// overlapping writes lose it, and the check then reads the file back.
func TestSinkSums(t *testing.T) {
	data := testkit.RandomBytes(t, 100_000)
	want := crc32.Checksum(data, storage.CastagnoliTable)
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		f, err := os.CreateTemp(t.TempDir(), "sink")
		if err != nil {
			t.Fatal(err)
		}
		s := &sink{f: f}
		// Cut into pieces, written in a random order.
		var cuts []int
		for off := 0; off < len(data); off += 1 + rng.IntN(9000) {
			cuts = append(cuts, off)
		}
		cuts = append(cuts, len(data))
		order := rng.Perm(len(cuts) - 1)
		for _, i := range order {
			if _, err := s.WriteAt(data[cuts[i]:cuts[i+1]], int64(cuts[i])); err != nil {
				t.Fatal(err)
			}
		}
		got, ok := s.crc32c(int64(len(data)))
		if !ok || got != want {
			t.Fatalf("trial %d: %d pieces in a random order: sum %08x (kept %v), want %08x", trial, len(order), got, ok, want)
		}
		if trial == 0 {
			if _, err := s.WriteAt(data[10:20], 10); err != nil {
				t.Fatal(err)
			}
			if _, ok := s.crc32c(int64(len(data))); ok {
				t.Fatal("an overlapping write kept the sum")
			}
		}
		f.Close()
	}
}

// flipsOf starts fake GCS with the objects and a proxy that flips byte
// at of the responses flip picks (by request and by how many asked the
// same before).
func flipsOf(t *testing.T, objects map[string][]byte, flip func(r testkit.SeenRequest, nth int) bool, at int64) (*Cache, *Backend, *testkit.FaultProxy) {
	t.Helper()
	srv := testkit.StartFakeGCS(t, objects)
	proxy := testkit.NewRequestFaultProxy(t, srv.URL(), func(r testkit.SeenRequest, nth int) testkit.Fault {
		if flip(r, nth) {
			return testkit.FlipAt(at)
		}
		return testkit.Pass()
	})
	c, b := slicedCache(t, t.TempDir(), srv, proxy, true, context.Background())
	c.refetch = fastRefetch
	return c, b, proxy
}

// TestFillVerifiedRefetchesDamagedDownloads: a whole object whose bytes
// were damaged in transit (one byte flipped by a proxy) is fetched again
// and kept only once it matches the CRC32C GCS publishes, whether it came
// in one stream or in slices; an object damaged on every download is a
// transient error matching storage.ErrChecksum, and nothing is kept.
func TestFillVerifiedRefetchesDamagedDownloads(t *testing.T) {
	small, big := testkit.RandomBytes(t, 300_000), testkit.RandomBytes(t, bigObject)
	objects := map[string][]byte{"small": small, "big": big}
	for _, tc := range []struct {
		name   string
		object string
		flip   func(r testkit.SeenRequest, nth int) bool
		fails  bool
	}{
		{"one stream, first download", "small", func(_ testkit.SeenRequest, nth int) bool { return nth == 0 }, false},
		{"one slice, first download", "big", func(r testkit.SeenRequest, nth int) bool {
			return nth == 0 && r.Range == fmt.Sprintf("bytes=%d-%d", 2*testSlicing.size, 3*testSlicing.size-1)
		}, false},
		{"every download", "small", func(testkit.SeenRequest, int) bool { return true }, true},
		{"a slice of every download", "big", func(r testkit.SeenRequest, _ int) bool { return strings.HasPrefix(r.Range, "bytes=0-") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, b, proxy := flipsOf(t, objects, func(r testkit.SeenRequest, nth int) bool {
				return r.ReadsObject(tc.object) && tc.flip(r, nth)
			}, 1000)
			f, err := b.OpenFile(t.Context(), tc.object)
			if proxy.Flipped() == 0 {
				t.Fatal("the proxy flipped nothing: the test tests nothing")
			}
			if tc.fails {
				if err == nil {
					f.Close()
					t.Fatal("an object damaged on every download was served")
				}
				if !errors.Is(err, storage.ErrChecksum) || !storage.IsTransient(err) {
					t.Fatalf("an object damaged on every download: %v; want a transient storage.ErrChecksum", err)
				}
				if b.Contains(tc.object) {
					t.Fatal("an object damaged on every download was kept")
				}
				if got := c.Stats.Damaged.Load(); got != int64(fastRefetch.tries) {
					t.Errorf("Damaged = %d, want %d downloads", got, fastRefetch.tries)
				}
				if got := c.Stats.Rejected.Load(); got != 1 {
					t.Errorf("Rejected = %d, want 1", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("an object damaged once: %v; want it fetched again", err)
			}
			defer f.Close()
			if !bytes.Equal(readAll(t, f), objects[tc.object]) {
				t.Fatal("the cached copy differs from the object: damaged bytes were kept")
			}
			if d, v := c.Stats.Damaged.Load(), c.Stats.Verified.Load(); d != 1 || v != 1 {
				t.Errorf("Damaged %d, Verified %d; want 1, 1", d, v)
			}
			if tmp := tempFiles(t, c); len(tmp) != 0 {
				t.Errorf("temp files left: %q", tmp)
			}
		})
	}
}

// TestFillVerifiedDropsDamagedRanges: a cached range of the object that
// holds wrong bytes (kept before, unchecked) makes the whole download that
// reuses it fail its CRC32C; the ranges of that version are dropped and the
// download fetched again from the source, which then passes.
func TestFillVerifiedDropsDamagedRanges(t *testing.T) {
	big := testkit.RandomBytes(t, bigObject)
	var flips atomic.Bool
	flips.Store(true)
	c, b, _ := flipsOf(t, map[string][]byte{"big": big}, func(r testkit.SeenRequest, _ int) bool { return r.ReadsObject("big") && flips.Load() }, 5)
	o := object(t, b, "big")
	p := make([]byte, 100)
	if _, err := b.ReadAt(t.Context(), o, p, 4096, ReadOptions{Keep: KeepRange}); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(p, big[4096:4196]) {
		t.Fatal("the proxy did not damage the range")
	}
	flips.Store(false)
	f, err := b.OpenFile(t.Context(), "big")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !bytes.Equal(readAll(t, f), big) {
		t.Fatal("the whole object kept the damaged range's bytes")
	}
	if c.Stats.RangesReused.Load() != 1 || c.Stats.Damaged.Load() != 1 {
		t.Errorf("RangesReused %d, Damaged %d; want 1, 1", c.Stats.RangesReused.Load(), c.Stats.Damaged.Load())
	}
	if b.ContainsRange("big", o.Version, 4096, 100) {
		t.Error("the damaged range is still cached")
	}
}

// byteCheck is a Check that refuses bytes other than want's.
type byteCheck struct {
	want []byte
	got  []byte
}

func (c *byteCheck) Write(p []byte) (int, error) { c.got = append(c.got, p...); return len(p), nil }
func (c *byteCheck) Close() error {
	if !bytes.Equal(c.got, c.want) {
		return errBadBytes
	}
	return nil
}

var errBadBytes = errors.New("the check refused the bytes")

// TestReadAtRefetchesRefusedBytes: a checked range whose fresh bytes fail
// the check is fetched again: damaged once, the second fetch is kept;
// damaged differently on every fetch, the read fails with a transient
// storage.ErrChecksum and nothing is kept; the same bytes twice are the
// source's, and the check's error comes back (real corruption).
func TestReadAtRefetchesRefusedBytes(t *testing.T) {
	data := testkit.RandomBytes(t, 64<<10)
	const off, n = 1000, 5000
	for _, tc := range []struct {
		name    string
		flip    func(nth int) bool
		wantErr func(error) bool
		fetches int
	}{
		{"damaged once", func(nth int) bool { return nth == 0 }, nil, 2},
		{"damaged every time", func(int) bool { return true }, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nth atomic.Int64
			srv := testkit.StartFakeGCS(t, map[string][]byte{"f": data})
			proxy := testkit.NewRequestFaultProxy(t, srv.URL(), func(r testkit.SeenRequest, i int) testkit.Fault {
				if !r.ReadsObject("f") {
					return testkit.Pass()
				}
				k := nth.Add(1) - 1
				if tc.flip(int(k)) {
					return testkit.FlipAt(k) // a different byte each time
				}
				return testkit.Pass()
			})
			c, b := slicedCache(t, t.TempDir(), srv, proxy, true, context.Background())
			c.refetch = fastRefetch
			o := object(t, b, "f")
			for _, keep := range []Keep{KeepRange, KeepNone} {
				nth.Store(0)
				p := make([]byte, n)
				_, err := b.ReadAt(t.Context(), o, p, off, ReadOptions{Keep: keep,
					Check: func() io.WriteCloser { return &byteCheck{want: data[off : off+n]} }})
				if tc.fetches == 0 {
					if err == nil || !errors.Is(err, storage.ErrChecksum) || !storage.IsTransient(err) || errors.Is(err, errBadBytes) {
						t.Fatalf("keep %v: bytes damaged on every fetch: %v; want a transient storage.ErrChecksum, not the check's error", keep, err)
					}
					if got := nth.Load(); got != int64(fastRefetch.tries) {
						t.Errorf("keep %v: %d fetches, want %d", keep, got, fastRefetch.tries)
					}
					continue
				}
				if err != nil || !bytes.Equal(p, data[off:off+n]) {
					t.Fatalf("keep %v: bytes damaged once: %v, or other bytes", keep, err)
				}
				if got := nth.Load(); got != int64(tc.fetches) {
					t.Errorf("keep %v: %d fetches, want %d", keep, got, tc.fetches)
				}
			}
			if got := b.ContainsRange("f", o.Version, off, n); got != (tc.fetches > 0) {
				t.Errorf("range cached: %v, want %v", got, tc.fetches > 0)
			}
		})
	}
}

// TestReadAtSameBadBytesAreTheSources: a range whose bytes fail the check
// identically on two fetches is the source's own corruption: the check's
// error, after exactly two fetches, and nothing kept.
func TestReadAtSameBadBytesAreTheSources(t *testing.T) {
	data := testkit.RandomBytes(t, 64<<10)
	srv := testkit.StartFakeGCS(t, map[string][]byte{"f": data})
	proxy := testkit.NewFaultProxy(t, srv.URL(), func(int) testkit.Fault { return testkit.Pass() })
	c, b := slicedCache(t, t.TempDir(), srv, proxy, true, context.Background())
	c.refetch = fastRefetch
	o := object(t, b, "f")
	want := bytes.Clone(data[10:110])
	want[3] ^= 1 // what the format expected is not what the source holds
	_, err := b.ReadAt(t.Context(), o, make([]byte, 100), 10, ReadOptions{Keep: KeepRange,
		Check: func() io.WriteCloser { return &byteCheck{want: want} }})
	if !errors.Is(err, errBadBytes) || errors.Is(err, storage.ErrChecksum) {
		t.Fatalf("the same refused bytes twice: %v; want the check's error", err)
	}
	if got := len(rangedGets(proxy, "f")); got != 2 {
		t.Errorf("%d fetches, want 2", got)
	}
	if b.ContainsRange("f", o.Version, 10, 100) {
		t.Error("refused bytes were kept")
	}
	if _, err := os.Stat(c.path(b.rangeKey("f", o.Version, 10, 100))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused range's file: %v", err)
	}
}

// TestFillVerifiedMendsSlices: a download in slices that fails its CRC32C
// is mended slice by slice (each fetched again, and a third time where the
// copies differ), so it is kept even when the damage moves to another
// slice on every download, which fetching it all again, three times, never
// gets past: slice i is damaged on its (i+1)th fetch.
func TestFillVerifiedMendsSlices(t *testing.T) {
	big := testkit.RandomBytes(t, bigObject)
	srv := testkit.StartFakeGCS(t, map[string][]byte{"big": big})
	proxy := testkit.NewRequestFaultProxy(t, srv.URL(), func(r testkit.SeenRequest, nth int) testkit.Fault {
		if !r.ReadsObject("big") {
			return testkit.Pass()
		}
		var from int64
		if _, err := fmt.Sscanf(r.Range, "bytes=%d-", &from); err != nil {
			return testkit.Pass()
		}
		if int64(nth) == from/testSlicing.size {
			return testkit.FlipAt(100 + int64(nth))
		}
		return testkit.Pass()
	})
	c, b := slicedCache(t, t.TempDir(), srv, proxy, true, context.Background())
	c.refetch = fastRefetch
	f, err := b.OpenFile(t.Context(), "big")
	if err != nil {
		t.Fatalf("a download whose damage moves from slice to slice: %v; want it mended", err)
	}
	defer f.Close()
	if !bytes.Equal(readAll(t, f), big) {
		t.Fatal("the mended copy differs from the object")
	}
	if d, v := c.Stats.Damaged.Load(), c.Stats.Verified.Load(); d != 1 || v != 1 {
		t.Errorf("Damaged %d, Verified %d; want 1, 1 (one damaged download, mended)", d, v)
	}
	if proxy.Flipped() < 2 {
		t.Errorf("%d responses flipped, want at least 2", proxy.Flipped())
	}
}
