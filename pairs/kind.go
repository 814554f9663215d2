package pairs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/oxefs/oxefs/augment"
	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/internal/npy"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
)

// Kind is frame pairs as a sample.Kind: a batch is one uint8 array of
// B samples of F frames, each sample built by its dataset's Assembler.
// When the camera is augmented (Config.Augmented) or its frames may be
// served compressed (decode: gpu), a batch is several files in one buffer,
// each with its own header: NNNNNN.npy, the frames as without them,
// NNNNNN.augment.npy, float32 [B, augment.Width()], each sample's
// parameters (augment.Columns), and NNNNNN.jpeg_size.npy, int32 [B, F],
// each frame's JPEG size (0: pixels). Without either the batch is the one
// array, byte for byte as it always was.
type Kind struct {
	asm         []*Assembler // by dataset index; nil where the plan never samples it
	dims        []Dims
	meta        config.MetaMode
	batchSize   int
	frames      int
	shape       []int
	sampleBytes int
	// With augmentation or decode: gpu (parts != nil): the files' places
	// in the buffer.
	parts *partsLayout
}

// AugmentSuffix names the file of a batch of augmented pairs that records
// each sample's parameters: NNNNNN.augment.npy.
const AugmentSuffix = ".augment.npy"

// JPEGSizeSuffix names the file of a decode: gpu batch that gives each
// frame's JPEG size in bytes, 0 where the frame holds pixels:
// NNNNNN.jpeg_size.npy, int32 [B, F]. A compressed frame's bytes start at
// the frame's own place in NNNNNN.npy.
const JPEGSizeSuffix = ".jpeg_size.npy"

// fileAlign is where each file of a batch of several starts in its
// buffer: a page, so that each can be a memfd of its own
// (batch.Config.Parts), as step samples' arrays are.
const fileAlign = 4096

// partsLayout places the frames file, the parameters file and the JPEG
// sizes file in a batch's buffer; a file the batch lacks has size 0.
type partsLayout struct {
	files []partFile // frames, then the others present
	// indices into files; -1 when absent
	aug, jpeg int
	total     int64
}

// partFile is one file of a batch of several: its header, and its place
// and size (header included) in the buffer.
type partFile struct {
	suffix    string
	header    []byte
	off, size int64
}

// data returns the file's values in buf.
func (f *partFile) data(buf []byte) []byte {
	return buf[f.off+int64(len(f.header)) : f.off+f.size]
}

func newPartsLayout(shape []int, batchSize, frames, sampleBytes int, augmented, compressed bool) *partsLayout {
	l := &partsLayout{aug: -1, jpeg: -1}
	add := func(suffix string, header []byte, values int64) int {
		l.files = append(l.files, partFile{suffix: suffix, header: header, off: l.total, size: int64(len(header)) + values})
		l.total = (l.total + l.files[len(l.files)-1].size + fileAlign - 1) / fileAlign * fileAlign
		return len(l.files) - 1
	}
	add(".npy", npy.Header("|u1", shape), int64(batchSize)*int64(sampleBytes))
	if augmented {
		l.aug = add(AugmentSuffix, npy.Header("<f4", []int{batchSize, augment.Width()}), int64(batchSize)*int64(augment.Width())*4)
	}
	if compressed {
		l.jpeg = add(JPEGSizeSuffix, npy.Header("<i4", []int{batchSize, frames}), int64(batchSize)*int64(frames)*4)
	}
	return l
}

// Dims are a dataset's own action and state widths, for the masks of the
// batch's metadata.
type Dims struct{ Action, State int }

var _ sample.Kind = (*Kind)(nil)

// NewKind returns the pairs of a mix: batches of batchSize samples, one
// Assembler and one Dims per dataset, metadata under meta. The datasets'
// assemblers must agree on the sample's size and layout.
func NewKind(batchSize int, asm []*Assembler, dims []Dims, meta config.MetaMode) (*Kind, error) {
	if batchSize < 1 || len(dims) != len(asm) {
		return nil, fmt.Errorf("pairs of batches of %d, %d assemblers for %d datasets", batchSize, len(asm), len(dims))
	}
	k := &Kind{asm: asm, dims: dims, meta: meta, batchSize: batchSize}
	var first *Assembler
	for _, a := range asm {
		if a == nil {
			continue
		}
		if first == nil {
			first = a
		}
		if a.SampleBytes() != first.SampleBytes() {
			return nil, errors.New("datasets of one mix disagree on the sample size")
		}
	}
	if first == nil {
		return nil, errors.New("no dataset to build samples from")
	}
	k.sampleBytes = first.SampleBytes()
	k.frames = first.frames
	cfg := first.Config()
	if cfg.Layout == config.BCFHW {
		k.shape = []int{batchSize, 3, first.frames, cfg.Height, cfg.Width}
	} else {
		k.shape = []int{batchSize, first.frames, cfg.Height, cfg.Width, 3}
	}
	compressed := cfg.Decode == config.DecodeGPU
	if compressed && cfg.Layout != config.BFHWC {
		return nil, fmt.Errorf("decode gpu needs layout BFHWC, not %v", cfg.Layout)
	}
	if cfg.Augmented || compressed {
		k.parts = newPartsLayout(k.shape, batchSize, k.frames, k.sampleBytes, cfg.Augmented, compressed)
	}
	return k, nil
}

