package offline_test

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage/diskcache"
	"github.com/oxefs/oxefs/storage/offline"
)

// TestDiskCacheOverOffline: under the disk cache, an offline backend
// serves what is cached and reports anything else as not cached, naming
// the object, never as missing.
func TestDiskCacheOverOffline(t *testing.T) {
	ctx := context.Background()
	src, put := testkit.LocalBackend(t)
	put(t, "a", []byte("cached"))
	put(t, "b", []byte("at the source only"))
	cache, err := diskcache.Open(t.TempDir(), 1<<20, testkit.TestLogger(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	f, err := cache.Wrap(src, "p", ctx).OpenFile(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()

	off := cache.Wrap(offline.New(src), "p", ctx)
	if off.Location() != src.Location() {
		t.Fatalf("location %q, want %q", off.Location(), src.Location())
	}
	f, err = off.OpenFile(ctx, "a")
	if err != nil {
		t.Fatalf("cached object offline: %v", err)
	}
	buf := make([]byte, f.Size())
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "cached" {
		t.Fatalf("cached object offline: %q, %v", buf, err)
	}
	f.Close()
	for _, op := range []struct {
		name string
		err  error
	}{
		{"open", func() error { _, err := off.OpenFile(ctx, "b"); return err }()},
		{"stat", func() error { _, err := off.Stat(ctx, "b"); return err }()},
	} {
		var nc *offline.NotCachedError
		if !errors.As(op.err, &nc) || nc.Name != "b" || nc.URI != src.Location() ||
			!errors.Is(op.err, offline.ErrNotCached) || errors.Is(op.err, fs.ErrNotExist) {
			t.Errorf("%s of an uncached object offline: %v; want a NotCachedError naming it, not fs.ErrNotExist", op.name, op.err)
		}
	}
}
