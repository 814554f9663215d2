package diskcache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage"
)

// flipNth starts fake GCS with data as "f" behind a proxy that flips, in
// the k-th read of "f" (from 0) that flip picks, byte k of the response
// (a different byte each time, so that no two damaged copies agree).
func flipNth(t *testing.T, data []byte, flip func(k int) bool) (*Cache, *Backend, *atomic.Int64) {
	t.Helper()
	var reads atomic.Int64
	srv := testkit.StartFakeGCS(t, map[string][]byte{"f": data})
	proxy := testkit.NewRequestFaultProxy(t, srv.URL(), func(r testkit.SeenRequest, _ int) testkit.Fault {
		if !r.ReadsObject("f") {
			return testkit.Pass()
		}
		k := reads.Add(1) - 1
		if flip(int(k)) {
			return testkit.FlipAt(k)
		}
		return testkit.Pass()
	})
	c, b := slicedCache(t, t.TempDir(), srv, proxy, true, context.Background())
	c.refetch = fastRefetch
	return c, b, &reads
}

// TestReadAtComparesUncheckedCopies: a range with no Check, from GCS
// through a proxy that flips a byte in transit, is fetched twice at once
// and served and kept only as a copy another copy agrees with: damaged
// once, a third fetch settles it and the right bytes are served and kept;
// damaged on every fetch (no two alike), the read is a transient
// storage.ErrChecksum after refetchPolicy.tries+1 fetches, nothing is
// kept, and a later clean read fetches it afresh. Range, block and
// KeepNone reads alike.
func TestReadAtComparesUncheckedCopies(t *testing.T) {
	data := testkit.RandomBytes(t, 3*BlockSize/2)
	const off, n = 1000, 5000
	for _, keep := range []Keep{KeepRange, KeepBlocks, KeepNone} {
		t.Run(keepNames[keep]+"/damaged once", func(t *testing.T) {
			c, b, reads := flipNth(t, data, func(k int) bool { return k == 0 })
			o := object(t, b, "f")
			p := make([]byte, n)
			if _, err := b.ReadAt(t.Context(), o, p, off, ReadOptions{Keep: keep}); err != nil {
				t.Fatalf("a range damaged once: %v; want it fetched again", err)
			}
			if !bytes.Equal(p, data[off:off+n]) {
				t.Fatal("a range damaged once was served damaged")
			}
			if got := reads.Load(); got != 3 {
				t.Errorf("%d fetches, want 3 (two at once, then one that agrees with one of them)", got)
			}
			if d, cmp := c.Stats.Damaged.Load(), c.Stats.Compared.Load(); d != 1 || cmp != 1 {
				t.Errorf("Damaged %d, Compared %d; want 1, 1", d, cmp)
			}
			if keep == KeepNone {
				if b.ContainsRange("f", o.Version, off, n) {
					t.Error("KeepNone kept the range")
				}
				return
			}
			// The kept bytes are the right ones, and read from disk.
			before := reads.Load()
			q := make([]byte, n)
			if _, err := b.ReadAt(t.Context(), o, q, off, ReadOptions{Keep: keep}); err != nil || !bytes.Equal(q, data[off:off+n]) {
				t.Fatalf("read again: %v, or other bytes: damaged bytes were kept", err)
			}
			if keep == KeepBlocks {
				r := make([]byte, 100)
				if _, err := b.ReadAt(t.Context(), o, r, BlockSize-100, ReadOptions{Keep: keep}); err != nil || !bytes.Equal(r, data[BlockSize-100:BlockSize]) {
					t.Fatalf("another range of the kept block: %v, or other bytes", err)
				}
			}
			if got := reads.Load(); got != before {
				t.Errorf("read again: %d more fetches, want none", got-before)
			}
		})
		t.Run(keepNames[keep]+"/damaged every time", func(t *testing.T) {
			var clean atomic.Bool
			c, b, reads := flipNth(t, data, func(int) bool { return !clean.Load() })
			o := object(t, b, "f")
			p := make([]byte, n)
			_, err := b.ReadAt(t.Context(), o, p, off, ReadOptions{Keep: keep})
			if err == nil || !errors.Is(err, storage.ErrChecksum) || !storage.IsTransient(err) {
				t.Fatalf("a range damaged differently on every fetch: %v; want a transient storage.ErrChecksum", err)
			}
			if got := reads.Load(); got != int64(fastRefetch.tries+1) {
				t.Errorf("%d fetches, want %d", got, fastRefetch.tries+1)
			}
			if d, r := c.Stats.Damaged.Load(), c.Stats.Rejected.Load(); d != int64(fastRefetch.tries) || r != 1 {
				t.Errorf("Damaged %d, Rejected %d; want %d, 1", d, r, fastRefetch.tries)
			}
			if b.ContainsRange("f", o.Version, off, n) || b.ContainsRange("f", o.Version, 0, BlockSize) {
				t.Fatal("a range no two copies of which agreed was kept")
			}
			if tmp := tempFiles(t, c); len(tmp) != 0 {
				t.Errorf("temp files left: %q", tmp)
			}
			clean.Store(true)
			before := reads.Load()
			if _, err := b.ReadAt(t.Context(), o, p, off, ReadOptions{Keep: keep}); err != nil || !bytes.Equal(p, data[off:off+n]) {
				t.Fatalf("a clean read after: %v, or other bytes", err)
			}
			if got := reads.Load() - before; got != 2 {
				t.Errorf("a clean read after: %d fetches, want 2 (fresh, not from the cache)", got)
			}
		})
	}
}

