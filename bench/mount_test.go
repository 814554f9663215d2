package bench

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/batch"
	"github.com/oxefs/oxefs/fs"
	"github.com/oxefs/oxefs/internal/testkit"
)

// stepView is a step-sample view as the mount serves it: batch n is one
// buffer of several files (here not real .npy files: bench only counts
// bytes), each at a multiple of 64 bytes; its .json names each sample's
// dataset.
type stepView struct {
	n, batchSize int64
	files        []string
	sizes        []int64
	parts        []fs.Part
	size         int64
}

func newStepView(n, batchSize int64, files []string, sizes []int64) *stepView {
	v := &stepView{n: n, batchSize: batchSize, files: files, sizes: sizes}
	for i, f := range files {
		v.parts = append(v.parts, fs.Part{Suffix: "." + f, Off: v.size, Size: sizes[i]})
		v.size += (sizes[i] + 63) / 64 * 64
	}
	return v
}

func (v *stepView) Len() int64       { return v.n }
func (v *stepView) Limit() int64     { return v.n }
func (v *stepView) NPYSize() int64   { return v.size }
func (v *stepView) HasMeta() bool    { return true }
func (v *stepView) Parts() []fs.Part { return v.parts }
func (v *stepView) buffer(n int64) []byte {
	b := make([]byte, v.size)
	for i := range b {
		b[i] = byte(int64(i)*5 + n)
	}
	return b
}

// read is what a reader of every file of batch n reads, in order.
func (v *stepView) read(n int64) []byte {
	b := v.buffer(n)
	var out []byte
	for _, p := range v.parts {
		out = append(out, b[p.Off:p.Off+p.Size]...)
	}
	return out
}

// meta: the first sample from dataset a, the others from b.
func (v *stepView) meta(n int64) []byte {
	names := []string{`"a"`}
	for range v.batchSize - 1 {
		names = append(names, `"b"`)
	}
	return []byte(`{"dataset_name": [` + strings.Join(names, ", ") + `]}`)
}

func (v *stepView) Get(ctx context.Context, n int64) (fs.Batch, error) {
	return builtBatch{npy: v.buffer(n), meta: v.meta(n)}, nil
}

type builtBatch struct{ npy, meta []byte }

func (b builtBatch) NPY() [][]byte { return [][]byte{b.npy} }
func (b builtBatch) Meta() []byte  { return b.meta }
func (b builtBatch) Release()      {}

// TestMountStepSamples: on a step-sample mount (info.json's files are the
// arrays' files), a read of a batch reads every array's file whole, in
// order, and its .json; the summary counts all those bytes, batch_size
// samples a batch, and the datasets' shares from the .json.
func TestMountStepSamples(t *testing.T) {
	testkit.RequireFUSE(t)
	files := []string{"observation.images.primary.npy", "observation.images.primary_is_pad.npy", "action.npy", "action_is_pad.npy", "dataset_index.npy"}
	v := newStepView(12, 4, files, []int64{3<<20 + 17, 72, 64 + 4*50*7*4, 64 + 200, 96})
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = fmt.Sprintf("%q", f)
	}
	info := fmt.Sprintf(`{"num_batches": 12, "batch_size": 4, "train": {"plan": {"datasets": [{"name": "a", "weight": 0.25}, {"name": "b", "weight": 0.75}]}}, "files": [%s]}`,
		strings.Join(quoted, ", "))
	dir := t.TempDir()
	srv, err := fs.Mount(dir, fs.Options{Train: v, Info: func() []byte { return []byte(info) }, Stats: func() []byte { return []byte(`{}`) },
		Log: slog.New(slog.DiscardHandler)}, fs.MountOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Error(err)
		}
	})
	m, err := NewMount(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	data, meta, err := m.Read(context.Background(), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, v.read(3)) || !bytes.Equal(meta, v.meta(3)) {
		t.Fatalf("Read of batch 3: %d bytes and %q, want every array file's %d bytes and the .json", len(data), meta, len(v.read(3)))
	}
	res, err := Run(context.Background(), m, Options{Readers: 3, Warmup: 2, Batches: 9})
	if err != nil {
		t.Fatal(err)
	}
	want := int64(len(v.read(0)) + len(v.meta(0)))
	for _, rec := range res.Records {
		if rec.Bytes != want {
			t.Fatalf("batch %d: %d bytes read, want %d (every array and the .json)", rec.Index, rec.Bytes, want)
		}
	}
	s := res.Summarise()
	if s.Batches != 9 || s.BatchSize != 4 || math.Abs(s.SamplesPerS-4*s.BatchesPerS) > 1e-9*s.SamplesPerS {
		t.Errorf("summary: %d batches of %d, %.1f samples/s at %.1f batches/s; want 9 of 4, 4 samples a batch", s.Batches, s.BatchSize, s.SamplesPerS, s.BatchesPerS)
	}
	if s.Shares["a"] != 0.25 || s.Shares["b"] != 0.75 || s.MaxDeviation != 0 {
		t.Errorf("shares %v, deviation %g; want a 0.25, b 0.75", s.Shares, s.MaxDeviation)
	}
}

