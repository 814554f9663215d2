package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/diskcache"
	"github.com/oxefs/oxefs/storage/local"
)

// TestRecheck: bytes a format reports as failing its check (a *Suspect)
// are the store's to judge. Read again after the cached copy of the
// suspect extent is dropped: fresh bytes that pass are served; the same
// bytes twice are the source's, and the format's error stands; other
// failing bytes each time are a transient storage.ErrChecksum; a failure
// further into the object starts the count over. A source of local files
// is its own truth, and an error that is no Suspect is returned as it is.
func TestRecheck(t *testing.T) {
	errCRC := errors.New("header CRC mismatch")
	errSource := errors.New("the source failed")
	// suspect builds the Suspect of a failure at off with the bytes b.
	suspect := func(off int64, b string) error {
		return &Suspect{Object: Object{Name: "f", Size: 64}, Extent: Extent{Off: off, Len: 4}, Bytes: []byte(b), Err: errCRC}
	}
	for _, tc := range []struct {
		name    string
		local   bool
		results []error // what each read returns, in turn
		reads   int
		want    func(error) bool
	}{
		{name: "damage in transit, then good bytes", results: []error{suspect(8, "abcd"), nil},
			reads: 2, want: func(err error) bool { return err == nil }},
		{name: "the same bytes twice", results: []error{suspect(8, "abcd"), suspect(8, "abcd")},
			reads: 2, want: func(err error) bool { return err == errCRC }},
		{name: "other bytes each time", results: []error{suspect(8, "abcd"), suspect(8, "abce"), suspect(8, "abcf")},
			reads: 3, want: func(err error) bool {
				return errors.Is(err, storage.ErrChecksum) && storage.IsTransient(err) && !errors.Is(err, errCRC)
			}},
		{name: "progress starts the count over", results: []error{suspect(8, "abcd"), suspect(8, "abce"), suspect(16, "wxyz"), suspect(16, "wxyy"), nil},
			reads: 5, want: func(err error) bool { return err == nil }},
		{name: "an error of the source", results: []error{errSource},
			reads: 1, want: func(err error) bool { return err == errSource }},
		{name: "local files are their own truth", local: true, results: []error{suspect(8, "abcd"), nil},
			reads: 1, want: func(err error) bool { return err == errCRC }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 64), 0o644); err != nil {
				t.Fatal(err)
			}
			cache, err := diskcache.Open(t.TempDir(), 1<<20, slog.New(slog.DiscardHandler), 0)
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewStore(Options{IndexDir: t.TempDir(), Disk: cache})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			var src *Source
			if tc.local {
				src = s.Source(local.New(dir))
			} else {
				src = s.Source(remoteOnly{local.New(dir)})
			}
			ctx := context.Background()
			o := Object{Name: "f", Size: 64}
			// A range the suspect covers, kept by the disk cache.
			if _, err := src.ReadAt(ctx, o, make([]byte, 4), 8, ReadOptions{Keep: KeepRange, CallerChecks: true}); err != nil {
				t.Fatal(err)
			}
			reads := 0
			err = src.Recheck(ctx, func() error {
				reads++
				if reads > len(tc.results) {
					return fmt.Errorf("read %d: more reads than the test has results", reads)
				}
				return tc.results[reads-1]
			})
			if !tc.want(err) || reads != tc.reads {
				t.Fatalf("Recheck = %v after %d reads; want %d reads and another error", err, reads, tc.reads)
			}
			kept := !tc.local && src.cache.ContainsRange("f", "", 8, 4)
			if dropped := tc.reads > 1; !tc.local && kept == dropped {
				t.Errorf("the cached range of the suspect bytes is kept: %v, want %v", kept, !dropped)
			}
		})
	}
}
