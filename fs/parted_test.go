package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/internal/missing"
	"github.com/oxefs/oxefs/internal/pythontest"
	"github.com/oxefs/oxefs/internal/testkit"
)

// partedArray is one array of a partedBatches batch: a .npy file of its
// own, a window of the batch's buffer.
type partedArray struct {
	name  string // the file is NNNNNN.<name>.npy
	descr string // |u1, |b1, <f4 or <i8
	shape []int
}

// partedBatches stands in for a step-sample view: each batch is one buffer
// holding several .npy files, each at a multiple of 64 bytes, and the view
// is Parted. Element i of array a in batch n is, by dtype:
//
//	|u1: (7n + 13a + i) mod 251    |b1: (n + i) mod 3 == 0
//	<f4: n + i/4                   <i8: 1000n + i
//
// Get hands the buffer out in three slices, so that windows cross them.
type partedBatches struct {
	n      int64
	meta   bool
	arrays []partedArray
	parts  []Part
	size   int64

	gets   atomic.Int64
	pinned atomic.Int64
}

// stepArrays is a step batch's arrays: b samples of one camera slot of
// h×w pixels at 2 steps, a chunk of 4 actions of 3 dims, and the index.
func stepArrays(b, h, w int) []partedArray {
	return []partedArray{
		{"observation.images.primary", "|u1", []int{b, 2, h, w, 3}},
		{"observation.images.primary_is_pad", "|b1", []int{b, 2}},
		{"action", "<f4", []int{b, 4, 3}},
		{"action_is_pad", "|b1", []int{b, 4}},
		{"dataset_index", "<i8", []int{b}},
	}
}

func newPartedBatches(n int64, meta bool, arrays []partedArray) *partedBatches {
	p := &partedBatches{n: n, meta: meta, arrays: arrays}
	for _, a := range arrays {
		size := int64(len(npyHeaderOf(a))) + a.bytes()
		p.parts = append(p.parts, Part{Suffix: "." + a.name + ".npy", Off: p.size, Size: size})
		p.size += (size + 63) / 64 * 64
	}
	return p
}

func (a partedArray) elems() int64 {
	e := int64(1)
	for _, d := range a.shape {
		e *= int64(d)
	}
	return e
}

func (a partedArray) bytes() int64 {
	switch a.descr {
	case "<f4":
		return 4 * a.elems()
	case "<i8":
		return 8 * a.elems()
	}
	return a.elems()
}

