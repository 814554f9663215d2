package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/missing"
	"github.com/oxefs/oxefs/internal/testkit"
)

// fakeBatches serves deterministic bytes: batch n's file is a fixed header
// followed by frames whose byte i is (n*7 + i) mod 251. It stands in for the
// data pipeline so that these tests exercise only the FUSE adapter.
type fakeBatches struct {
	n, frames int64
	meta      bool
	// block, when set, makes Get of that batch wait for its context, then
	// report it on blocked.
	block   int64
	blocked chan error
	entered chan struct{}
	// fail makes Get of that batch fail with the error.
	fail   map[int64]error
	gets   atomic.Int64
	looks  atomic.Int64 // Gets whose ctx is Looking
	pinned atomic.Int64
}

const fakeHeader = "\x93NUMPY\x01\x00\x36\x00{'descr': '|u1', 'fortran_order': False, 'shape': (X,), }     \n"

func (f *fakeBatches) Len() int64     { return f.n }
func (f *fakeBatches) NPYSize() int64 { return int64(len(fakeHeader)) + f.frames }
func (f *fakeBatches) HasMeta() bool  { return f.meta }
func (f *fakeBatches) want(n int64) []byte {
	b := []byte(fakeHeader)
	for i := range f.frames {
		b = append(b, byte((n*7+i)%251))
	}
	return b
}

func (f *fakeBatches) Get(ctx context.Context, n int64) (Batch, error) {
	f.gets.Add(1)
	if Looking(ctx) {
		f.looks.Add(1)
	}
	if f.blocked != nil && n == f.block {
		close(f.entered)
		<-ctx.Done()
		f.blocked <- ctx.Err()
		return nil, ctx.Err()
	}
	if err := f.fail[n]; err != nil {
		return nil, err
	}
	all := f.want(n)
	f.pinned.Add(1)
	return &fakeBatch{header: all[:len(fakeHeader)], frames: all[len(fakeHeader):],
		meta: fmt.Appendf(nil, `[{"batch": %d}]`, n), pinned: &f.pinned}, nil
}

type fakeBatch struct {
	header, frames, meta []byte
	pinned               *atomic.Int64
	once                 sync.Once
}

func (b *fakeBatch) NPY() [][]byte { return [][]byte{b.header, b.frames} }
func (b *fakeBatch) Meta() []byte  { return b.meta }
func (b *fakeBatch) Release()      { b.once.Do(func() { b.pinned.Add(-1) }) }