// TestNewMount: info.json's files are a batch's files (a pair mount's
// .npy, a step mount's arrays); a missing or malformed info.json, no
// files, or files that are not file names, are errors naming the mount
// and what is wrong.
func TestNewMount(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		files      []string
		err        string
	}{
		{"pairs", `{"num_batches": 3, "files": ["npy"]}`, []string{".npy"}, ""},
		{"steps", `{"files": ["action.npy", "image_mask.npy"]}`, []string{".action.npy", ".image_mask.npy"}, ""},
		{"no info.json", "", nil, "is not an oxefs mount (no info.json)"},
		{"not JSON", `{"files": `, nil, "info.json: not JSON"},
		{"no files", `{"num_batches": 3}`, nil, `"files" lists no batch files`},
		{"empty", `{"files": []}`, nil, `"files" lists no batch files`},
		{"no name", `{"files": ["npy", ""]}`, nil, `files: "" is not a file name`},
		{"a path", `{"files": ["../x/action.npy"]}`, nil, `files: "../x/action.npy" is not a file name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.info != "" {
				if err := os.WriteFile(filepath.Join(dir, "info.json"), []byte(tc.info), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m, err := NewMount(dir, false)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), dir) {
					t.Fatalf("NewMount: %v, want an error naming %s with %q", err, dir, tc.err)
				}
				return
			}
			if err != nil || strings.Join(m.suffixes, " ") != strings.Join(tc.files, " ") {
				t.Fatalf("NewMount: files %v, %v; want %v", m.suffixes, err, tc.files)
			}
		})
	}
	if _, _, err := (Mount{Dir: t.TempDir()}).Read(context.Background(), 0, nil); err == nil || !strings.Contains(err.Error(), "NewMount") {
		t.Errorf("Read of a Mount made without NewMount: %v", err)
	}
}

// headerlessPipeline is a Pipeline of one step-sample scheduler.
type headerlessPipeline struct{ s *batch.Scheduler }

func (p headerlessPipeline) View(val bool) *batch.Scheduler {
	if val {
		return nil
	}
	return p.s
}
func (p headerlessPipeline) Info() []byte {
	return []byte(`{"num_batches": 4, "batch_size": 2, "files": ["npy"]}`)
}
func (p headerlessPipeline) Stats() []byte { return []byte(`{}`) }

// TestInProcessHeaderless: in-process, a step-sample batch (a Headerless
// scheduler: the builder writes every file of the batch) is read as its
// whole buffer, every array's file with its own header, and nothing more.
func TestInProcessHeaderless(t *testing.T) {
	const size = 4096
	s, err := batch.NewScheduler(batch.Config{Len: 4, Shape: []int{size}, Meta: true, Headerless: true, Budget: 2 * size,
		Build: func(ctx context.Context, n int64, buf []byte) ([]byte, error) {
			for i := range buf {
				buf[i] = byte(int64(i) + n)
			}
			return []byte(`{"dataset_name": ["a", "a"]}`), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	src := InProcess{P: headerlessPipeline{s}, Desc: "test"}
	data, meta, err := src.Read(context.Background(), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != size || data[0] != 2 || data[size-1] != byte((size+1)%256) || string(meta) != `{"dataset_name": ["a", "a"]}` {
		t.Fatalf("in-process read: %d bytes starting %d, meta %q; want the builder's %d bytes", len(data), data[0], meta, size)
	}
	res, err := Run(context.Background(), src, Options{Readers: 2, Batches: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range res.Records {
		if rec.Bytes != size+int64(len(meta)) {
			t.Fatalf("batch %d: %d bytes, want %d", rec.Index, rec.Bytes, size+len(meta))
		}
	}
}

// TestNewMountRanksRoot: the top of a --ranks mount (an info.json with
// ranks, no batches/) is refused with the rank directory to read instead.
func TestNewMountRanksRoot(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "info.json"), []byte(`{"ranks": [0, 1, 2, 3], "world": 8, "pid": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := NewMount(dir, false)
	if err == nil {
		t.Fatal("NewMount accepted the top of a --ranks mount")
	}
	for _, want := range []string{"ranks 0-3 of world 8", filepath.Join(dir, "rank", "0"), "--ranks"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