// Files is one array: [B, F, H, W, 3] (BFHWC) or [B, 3, F, H, W] (BCFHW);
// with augmentation or decode: gpu, that array's file (".npy") and the
// others (AugmentSuffix, JPEGSizeSuffix), parts of one buffer.
func (k *Kind) Files() sample.Files {
	if k.parts == nil {
		return sample.Files{Samples: k.batchSize, Shape: k.shape}
	}
	f := sample.Files{Samples: k.batchSize, Shape: []int{int(k.parts.total)}}
	for _, pf := range k.parts.files {
		f.Parts = append(f.Parts, sample.Part{Suffix: pf.suffix, Off: pf.off, Size: pf.size})
	}
	return f
}

// NewWorker returns a worker's scratch.
func (k *Kind) NewWorker() sample.Worker { return NewWorker() }

// Needs is the dataset's smallest offset.
func (k *Kind) Needs(d int) sample.Need {
	offset := k.asm[d].Config().Frames.Offset
	return sample.Need{What: "offset " + offset.String(), Steps: offset.Min + 1, Fix: "lower the offset"}
}

// NewBatch starts batch n in buf: the frames (Files' Shape), or with
// parts every file, whose headers it writes.
func (k *Kind) NewBatch(n int64, buf []byte) (sample.Batch, error) {
	if k.parts == nil {
		if len(buf) != k.batchSize*k.sampleBytes {
			return nil, fmt.Errorf("batch %d: buffer of %d bytes for %d samples of %d", n, len(buf), k.batchSize, k.sampleBytes)
		}
		return &batch{k: k, frames: buf, metas: make([]Meta, k.batchSize)}, nil
	}
	l := k.parts
	if int64(len(buf)) != l.total {
		return nil, fmt.Errorf("batch %d: buffer of %d bytes, want %d", n, len(buf), l.total)
	}
	for i := range l.files {
		f := &l.files[i]
		copy(buf[f.off:], f.header)
		next := l.total
		if i+1 < len(l.files) {
			next = l.files[i+1].off
		}
		clear(buf[f.off+f.size : next])
	}
	b := &batch{k: k, frames: l.files[0].data(buf), metas: make([]Meta, k.batchSize)}
	if l.aug >= 0 {
		b.params = l.files[l.aug].data(buf)
	}
	if l.jpeg >= 0 {
		b.jpegOut = l.files[l.jpeg].data(buf)
		b.jpegSizes = make([]int32, k.batchSize*k.frames)
	}
	return b, nil
}

// batch is a batch of pairs being built.
type batch struct {
	k      *Kind
	frames []byte // the samples' frames
	params []byte // with augmentation: [B, augment.Width()] float32
	// With decode: gpu: each frame's JPEG size, [B][F], written into
	// jpegOut (int32 [B, F]) by Finish.
	jpegSizes []int32
	jpegOut   []byte
	metas     []Meta
}

func (b *batch) Build(ctx context.Context, w sample.Worker, f sample.Frames, i int, s plan.Sample, ep episode.Episode) error {
	var m *Meta
	if b.k.meta != config.MetaNone {
		m = &b.metas[i]
	}
	if b.params != nil {
		row := augment.Width() * 4
		recordParams(b.params[i*row:(i+1)*row], f.Params(0))
	}
	n := b.k.sampleBytes
	var sizes []int32
	if b.jpegSizes != nil {
		sizes = b.jpegSizes[i*b.k.frames : (i+1)*b.k.frames]
	}
	return b.k.asm[s.Dataset].Build(ctx, w.(*Worker), f, s, ep, b.frames[i*n:(i+1)*n], sizes, m)
}

// recordParams writes p, augment.Params or nil (the identity), as one row
// of augment.Width() little-endian float32.
func recordParams(dst []byte, p sample.Params) {
	ap, ok := p.(augment.Params)
	if !ok {
		ap = augment.Identity()
	}
	ap.PutRow(dst)
}

func (b *batch) Finish(samples []plan.Sample, repeat []bool) ([]byte, error) {
	for j, n := range b.jpegSizes {
		binary.LittleEndian.PutUint32(b.jpegOut[4*j:], uint32(n))
	}
	return metaJSON(b.k.meta, samples, b.metas, b.k.dims, repeat)
}
