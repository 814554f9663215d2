package fs

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oxefs/oxefs/internal/testkit"
)

// Limit: the fakes look up exactly what they list, unless wrapped in
// unlisted.
func (f *fakeBatches) Limit() int64 { return f.n }
func (b builtBatches) Limit() int64 { return b.Len() }
func (u unlisted) Limit() int64     { return u.limit }

// unlisted serves names past its listing, as the train view does.
type unlisted struct {
	*fakeBatches
	limit int64
}

// TestLookupPastListing: names below Limit are served though not listed;
// names at or past Limit do not exist.
func TestLookupPastListing(t *testing.T) {
	testkit.RequireFUSE(t)
	train := &fakeBatches{n: 2, frames: 10, meta: true}
	dir := t.TempDir()
	srv, err := Mount(dir, Options{Train: unlisted{train, 1000}, Info: func() []byte { return nil },
		Stats: func() []byte { return nil }, Log: slog.New(slog.DiscardHandler)}, MountOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Unmount()
	if ents, err := os.ReadDir(filepath.Join(dir, "batches")); err != nil || len(ents) != 4 {
		t.Fatalf("listing: %d entries, %v; want 4", len(ents), err)
	}
	for _, n := range []int64{2, 999} {
		got, err := os.ReadFile(filepath.Join(dir, "batches", batchName(n)+".npy"))
		if err != nil || !bytes.Equal(got, train.want(n)) {
			t.Fatalf("batch %d past the listing: %v", n, err)
		}
		if meta, err := os.ReadFile(filepath.Join(dir, "batches", batchName(n)+".json")); err != nil || string(meta) != fmt.Sprintf(`[{"batch": %d}]`, n) {
			t.Fatalf("batch %d .json: %q %v", n, meta, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "batches", "001000.npy")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("batch at Limit: %v, want ENOENT", err)
	}
}

// TestStatBuildsNothing: listing and stat of every .npy and .json file
// asks for no batch; a .json stats as 0 bytes and reads whole.
func TestStatBuildsNothing(t *testing.T) {
	train := &fakeBatches{n: 500, frames: 10, meta: true}
	dir, _ := mountFake(t, train, nil)
	ents, err := os.ReadDir(filepath.Join(dir, "batches"))
	if err != nil || len(ents) != 1000 {
		t.Fatalf("listing: %d entries, %v", len(ents), err)
	}
	for _, e := range ents {
		st, err := os.Lstat(filepath.Join(dir, "batches", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		want := train.NPYSize()
		if strings.HasSuffix(e.Name(), ".json") {
			want = 0
		}
		if st.Size() != want {
			t.Fatalf("%s: size %d, want %d", e.Name(), st.Size(), want)
		}
		// ls -l shows one link and the mount's time, not 0 links and 1970.
		if sys := st.Sys().(*syscall.Stat_t); sys.Nlink != 1 || st.ModTime().Year() < 2020 {
			t.Fatalf("%s: %d links, mtime %v", e.Name(), sys.Nlink, st.ModTime())
		}
	}
	if n := train.gets.Load(); n != 0 {
		t.Fatalf("listing and stat asked for %d batches, want 0", n)
	}
	f, err := os.Open(filepath.Join(dir, "batches", "000499.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, err := f.Read(buf)
	if err != nil || string(buf[:n]) != `[{"batch": 499}]` {
		t.Fatalf("read of a 0-size .json: %q %v", buf[:n], err)
	}
}

// TestMountpointChecks: a non-empty directory is refused unless NonEmpty; a
// live oxefs mount is refused, naming its daemon's pid from info.json.
func TestMountpointChecks(t *testing.T) {
	testkit.RequireFUSE(t)
	opts := func(info string) Options {
		return Options{Train: &fakeBatches{n: 1, frames: 10}, Info: func() []byte { return []byte(info) },
			Stats: func() []byte { return nil }, Log: slog.New(slog.DiscardHandler)}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mine.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Mount(dir, opts(`{}`), MountOptions{})
	if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "mine.txt") {
		t.Fatalf("mount over a non-empty directory: %v, want ErrNotEmpty naming mine.txt", err)
	}
	first, err := Mount(dir, opts(`{"pid": 4242}`), MountOptions{NonEmpty: true})
	if err != nil {
		t.Fatalf("NonEmpty: %v", err)
	}
	defer first.Unmount()
	for _, mo := range []MountOptions{{}, {NonEmpty: true}} {
		second, err := Mount(dir, opts(`{}`), mo)
		if err == nil {
			second.Unmount()
			t.Fatal("a second mount stacked on a live one")
		}
		if !strings.Contains(err.Error(), "already an oxefs mount, pid 4242") {
			t.Fatalf("second mount: %v", err)
		}
	}
	if got, err := os.ReadFile(filepath.Join(dir, "info.json")); err != nil || string(got) != `{"pid": 4242}` {
		t.Fatalf("the first mount after a refused second: %q %v", got, err)
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{`/a/b`: "/a/b", `/a\040b`: "/a b", `/t\011x\134y`: "/t\tx\\y", `/end\04`: `/end\04`} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}