func mountFake(t *testing.T, train, val *fakeBatches, mo ...MountOptions) (string, *Server) {
	t.Helper()
	testkit.RequireFUSE(t)
	dir := t.TempDir()
	opts := Options{
		Train: train,
		Info:  func() []byte { return []byte(`{"oxefs": "test"}`) },
		Stats: func() []byte { return fmt.Appendf(nil, `{"gets": %d}`, train.gets.Load()) },
		Log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if val != nil {
		opts.Val = val
	}
	srv, err := Mount(dir, opts, append(mo, MountOptions{})[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return dir, srv
}

// dirNames lists a directory's entry names, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestMountLayout(t *testing.T) {
	train := &fakeBatches{n: 3, frames: 5000, meta: true}
	val := &fakeBatches{n: 2, frames: 100}
	dir, _ := mountFake(t, train, val)

	names := func(d string) []string { return dirNames(t, d) }
	if got, want := names(dir), []string{"batches", "info.json", "stats.json", "val"}; !slices.Equal(got, want) {
		t.Errorf("root: %v, want %v", got, want)
	}
	if got, want := names(filepath.Join(dir, "batches")), []string{"000000.json", "000000.npy", "000001.json", "000001.npy", "000002.json", "000002.npy"}; !slices.Equal(got, want) {
		t.Errorf("batches: %v, want %v", got, want)
	}
	if got, want := names(filepath.Join(dir, "val", "batches")), []string{"000000.npy", "000001.npy"}; !slices.Equal(got, want) {
		t.Errorf("val/batches: %v, want %v", got, want)
	}
	if train.gets.Load() != 0 {
		t.Errorf("listing built %d batches", train.gets.Load())
	}
	for _, tc := range []struct {
		path string
		size int64
	}{
		{"batches/000001.npy", train.NPYSize()},
		{"batches/000002.json", 0}, // known only once built: read with direct I/O
		{"val/batches/000001.npy", val.NPYSize()},
	} {
		st, err := os.Stat(filepath.Join(dir, tc.path))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() != tc.size || st.Mode().Perm() != 0o444 {
			t.Errorf("%s: size %d mode %v, want %d r--r--r--", tc.path, st.Size(), st.Mode(), tc.size)
		}
	}
	for _, name := range []string{"000003.npy", "3.npy", "0000001.npy", "000001.txt", "000001", "abcdef.npy", "-00001.npy"} {
		if _, err := os.Stat(filepath.Join(dir, "batches", name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want ENOENT", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "val", "batches", "000000.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("val without meta: .json exists (%v)", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "info.json"))
	if err != nil || string(b) != `{"oxefs": "test"}` {
		t.Errorf("info.json: %q %v", b, err)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "batches", "000000.npy")); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(filepath.Join(dir, "stats.json"))
	if err != nil || !bytes.Contains(b, []byte(`"gets"`)) || bytes.Contains(b, []byte(`"gets": 0`)) {
		t.Errorf("stats.json is not live: %q %v", b, err)
	}
}

func TestMountReads(t *testing.T) {
	train := &fakeBatches{n: 4, frames: 3<<20 + 12345, meta: true}
	dir, _ := mountFake(t, train, nil)
	path := func(n int64) string { return filepath.Join(dir, "batches", batchName(n)+".npy") }

	got, err := os.ReadFile(path(2))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, train.want(2)) {
		t.Fatal("whole-file read differs")
	}
	// Reads at any offset and length, including across the header/frames
	// boundary and past the end.
	f, err := os.Open(path(1))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := train.want(1)
	for _, tc := range []struct{ off, n int64 }{
		{0, 10}, {60, 10}, {63, 2}, {64, 1}, {1000, 1 << 20}, {int64(len(want)) - 5, 100}, {int64(len(want)), 10}, {5, 3 << 20},
	} {
		buf := make([]byte, tc.n)
		n, err := f.ReadAt(buf, tc.off)
		if err != nil && err != io.EOF {
			t.Fatalf("ReadAt(%d, %d): %v", tc.off, tc.n, err)
		}
		end := min(tc.off+tc.n, int64(len(want)))
		if !bytes.Equal(buf[:n], want[min(tc.off, end):end]) {
			t.Errorf("ReadAt(%d, %d): %d bytes differ", tc.off, tc.n, n)
		}
	}
	// Concurrent readers of one file and of several.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for r := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(r % 3)
			got, err := os.ReadFile(path(n))
			if err != nil || !bytes.Equal(got, train.want(n)) {
				errs <- fmt.Errorf("reader %d: %v, equal=%v", r, err, bytes.Equal(got, train.want(n)))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Open files pin their batch until released; the kernel sends RELEASE
	// after close returns, so wait for it.
	f.Close()
	for deadline := time.Now().Add(10 * time.Second); train.pinned.Load() != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if p := train.pinned.Load(); p != 0 {
		t.Errorf("%d batches still pinned after every file was closed", p)
	}
}

func TestMountIsReadOnly(t *testing.T) {
	train := &fakeBatches{n: 1, frames: 10, meta: true}
	dir, _ := mountFake(t, train, nil)
	for _, tc := range []struct {
		name string
		op   func() error
	}{
		{"write", func() error {
			_, err := os.OpenFile(filepath.Join(dir, "batches", "000000.npy"), os.O_WRONLY, 0)
			return err
		}},
		{"create", func() error {
			_, err := os.Create(filepath.Join(dir, "batches", "000009.npy"))
			return err
		}},
		{"remove", func() error { return os.Remove(filepath.Join(dir, "batches", "000000.npy")) }},
		{"mkdir", func() error { return os.Mkdir(filepath.Join(dir, "x"), 0o755) }},
		{"stats", func() error {
			_, err := os.OpenFile(filepath.Join(dir, "stats.json"), os.O_RDWR, 0)
			return err
		}},
	} {
		if err := tc.op(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", tc.name, err)
		}
	}
}

func TestMountErrors(t *testing.T) {
	train := &fakeBatches{n: 3, frames: 10, fail: map[int64]error{
		1: errors.New("source unavailable"),
		2: fmt.Errorf("batch 2: %w", iofs.ErrNotExist),
	}}
	dir, _ := mountFake(t, train, nil)
	if _, err := os.ReadFile(filepath.Join(dir, "batches", "000001.npy")); !errors.Is(err, syscall.EIO) {
		t.Errorf("failing build: %v, want EIO", err)
	}
	// A listed batch never answers ENOENT: a file of the dataset that is
	// missing is a read error.
	if _, err := os.ReadFile(filepath.Join(dir, "batches", "000002.npy")); !errors.Is(err, syscall.EIO) {
		t.Errorf("build failing with a missing file: %v, want EIO", err)
	}
	// The daemon keeps serving.
	if got, err := os.ReadFile(filepath.Join(dir, "batches", "000000.npy")); err != nil || !bytes.Equal(got, train.want(0)) {
		t.Errorf("read after errors: %v", err)
	}
}

// TestReaderKilledMidRead kills a reader blocked in a read. With direct
// I/O the kernel interrupts the request and the wait is cancelled; through
// the page cache the kernel finishes the page fill on its own (the build
// goes on). Either way the mount goes on serving.
func TestReaderKilledMidRead(t *testing.T) {
	for _, direct := range []bool{true, false} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) {
			train := &fakeBatches{n: 3, frames: 10, block: 1, blocked: make(chan error, 1), entered: make(chan struct{})}
			dir, _ := mountFake(t, train, nil, MountOptions{DirectIO: direct})
			cmd := exec.Command("cat", filepath.Join(dir, "batches", "000001.npy"))
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-train.entered:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatal("the read never reached the batch source")
			}
			cmd.Process.Kill()
			cmd.Wait()
			if direct {
				select {
				case err := <-train.blocked:
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("blocked build ended with %v, want context.Canceled", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("killing the reader did not cancel its wait")
				}
			}
			if got, err := os.ReadFile(filepath.Join(dir, "batches", "000002.npy")); err != nil || !bytes.Equal(got, train.want(2)) {
				t.Fatalf("read after a killed reader: %v", err)
			}
		})
	}
}