// npyHeaderOf is a NumPy 1.0 header for a, padded to a multiple of 64.
func npyHeaderOf(a partedArray) []byte {
	dims := make([]string, len(a.shape))
	for i, d := range a.shape {
		dims[i] = fmt.Sprint(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(dims) == 1 {
		tuple += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", a.descr, tuple)
	total := (10 + len(dict) + 1 + 63) / 64 * 64
	h := append([]byte("\x93NUMPY\x01\x00"), byte(total-10), byte((total-10)>>8))
	h = append(h, dict...)
	h = append(h, bytes.Repeat([]byte(" "), total-len(h)-1)...)
	return append(h, '\n')
}

// file is array k's .npy file in batch n.
func (p *partedBatches) file(n int64, k int) []byte {
	a := p.arrays[k]
	out := npyHeaderOf(a)
	for i := range a.elems() {
		switch a.descr {
		case "|u1":
			out = append(out, byte((7*n+13*int64(k)+i)%251))
		case "|b1":
			v := byte(0)
			if (n+i)%3 == 0 {
				v = 1
			}
			out = append(out, v)
		case "<f4":
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(n)+float32(i)/4))
		case "<i8":
			out = binary.LittleEndian.AppendUint64(out, uint64(1000*n+i))
		}
	}
	return out
}

// want is batch n's whole buffer.
func (p *partedBatches) want(n int64) []byte {
	buf := make([]byte, p.size)
	for k, pt := range p.parts {
		copy(buf[pt.Off:], p.file(n, k))
	}
	return buf
}

func (p *partedBatches) Len() int64     { return p.n }
func (p *partedBatches) Limit() int64   { return p.n }
func (p *partedBatches) NPYSize() int64 { return p.size }
func (p *partedBatches) HasMeta() bool  { return p.meta }
func (p *partedBatches) Parts() []Part  { return p.parts }

func (p *partedBatches) Get(ctx context.Context, n int64) (Batch, error) {
	p.gets.Add(1)
	p.pinned.Add(1)
	buf := p.want(n)
	a, b := p.size/3, 2*p.size/3+1
	return &slicedBatch{npy: [][]byte{buf[:a], buf[a:b], buf[b:]}, meta: fmt.Appendf(nil, `{"dataset_name": ["d%d"]}`, n), pinned: &p.pinned}, nil
}

type slicedBatch struct {
	npy    [][]byte
	meta   []byte
	pinned *atomic.Int64
	once   sync.Once
}

func (b *slicedBatch) NPY() [][]byte { return b.npy }
func (b *slicedBatch) Meta() []byte  { return b.meta }
func (b *slicedBatch) Release()      { b.once.Do(func() { b.pinned.Add(-1) }) }

func mountParted(t *testing.T, opts Options, mo MountOptions) (string, *Server) {
	t.Helper()
	testkit.RequireFUSE(t)
	dir := t.TempDir()
	if opts.Info == nil {
		opts.Info = func() []byte { return []byte(`{}`) }
		opts.Stats = func() []byte { return []byte(`{}`) }
	}
	opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := Mount(dir, opts, mo)
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

// TestPartedLayout: a Parted view lists, per batch, its parts in order
// and then its .json (none without metadata); each part stats as its
// Part's size and the .json as 0, all without building anything; names
// that are not a part of a batch below the limit are ENOENT, the plain
// .npy included; every file has its own inode number, partIno's, the same
// at each lookup and listing.
func TestPartedLayout(t *testing.T) {
	train := newPartedBatches(3, true, stepArrays(2, 3, 5))
	val := newPartedBatches(2, false, stepArrays(1, 4, 4))
	dir, _ := mountParted(t, Options{Train: train, Val: val}, MountOptions{})
	names := func(n int64, p *partedBatches) []string {
		var out []string
		for _, pt := range p.parts {
			out = append(out, batchName(n)+pt.Suffix)
		}
		if p.meta {
			out = append(out, batchName(n)+".json")
		}
		return out
	}
	for _, tc := range []struct {
		dir  string
		p    *partedBatches
		view uint64
	}{{"batches", train, 0}, {"val/batches", val, 1}} {
		var want []string
		for n := range tc.p.n {
			want = append(want, names(n, tc.p)...)
		}
		got, inos := getdents(t, filepath.Join(dir, tc.dir))
		if !slices.Equal(got, want) {
			t.Fatalf("%s lists %v, want %v", tc.dir, got, want)
		}
		seen := map[uint64]string{}
		for i, name := range got {
			n, meta, part := int64(i)/int64(len(names(0, tc.p))), strings.HasSuffix(name, ".json"), i%len(names(0, tc.p))
			if meta {
				part = -1
			}
			if inos[i] != partIno(tc.view, n, meta, part) || inos[i] < 1<<62 || inos[i] >= 1<<63 {
				t.Errorf("%s/%s: listed with inode %d, want %d", tc.dir, name, inos[i], partIno(tc.view, n, meta, part))
			}
			if other, dup := seen[inos[i]]; dup {
				t.Errorf("%s and %s share inode %d", name, other, inos[i])
			}
			seen[inos[i]] = name
			size := int64(0)
			if !meta {
				size = tc.p.parts[part].Size
			}
			for range 2 {
				st, err := os.Stat(filepath.Join(dir, tc.dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if st.Size() != size || st.Mode().Perm() != 0o444 || st.Sys().(*syscall.Stat_t).Ino != inos[i] {
					t.Errorf("%s/%s: size %d mode %v inode %d, want %d r--r--r-- %d", tc.dir, name, st.Size(), st.Mode(), st.Sys().(*syscall.Stat_t).Ino, size, inos[i])
				}
			}
		}
	}
	if g := train.gets.Load() + val.gets.Load(); g != 0 {
		t.Errorf("listing and stat built %d batches", g)
	}
	for _, name := range []string{"000000.npy", "000000.action", "000000.", "000000.foo.npy", "000000.action.npy.npy",
		"000000.actionnpy", "000003.action.npy", "3.action.npy", "0000001.action.npy", "00000x.action.npy", "000000.Action.npy"} {
		if _, err := os.Stat(filepath.Join(dir, "batches", name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("batches/%s: %v, want ENOENT", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "val", "batches", "000000.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("val without metadata: .json exists (%v)", err)
	}
}

// TestPartedReads: each part reads as its window of the batch's buffer,
// whole and at any offset and length (across the slices NPY returns, and
// past the end), by concurrent readers of the same and of different
// batches; the .json reads whole; every batch is released once its files
// are closed.
func TestPartedReads(t *testing.T) {
	train := newPartedBatches(4, true, stepArrays(4, 192, 256)) // images of 1.2 MB: several reads each
	dir, _ := mountParted(t, Options{Train: train}, MountOptions{})
	path := func(n int64, k int) string { return filepath.Join(dir, "batches", batchName(n)+train.parts[k].Suffix) }
	for k := range train.parts {
		got, err := os.ReadFile(path(2, k))
		if err != nil || !bytes.Equal(got, train.file(2, k)) {
			t.Fatalf("part %s: %d bytes, %v, equal=%v", train.parts[k].Suffix, len(got), err, bytes.Equal(got, train.file(2, k)))
		}
	}
	if got, err := os.ReadFile(filepath.Join(dir, "batches", "000001.json")); err != nil || string(got) != `{"dataset_name": ["d1"]}` {
		t.Errorf(".json: %q %v", got, err)
	}
	for k := range train.parts {
		f, err := os.Open(path(1, k))
		if err != nil {
			t.Fatal(err)
		}
		want := train.file(1, k)
		size := int64(len(want))
		for _, tc := range []struct{ off, n int64 }{
			{0, 10}, {60, 10}, {63, 2}, {64, 1}, {size / 3, 1 << 20}, {size - 5, 100}, {size, 10}, {size + 100, 10}, {5, 3 << 20},
		} {
			buf := make([]byte, tc.n)
			n, err := f.ReadAt(buf, tc.off)
			if err != nil && err != io.EOF {
				t.Fatalf("%s ReadAt(%d, %d): %v", train.parts[k].Suffix, tc.off, tc.n, err)
			}
			lo := min(tc.off, size)
			if !bytes.Equal(buf[:n], want[lo:min(tc.off+tc.n, size)]) {
				t.Errorf("%s ReadAt(%d, %d): %d bytes differ", train.parts[k].Suffix, tc.off, tc.n, n)
			}
		}
		f.Close()
	}
	var wg sync.WaitGroup
	errs := make(chan error, 24)
	for r := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, k := int64(r%4), r%len(train.parts)
			got, err := os.ReadFile(path(n, k))
			if err != nil || !bytes.Equal(got, train.file(n, k)) {
				errs <- fmt.Errorf("reader %d of %s: %v, equal=%v", r, path(n, k), err, bytes.Equal(got, train.file(n, k)))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	testkit.WaitFor(t, 10*time.Second, time.Millisecond, "every batch released", func() bool { return train.pinned.Load() == 0 })
}

// TestPartedNumpy: numpy loads every part of a Parted view, with and
// without mmap_mode, as the arrays the fake holds; over direct I/O, without
// mmap_mode.
func TestPartedNumpy(t *testing.T) {
	py := pythontest.Find(t, "numpy")
	train := newPartedBatches(3, true, stepArrays(3, 64, 80))
	script := `
import sys, numpy as np
d, mmap_modes = sys.argv[1], sys.argv[2].split(",")
arrays = [("observation.images.primary", np.uint8, (3, 2, 64, 80, 3)),
          ("observation.images.primary_is_pad", np.bool_, (3, 2)),
          ("action", np.float32, (3, 4, 3)),
          ("action_is_pad", np.bool_, (3, 4)),
          ("dataset_index", np.int64, (3,))]
for n in range(3):
    for a, (name, dtype, shape) in enumerate(arrays):
        i = np.arange(int(np.prod(shape)), dtype=np.int64)
        want = {np.uint8: lambda: ((7*n + 13*a + i) % 251).astype(np.uint8),
                np.bool_: lambda: (n + i) % 3 == 0,
                np.float32: lambda: (np.float32(n) + i.astype(np.float32) / 4).astype(np.float32),
                np.int64: lambda: 1000*n + i}[dtype]().reshape(shape)
        for mode in mmap_modes:
            got = np.load(f"{d}/{n:06d}.{name}.npy", mmap_mode=mode or None)
            assert got.dtype == dtype and got.shape == shape, (name, mode, got.dtype, got.shape)
            assert np.array_equal(got, want), (n, name, mode)
            assert mode == "" or isinstance(got, np.memmap), (name, mode, type(got))
print("ok")
`
	for _, tc := range []struct {
		name  string
		mo    MountOptions
		modes string
	}{{"page cache", MountOptions{}, ",r"}, {"direct I/O", MountOptions{DirectIO: true}, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := mountParted(t, Options{Train: train}, tc.mo)
			out, err := exec.Command(py, "-c", script, filepath.Join(dir, "batches"), tc.modes).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "ok" {
				t.Fatalf("numpy: %v\n%s", err, out)
			}
		})
	}
}

// TestPartedNodeBound: the files of a Parted view count against the node
// bound as batch files do: listing 20,000 entries twice and looking each
// up holds at most MaxNodes nodes once the invalidations caught up, and
// every name keeps its inode number.
func TestPartedNodeBound(t *testing.T) {
	const batches, maxNodes = 4000, 256
	train := newPartedBatches(batches, true, []partedArray{
		{"action", "<f4", []int{1, 2}}, {"action_is_pad", "|b1", []int{1}}, {"frame_index", "<i8", []int{1}}, {"image_mask", "|b1", []int{1, 1}},
	})
	dir, srv := mountParted(t, Options{Train: train, MaxNodes: maxNodes}, MountOptions{})
	bdir := filepath.Join(dir, "batches")
	per := len(train.parts) + 1
	for pass := range 2 {
		names, inos := getdents(t, bdir)
		if len(names) != batches*per {
			t.Fatalf("listing %d: %d entries, want %d", pass, len(names), batches*per)
		}
		for i := range names {
			n, k := int64(i/per), i%per
			meta, part := k == per-1, k
			if meta {
				part = -1
			}
			if inos[i] != partIno(0, n, meta, part) {
				t.Fatalf("listing %d: %s inode %d, want %d", pass, names[i], inos[i], partIno(0, n, meta, part))
			}
		}
		if held, _, _ := srv.Nodes(); held > maxNodes {
			t.Fatalf("listing %d: %d nodes held, bound %d", pass, held, maxNodes)
		}
	}
	names, inos := getdents(t, bdir)
	for i, name := range names {
		st, err := os.Lstat(filepath.Join(bdir, name))
		if err != nil {
			t.Fatal(err)
		}
		if ino := st.Sys().(*syscall.Stat_t).Ino; ino != inos[i] {
			t.Fatalf("%s: inode %d at lookup, %d listed", name, ino, inos[i])
		}
	}
	testkit.WaitFor(t, 30*time.Second, 10*time.Millisecond, "the nodes held to come back within the bound", func() bool {
		held, _, _ := srv.Nodes()
		return held <= maxNodes
	})
	if _, _, invalidated := srv.Nodes(); invalidated < int64(len(names)-2*maxNodes) {
		t.Fatalf("after a lookup of every entry: %d invalidated, want ≥ %d", invalidated, len(names)-2*maxNodes)
	}
	if train.gets.Load() != 0 {
		t.Fatalf("listing and lookups built %d batches", train.gets.Load())
	}
}

// partedMemfd is a Parted view whose batches lend a memfd of each part,
// as a scheduler with Config.Memfd and Config.Parts does, and also a memfd
// of their whole buffer, which must never serve a part (the kernel would
// serve it from the buffer's start).
type partedMemfd struct {
	*partedBatches
	t *testing.T
}

func (p partedMemfd) Get(ctx context.Context, n int64) (Batch, error) {
	b, err := p.partedBatches.Get(ctx, n)
	if err != nil {
		return nil, err
	}
	m := &memfdSliced{slicedBatch: b.(*slicedBatch), fd: memfdOf(p.t, p.want(n))}
	for k := range p.parts {
		m.parts = append(m.parts, memfdOf(p.t, p.file(n, k)))
	}
	return m, nil
}

type memfdSliced struct {
	*slicedBatch
	fd    int
	parts []int
}

func lendOf(fd int) (int, bool) {
	lent, err := syscall.Open(fmt.Sprintf("/proc/self/fd/%d", fd), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	return lent, err == nil
}

func (b *memfdSliced) BackingFd() (int, bool)          { return lendOf(b.fd) }
func (b *memfdSliced) PartBackingFd(i int) (int, bool) { return lendOf(b.parts[i]) }

// TestPartedPassthrough: on a passthrough mount, each part of a batch
// that lends its parts' memfds is served by the kernel from that part's
// memfd (never from a memfd of the whole buffer): whole reads, reads at an
// offset and a mapping that outlives the file's close all see the part's
// bytes, no byte passes through this process, and every part's open is
// counted; a Parted view whose batches lend nothing, on the same mount, is
// read through the daemon with its own bytes.
func TestPartedPassthrough(t *testing.T) {
	parted := partedMemfd{newPartedBatches(2, true, stepArrays(2, 8, 8)), t}
	val := newPartedBatches(2, false, stepArrays(2, 8, 8))
	var trainServed, valServed atomic.Int64
	dir, srv := mountParted(t, Options{Train: parted, Val: val, Recorder: func(n int64, isVal bool, bytes int, wait time.Duration) {
		if isVal {
			valServed.Add(int64(bytes))
		} else {
			trainServed.Add(int64(bytes))
		}
	}}, MountOptions{Passthrough: true})
	if srv.Serving() != ServePassthrough {
		// The kernel may refuse passthrough: a mount of a plain view says.
		if _, plain := mountParted(t, Options{Train: &fakeBatches{n: 1, frames: 10}}, MountOptions{Passthrough: true}); plain.Serving() == ServePassthrough {
			t.Fatalf("a mount of Parted views serves %s (%v) where this kernel allows passthrough", srv.Serving(), srv.Refused())
		}
		t.Skipf("SKIPPING: this kernel refuses FUSE passthrough (%v); the page-cache mode is what the other Parted tests cover", srv.Refused())
	}
	for n := range int64(2) {
		for k, pt := range parted.parts {
			path := filepath.Join(dir, "batches", batchName(n)+pt.Suffix)
			want := parted.file(n, k)
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s by passthrough: %v, %d bytes, equal=%v", path, err, len(got), bytes.Equal(got, want))
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, len(want))
			if k, err := f.ReadAt(buf, 13); k != len(want)-13 || !bytes.Equal(buf[:k], want[13:]) {
				t.Errorf("%s: ReadAt(13) %d bytes (%v), want the last %d", path, k, err, len(want)-13)
			}
			m, err := syscall.Mmap(int(f.Fd()), 0, len(want), syscall.PROT_READ, syscall.MAP_SHARED)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m, want) {
				t.Errorf("%s: a mapping does not hold the part", path)
			}
			syscall.Munmap(m)
		}
	}
	if trainServed.Load() != 0 {
		t.Errorf("the daemon served %d bytes of parts lent by passthrough", trainServed.Load())
	}
	// Each part of two batches, opened twice: go-fuse asks once per inode
	// while the kernel holds a backing file for it, and the kernel may
	// drop it between opens; each open is served by passthrough.
	if o, want := srv.PassthroughOpens(), int64(2*2*len(parted.parts)); o != want {
		t.Errorf("%d opens served by passthrough, want %d", o, want)
	}
	var parts int64
	for k, pt := range val.parts {
		got, err := os.ReadFile(filepath.Join(dir, "val", "batches", "000001"+pt.Suffix))
		if err != nil || !bytes.Equal(got, val.file(1, k)) {
			t.Errorf("val part %s: %v, equal=%v", pt.Suffix, err, bytes.Equal(got, val.file(1, k)))
		}
		parts += pt.Size
	}
	if valServed.Load() < parts {
		t.Errorf("the daemon served %d bytes of parts that lend nothing, want all %d", valServed.Load(), parts)
	}
}

// TestPartedRanks: with several ranks, each rank's Parted view lists and
// reads its own files, under inode numbers of its own.
func TestPartedRanks(t *testing.T) {
	r0 := newPartedBatches(2, true, stepArrays(1, 4, 4))
	r1 := newPartedBatches(2, true, stepArrays(2, 4, 4))
	v1 := newPartedBatches(1, false, stepArrays(3, 4, 4))
	doc := func(s string) func() []byte { return func() []byte { return []byte(s) } }
	dir, _ := mountParted(t, Options{Info: doc(`{}`), Stats: doc(`{}`), Ranks: []Rank{
		{Rank: 0, Train: r0, Info: doc(`{}`), Stats: doc(`{}`)},
		{Rank: 1, Train: r1, Val: v1, Info: doc(`{}`), Stats: doc(`{}`)},
	}}, MountOptions{})
	inos := map[uint64]string{}
	for _, tc := range []struct {
		path string
		p    *partedBatches
	}{{"rank/0/batches", r0}, {"rank/1/batches", r1}, {"rank/1/val/batches", v1}} {
		names, _ := getdents(t, filepath.Join(dir, tc.path))
		if want := int(tc.p.n) * (len(tc.p.parts) + map[bool]int{true: 1}[tc.p.meta]); len(names) != want {
			t.Errorf("%s: %d entries, want %d", tc.path, len(names), want)
		}
		for k := range tc.p.parts {
			p := filepath.Join(dir, tc.path, "000000"+tc.p.parts[k].Suffix)
			got, err := os.ReadFile(p)
			if err != nil || !bytes.Equal(got, tc.p.file(0, k)) {
				t.Errorf("%s: %v, equal=%v", p, err, bytes.Equal(got, tc.p.file(0, k)))
			}
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			ino := st.Sys().(*syscall.Stat_t).Ino
			if other, dup := inos[ino]; dup {
				t.Errorf("%s and %s share inode %d", p, other, ino)
			}
			inos[ino] = p
		}
	}
}

// TestCheckParts: Mount refuses the parts it could not serve, naming the
// part, before mounting anything.
func TestCheckParts(t *testing.T) {
	good := newPartedBatches(1, true, stepArrays(1, 2, 2))
	for _, tc := range []struct {
		name  string
		parts []Part
		want  string
	}{
		{"none", []Part{}, "no parts"},
		{"no dot", []Part{{Suffix: "action.npy", Size: 1}}, `"action.npy"`},
		{"dot only", []Part{{Suffix: ".", Size: 1}}, `"."`},
		{"slash", []Part{{Suffix: ".a/b.npy", Size: 1}}, `".a/b.npy"`},
		{"json", []Part{{Suffix: ".json", Size: 1}}, `".json"`},
		{"twice", []Part{{Suffix: ".a.npy", Size: 1}, {Suffix: ".a.npy", Off: 64, Size: 1}}, "twice"},
		{"past the end", []Part{{Suffix: ".a.npy", Off: good.size - 10, Size: 11}}, fmt.Sprintf("of a batch of %d bytes", good.size)},
		{"negative", []Part{{Suffix: ".a.npy", Off: -1, Size: 1}}, `".a.npy" is bytes [-1, 0)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := newPartedBatches(1, true, stepArrays(1, 2, 2))
			bad.parts = tc.parts
			dir := t.TempDir()
			_, err := Mount(dir, Options{Train: bad, Info: func() []byte { return nil }, Stats: func() []byte { return nil },
				Log: slog.New(slog.DiscardHandler)}, MountOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Mount: %v, want an error with %s", err, tc.want)
			}
			_, err = Mount(dir, Options{Info: func() []byte { return nil }, Stats: func() []byte { return nil },
				Ranks: []Rank{{Rank: 4, Train: good, Val: bad, Info: func() []byte { return nil }, Stats: func() []byte { return nil }}},
				Log:   slog.New(slog.DiscardHandler)}, MountOptions{})
			if err == nil || !strings.Contains(err.Error(), "rank 4: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Mount of a rank's val view: %v, want an error of rank 4 with %s", err, tc.want)
			}
		})
	}
}

// TestInodeNumbers: pair-mode numbers are what they always were, and a
// Parted view's numbers sit in a range of their own, distinct for every
// (view, batch, file), or 0 (automatic) out of range.
func TestInodeNumbers(t *testing.T) {
	for _, tc := range []struct {
		view uint64
		n    int64
		meta bool
		want uint64
	}{
		{0, 0, false, 1 << 61}, {0, 0, true, 1<<61 | 1}, {1, 5, false, 1<<61 | 1<<49 | 10}, {3, 1<<48 - 1, true, 1<<61 | 3<<49 | (1<<48-1)<<1 | 1}, {0, 1 << 48, false, 0},
	} {
		if got := batchIno(tc.view, tc.n, tc.meta); got != tc.want {
			t.Errorf("batchIno(%d, %d, %v) = %#x, want %#x", tc.view, tc.n, tc.meta, got, tc.want)
		}
	}
	seen := map[uint64]string{}
	for _, view := range []uint64{0, 1, 2, 1<<12 - 1} {
		for _, n := range []int64{0, 1, 2, 255, 256, 1<<42 - 1} {
			for part := -1; part < 255; part++ {
				ino := partIno(view, n, part < 0, part)
				key := fmt.Sprintf("view %d batch %d part %d", view, n, part)
				if ino < 1<<62 || ino >= 1<<63 {
					t.Fatalf("%s: %#x outside [2^62, 2^63)", key, ino)
				}
				if other, dup := seen[ino]; dup {
					t.Fatalf("%s and %s share %#x", key, other, ino)
				}
				seen[ino] = key
			}
		}
	}
	for _, tc := range []struct {
		view uint64
		n    int64
		part int
	}{{0, 0, 255}, {0, 1 << 42, 0}, {1 << 12, 0, 0}, {0, -1, 0}} {
		if got := partIno(tc.view, tc.n, false, tc.part); got != 0 {
			t.Errorf("partIno(%d, %d, %d) = %#x, want 0 (automatic)", tc.view, tc.n, tc.part, got)
		}
	}
}

// builtParted serves one built step batch for every index: the benchmark
// measures FUSE alone.
type builtParted struct {
	*partedBatches
	buf []byte
}

func (b builtParted) Len() int64   { return 1 << 40 }
func (b builtParted) Limit() int64 { return b.Len() }
func (b builtParted) Get(context.Context, int64) (Batch, error) {
	return &slicedBatch{npy: [][]byte{b.buf}, pinned: new(atomic.Int64)}, nil
}

// BenchmarkReadParted reads every file of a built step batch (B=64: two
// steps of a 256² and a 128² camera, a chunk of 50 actions of 32 dims,
// 31.5 MB in 10 files) through a real mount with 1 MiB reads, through the
// page cache (another batch index each iteration) and with direct I/O:
// beside BenchmarkRead, the cost of a batch in several files.
func BenchmarkReadParted(b *testing.B) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		missing.Skip(b, missing.FUSE, err)
	}
	p := newPartedBatches(1, false, []partedArray{
		{"observation.images.primary", "|u1", []int{64, 2, 256, 256, 3}},
		{"observation.images.wrist", "|u1", []int{64, 2, 128, 128, 3}},
		{"observation.images.primary_is_pad", "|b1", []int{64, 2}},
		{"observation.images.wrist_is_pad", "|b1", []int{64, 2}},
		{"image_mask", "|b1", []int{64, 2}},
		{"action", "<f4", []int{64, 50, 32}},
		{"action_is_pad", "|b1", []int{64, 50}},
		{"action_mask", "|b1", []int{64, 32}},
		{"dataset_index", "<i8", []int{64}},
		{"frame_index", "<i8", []int{64}},
	})
	view := builtParted{p, p.want(0)}
	for _, mode := range []string{ServePageCache, ServeDirectIO} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			srv, err := Mount(dir, Options{Train: view, Info: func() []byte { return nil },
				Stats: func() []byte { return nil }, Log: slog.New(slog.DiscardHandler)},
				MountOptions{DirectIO: mode == ServeDirectIO})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Unmount()
			buf := make([]byte, 1<<20)
			b.SetBytes(p.size)
			i := int64(0)
			for b.Loop() {
				for _, pt := range p.parts {
					f, err := os.Open(filepath.Join(dir, "batches", batchName(i)+pt.Suffix))
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
				}
				i++
			}
		})
	}
}