// TestReadAtCopiesByPolicy: a range with no Check is fetched twice from a
// remote source (VerifyTwice, the default), once with VerifyOff (as it
// came: a flip is kept), once from local files whatever the policy, and
// once when its caller checks it (CallerChecks) or it has a Check.
func TestReadAtCopiesByPolicy(t *testing.T) {
	data := testkit.RandomBytes(t, 64<<10)
	for _, tc := range []struct {
		name   string
		local  bool
		verify VerifyRanges
		opts   ReadOptions
		want   int64
	}{
		{"remote, twice", false, VerifyTwice, ReadOptions{Keep: KeepRange}, 2},
		{"remote, off", false, VerifyOff, ReadOptions{Keep: KeepRange}, 1},
		{"remote, twice, caller checks", false, VerifyTwice, ReadOptions{Keep: KeepNone, CallerChecks: true}, 1},
		{"remote, twice, with a Check", false, VerifyTwice, ReadOptions{Keep: KeepRange, Check: summing}, 1},
		{"local files, twice", true, VerifyTwice, ReadOptions{Keep: KeepRange}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Open(t.TempDir(), 64<<20, testLog(t), 0)
			if err != nil {
				t.Fatal(err)
			}
			c.SetVerifyRanges(tc.verify)
			src := newVersioned()
			src.put("f", data)
			var inner storage.Backend = src
			if tc.local {
				inner = localVersioned{src}
			}
			b := c.Wrap(inner, "src", context.Background())
			o := object(t, b, "f")
			p := make([]byte, 300)
			if _, err := b.ReadAt(t.Context(), o, p, 77, tc.opts); err != nil || !bytes.Equal(p, data[77:377]) {
				t.Fatalf("%v, or other bytes", err)
			}
			if got := src.reads.Load(); got != tc.want {
				t.Errorf("%d requests, want %d", got, tc.want)
			}
		})
	}
	t.Run("remote, off, damaged", func(t *testing.T) {
		c, b, reads := flipNth(t, data, func(k int) bool { return k == 0 })
		c.SetVerifyRanges(VerifyOff)
		o := object(t, b, "f")
		p := make([]byte, 300)
		if _, err := b.ReadAt(t.Context(), o, p, 77, ReadOptions{Keep: KeepRange}); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(p, data[77:377]) || reads.Load() != 1 {
			t.Errorf("VerifyOff: %d fetches, damaged bytes served: %v; want 1, true (as it came)", reads.Load(), !bytes.Equal(p, data[77:377]))
		}
	})
}