func TestUnmountWithOpenFiles(t *testing.T) {
	testkit.RequireFUSE(t)
	train := &fakeBatches{n: 2, frames: 10}
	dir := t.TempDir()
	srv, err := Mount(dir, Options{Train: train, Info: func() []byte { return nil },
		Stats: func() []byte { return nil }, Log: slog.New(slog.DiscardHandler)}, MountOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "batches", "000000.npy"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	done := make(chan error, 1)
	go func() { done <- srv.Unmount() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("unmount hung on an open file")
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("mountpoint after unmount: %v entries, %v", len(ents), err)
	}
	// With fusectl mounted the detached connection is aborted at once and
	// the open file is cut off; without it, when the daemon exits.
	if ents, _ := os.ReadDir("/sys/fs/fuse/connections"); len(ents) > 0 {
		if _, err := f.Read(make([]byte, 10)); err == nil {
			t.Fatal("a file opened before the unmount still reads")
		}
	} else {
		t.Log("fusectl is not mounted: the open file is cut off when the process exits, not checked here")
	}
}

// TestStaleMountIsCleaned mounts in a child process, kills it with SIGKILL
// (a crashed daemon leaves a dead mount answering ENOTCONN), then mounts
// again at the same place.
func TestStaleMountIsCleaned(t *testing.T) {
	if dir := os.Getenv("OXEFS_TEST_STALE_CHILD"); dir != "" {
		staleChild(dir)
		return
	}
	testkit.RequireFUSE(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStaleMountIsCleaned$")
	cmd.Env = append(os.Environ(), "OXEFS_TEST_STALE_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 8)
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "mounted\n" {
		cmd.Process.Kill()
		t.Fatalf("child did not mount: %q %v", line, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(dir, &sfs); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("after killing the daemon: statfs = %v, want ENOTCONN (a stale mount)", err)
	}
	train := &fakeBatches{n: 1, frames: 10}
	srv, err := Mount(dir, Options{Train: train, Info: func() []byte { return nil },
		Stats: func() []byte { return nil }, Log: slog.New(slog.DiscardHandler)}, MountOptions{})
	if err != nil {
		t.Fatalf("mount over a stale mount: %v", err)
	}
	defer srv.Unmount()
	if got, err := os.ReadFile(filepath.Join(dir, "batches", "000000.npy")); err != nil || !bytes.Equal(got, train.want(0)) {
		t.Fatalf("read after remount: %v", err)
	}
}

func staleChild(dir string) {
	train := &fakeBatches{n: 1, frames: 10}
	_, err := Mount(dir, Options{Train: train, Info: func() []byte { return nil },
		Stats: func() []byte { return nil }, Log: slog.New(slog.DiscardHandler)}, MountOptions{})
	if err != nil {
		panic(err)
	}
	os.Stdout.WriteString("mounted\n")
	select {}
}

func TestBatchNames(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		name string
	}{{0, "000000"}, {42, "000042"}, {999999, "999999"}, {1000000, "1000000"}, {1234567890123, "1234567890123"}} {
		if got := batchName(tc.n); got != tc.name {
			t.Errorf("batchName(%d) = %s, want %s", tc.n, got, tc.name)
		}
		for _, ext := range []string{"npy", "json"} {
			n, e, ok := parseBatchName(tc.name + "." + ext)
			if !ok || n != tc.n || e != ext {
				t.Errorf("parseBatchName(%s.%s) = %d %s %v", tc.name, ext, n, e, ok)
			}
		}
	}
	for _, bad := range []string{"42.npy", "0000042.npy", "000042", "000042.npz", "00004x.npy", "+00042.npy", ".npy", "99999999999999999999.npy"} {
		if _, _, ok := parseBatchName(bad); ok {
			t.Errorf("parseBatchName(%q) accepted", bad)
		}
	}
	// A Parted view's names: the index, then everything from the first dot.
	for _, tc := range []struct {
		name   string
		n      int64
		suffix string
	}{{"000042.action.npy", 42, ".action.npy"}, {"1000000.observation.images.wrist_is_pad.npy", 1000000, ".observation.images.wrist_is_pad.npy"}, {"000000.json", 0, ".json"}} {
		if n, suffix, ok := splitBatchName(tc.name); !ok || n != tc.n || suffix != tc.suffix {
			t.Errorf("splitBatchName(%s) = %d %q %v, want %d %q", tc.name, n, suffix, ok, tc.n, tc.suffix)
		}
	}
	for _, bad := range []string{"42.action.npy", "0000042.action.npy", "000042", "000042.", "00004x.action.npy", ".action.npy"} {
		if _, _, ok := splitBatchName(bad); ok {
			t.Errorf("splitBatchName(%q) accepted", bad)
		}
	}
}

func TestWindow(t *testing.T) {
	parts := [][]byte{[]byte("header"), []byte("0123456789")}
	all := "header0123456789"
	for off := range int64(len(all) + 2) {
		for size := range int64(len(all) + 2) {
			r := window(parts, off, size)
			got, _ := r.Bytes(make([]byte, 0, 64))
			lo := min(off, int64(len(all)))
			want := all[lo:min(lo+size, int64(len(all)))]
			if string(got) != want || r.Size() != len(want) {
				t.Fatalf("window(%d, %d) = %q (size %d), want %q", off, size, got, r.Size(), want)
			}
		}
	}
}

// builtBatches serves one batch already built in memory for every index,
// as the daemon serves a built batch: the benchmark measures FUSE alone.
type builtBatches struct {
	header, frames []byte
	memfd          int // > 0: the whole file is also in this memfd, lent to passthrough
}

func (b builtBatches) Len() int64     { return 1 << 40 }
func (b builtBatches) NPYSize() int64 { return int64(len(b.header) + len(b.frames)) }
func (b builtBatches) HasMeta() bool  { return false }
func (b builtBatches) Get(context.Context, int64) (Batch, error) {
	fb := &fakeBatch{header: b.header, frames: b.frames, pinned: new(atomic.Int64)}
	if b.memfd > 0 {
		return &memfdBatch{fakeBatch: fb, fd: -1, lendFrom: b.memfd}, nil
	}
	return fb, nil
}

// BenchmarkRead reads a built 25 MB batch (B=64 pairs of 256×256 frames)
// through a real mount with 1 MiB reads: through the page cache (every
// iteration reads another batch index, so no read is served from a
// cache), with direct I/O, and by passthrough from a memfd (where the
// kernel allows it).
func BenchmarkRead(b *testing.B) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		missing.Skip(b, missing.FUSE, err)
	}
	batches := builtBatches{header: []byte(fakeHeader), frames: make([]byte, 64*2*256*256*3)}
	for i := range batches.frames {
		batches.frames[i] = byte(i % 251)
	}
	for _, mode := range []string{ServePageCache, ServeDirectIO, ServePassthrough} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			bs := batches
			if mode == ServePassthrough {
				bs.memfd = memfdOf(b, append(slices.Clone(bs.header), bs.frames...))
			}
			srv, err := Mount(dir, Options{Train: bs, Info: func() []byte { return nil },
				Stats: func() []byte { return nil }, Log: slog.New(slog.DiscardHandler)},
				MountOptions{DirectIO: mode == ServeDirectIO, Passthrough: mode == ServePassthrough})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Unmount()
			if srv.Serving() != mode {
				b.Skipf("SKIPPED: serving %s, not %s (%v)", srv.Serving(), mode, srv.Refused())
			}
			buf := make([]byte, 1<<20)
			b.SetBytes(batches.NPYSize())
			i := int64(0)
			for b.Loop() {
				f, err := os.Open(filepath.Join(dir, "batches", batchName(i)+".npy"))
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := f.Read(buf); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
				f.Close()
				i++
			}
		})
	}
}