var keepNames = map[Keep]string{KeepRange: "range", KeepBlocks: "blocks", KeepNone: "none"}

// localVersioned is a versioned source whose objects claim to be local
// files (storage.Filer): its own truth.
type localVersioned struct{ *versioned }

func (l localVersioned) OpenFile(context.Context, string) (storage.File, error) {
	return nil, errors.New("not used")
}

func TestParseVerifyRanges(t *testing.T) {
	for _, v := range []VerifyRanges{VerifyTwice, VerifyOff} {
		got, err := ParseVerifyRanges(v.String())
		if err != nil || got != v {
			t.Errorf("ParseVerifyRanges(%q) = %v, %v", v.String(), got, err)
		}
	}
	_, err := ParseVerifyRanges("thrice")
	if err == nil || !strings.Contains(err.Error(), `"thrice"`) || !strings.Contains(err.Error(), "twice") || !strings.Contains(err.Error(), "off") {
		t.Errorf("ParseVerifyRanges(thrice): %v; want an error naming the value and the choices", err)
	}
}

// TestReadAtFillingCountsAsOneCopy: a range with no Check whose bytes a
// download in slices under way has written (not checked yet) takes them
// as one copy and fetches one more: when they agree, one request and the
// bytes are kept; when the download's bytes were damaged, a third copy
// settles it and the right bytes are kept.
func TestReadAtFillingCountsAsOneCopy(t *testing.T) {
	data := testkit.RandomBytes(t, bigObject)
	size := testSlicing.size
	const off, n = 1000, 5000
	for _, damaged := range []bool{false, true} {
		t.Run(map[bool]string{false: "download right", true: "download damaged"}[damaged], func(t *testing.T) {
			srv := testkit.StartFakeGCS(t, map[string][]byte{"f": data})
			first := fmt.Sprintf("bytes=0-%d", size-1)
			proxy := testkit.NewRequestFaultProxy(t, srv.URL(), func(r testkit.SeenRequest, _ int) testkit.Fault {
				switch {
				case !r.ReadsObject("f") || r.Range == "":
					return testkit.Pass()
				case r.Range == first && damaged:
					return testkit.FlipAt(off + 10) // in the range read below
				case r.Range == first:
					return testkit.Pass()
				case strings.HasPrefix(r.Range, fmt.Sprintf("bytes=%d-", off)):
					return testkit.Pass() // the range's own copies
				}
				return testkit.HangAtOnce() // the rest of the download
			})
			c, b := slicedCache(t, t.TempDir(), srv, proxy, true, context.Background())
			c.refetch = fastRefetch
			o := object(t, b, "f")
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				if f, err := b.OpenFileBackground(ctx, "f"); err == nil {
					f.Close()
				}
			}()
			defer func() { cancel(); <-done }()
			for !b.Filled("f", off, n) {
				select {
				case <-b.FillProgress():
				case <-done:
					t.Fatal("the download ended before it wrote the range")
				}
			}
			p := make([]byte, n)
			if _, err := b.ReadAt(t.Context(), o, p, off, ReadOptions{Keep: KeepRange}); err != nil || !bytes.Equal(p, data[off:off+n]) {
				t.Fatalf("%v, or other bytes", err)
			}
			own := 0
			for _, r := range rangedGets(proxy, "f") {
				if strings.HasPrefix(r, fmt.Sprintf("bytes=%d-", off)) {
					own++
				}
			}
			want := 1
			if damaged {
				want = 2
			}
			if own != want || c.Stats.RangesFromFill.Load() != 1 {
				t.Errorf("%d requests of the range's own and %d copies from the download; want %d and 1", own, c.Stats.RangesFromFill.Load(), want)
			}
			if !b.ContainsRange("f", o.Version, off, n) {
				t.Fatal("the agreed range was not kept")
			}
			q := make([]byte, n)
			if _, err := b.ReadAt(t.Context(), o, q, off, ReadOptions{Keep: KeepRange}); err != nil || !bytes.Equal(q, data[off:off+n]) {
				t.Fatalf("read again: %v, or other bytes: the download's damaged bytes were kept", err)
			}
		})
	}
}