func TestMountRanksLayout(t *testing.T) {
	testkit.RequireFUSE(t)
	// Two ranks whose batch files differ only in size: a file served from
	// the wrong rank's directory (say, an inode shared between them) shows.
	r3 := &fakeBatches{n: 2, frames: 1000, meta: true}
	r5 := &fakeBatches{n: 2, frames: 2000, meta: true}
	v5 := &fakeBatches{n: 1, frames: 300}
	doc := func(s string) func() []byte { return func() []byte { return []byte(s) } }
	dir := t.TempDir()
	srv, err := Mount(dir, Options{
		Info: doc(`{"ranks": [3, 5]}`), Stats: doc(`{}`),
		Ranks: []Rank{
			{Rank: 3, Train: r3, Info: doc(`{"rank": 3}`), Stats: doc(`{"s": 3}`)},
			{Rank: 5, Train: r5, Val: v5, Info: doc(`{"rank": 5}`), Stats: doc(`{"s": 5}`)},
		},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, MountOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Error(err)
		}
	})
	names := func(d string) []string { return dirNames(t, filepath.Join(dir, d)) }
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{".", []string{"info.json", "rank", "stats.json"}},
		{"rank", []string{"3", "5"}},
		{"rank/3", []string{"batches", "info.json", "stats.json"}},
		{"rank/5", []string{"batches", "info.json", "stats.json", "val"}},
		{"rank/5/batches", []string{"000000.json", "000000.npy", "000001.json", "000001.npy"}},
		{"rank/5/val/batches", []string{"000000.npy"}},
	} {
		if got := names(tc.dir); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.dir, got, tc.want)
		}
	}
	inos := map[uint64]string{}
	for _, tc := range []struct {
		path string
		want []byte
	}{
		{"rank/3/batches/000001.npy", r3.want(1)},
		{"rank/5/batches/000001.npy", r5.want(1)},
		{"rank/5/val/batches/000000.npy", v5.want(0)},
		{"rank/3/batches/000000.json", []byte(`[{"batch": 0}]`)},
		{"rank/5/info.json", []byte(`{"rank": 5}`)},
		{"rank/3/stats.json", []byte(`{"s": 3}`)},
		{"info.json", []byte(`{"ranks": [3, 5]}`)},
	} {
		got, err := os.ReadFile(filepath.Join(dir, tc.path))
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: %d bytes (%v), want %d bytes of its own rank", tc.path, len(got), err, len(tc.want))
		}
		st, err := os.Stat(filepath.Join(dir, tc.path))
		if err != nil {
			t.Fatal(err)
		}
		ino := st.Sys().(*syscall.Stat_t).Ino
		if other, dup := inos[ino]; dup {
			t.Errorf("%s and %s share inode %d", tc.path, other, ino)
		}
		inos[ino] = tc.path
	}
	if _, err := os.Stat(filepath.Join(dir, "batches")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("top-level batches/ with ranks: %v, want ENOENT", err)
	}
}
