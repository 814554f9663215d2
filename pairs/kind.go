package pairs

import (
	"context"
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
// When the camera is augmented (Config.Augmented), a batch is two files
// in one buffer, each with its own header: NNNNNN.npy, the frames as
// without augmentation, and NNNNNN.augment.npy, float32 [B,
// augment.Width()], each sample's parameters (augment.Columns).
// Without augmentation the batch is the one array, byte for byte as it
// always was.
type Kind struct {
	asm         []*Assembler // by dataset index; nil where the plan never samples it
	dims        []Dims
	meta        config.MetaMode
	batchSize   int
	shape       []int
	sampleBytes int
	// With augmentation (aug != nil): the two files' places in the buffer.
	aug *augLayout
}

// AugmentSuffix names the file of a batch of augmented pairs that records
// each sample's parameters: NNNNNN.augment.npy.
const AugmentSuffix = ".augment.npy"

// fileAlign is where each file of a batch of two starts in its buffer: a
// page, so that each can be a memfd of its own (batch.Config.Parts), as
// step samples' arrays are.
const fileAlign = 4096

// augLayout places the frames file and the parameters file in a batch's
// buffer.
type augLayout struct {
	frameHeader, augHeader []byte
	frameSize              int64 // the frames file, its header included
	augOff, augSize        int64
	total                  int64
}

func newAugLayout(shape []int, batchSize, sampleBytes int) *augLayout {
	l := &augLayout{
		frameHeader: npy.Header("|u1", shape),
		augHeader:   npy.Header("<f4", []int{batchSize, augment.Width()}),
	}
	l.frameSize = int64(len(l.frameHeader)) + int64(batchSize)*int64(sampleBytes)
	l.augOff = (l.frameSize + fileAlign - 1) / fileAlign * fileAlign
	l.augSize = int64(len(l.augHeader)) + int64(batchSize)*int64(augment.Width())*4
	l.total = (l.augOff + l.augSize + fileAlign - 1) / fileAlign * fileAlign
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
	cfg := first.Config()
	if cfg.Layout == config.BCFHW {
		k.shape = []int{batchSize, 3, first.frames, cfg.Height, cfg.Width}
	} else {
		k.shape = []int{batchSize, first.frames, cfg.Height, cfg.Width, 3}
	}
	if cfg.Augmented {
		k.aug = newAugLayout(k.shape, batchSize, k.sampleBytes)
	}
	return k, nil
}

// Files is one array: [B, F, H, W, 3] (BFHWC) or [B, 3, F, H, W] (BCFHW);
// with augmentation, that array's file (".npy") and the parameters'
// (AugmentSuffix), parts of one buffer.
func (k *Kind) Files() sample.Files {
	if k.aug == nil {
		return sample.Files{Samples: k.batchSize, Shape: k.shape}
	}
	return sample.Files{Samples: k.batchSize, Shape: []int{int(k.aug.total)}, Parts: []sample.Part{
		{Suffix: ".npy", Off: 0, Size: k.aug.frameSize},
		{Suffix: AugmentSuffix, Off: k.aug.augOff, Size: k.aug.augSize},
	}}
}

// NewWorker returns a worker's scratch.
func (k *Kind) NewWorker() sample.Worker { return NewWorker() }

// Needs is the dataset's smallest offset.
func (k *Kind) Needs(d int) sample.Need {
	offset := k.asm[d].Config().Frames.Offset
	return sample.Need{What: "offset " + offset.String(), Steps: offset.Min + 1, Fix: "lower the offset"}
}

// NewBatch starts batch n in buf: the frames (Files' Shape), or with
// augmentation both files, whose headers it writes.
func (k *Kind) NewBatch(n int64, buf []byte) (sample.Batch, error) {
	if k.aug == nil {
		if len(buf) != k.batchSize*k.sampleBytes {
			return nil, fmt.Errorf("batch %d: buffer of %d bytes for %d samples of %d", n, len(buf), k.batchSize, k.sampleBytes)
		}
		return &batch{k: k, frames: buf, metas: make([]Meta, k.batchSize)}, nil
	}
	l := k.aug
	if int64(len(buf)) != l.total {
		return nil, fmt.Errorf("batch %d: buffer of %d bytes, want %d", n, len(buf), l.total)
	}
	copy(buf, l.frameHeader)
	clear(buf[l.frameSize:l.augOff])
	copy(buf[l.augOff:], l.augHeader)
	clear(buf[l.augOff+l.augSize:])
	return &batch{
		k:      k,
		frames: buf[len(l.frameHeader):l.frameSize],
		params: buf[l.augOff+int64(len(l.augHeader)) : l.augOff+l.augSize],
		metas:  make([]Meta, k.batchSize),
	}, nil
}

// batch is a batch of pairs being built.
type batch struct {
	k      *Kind
	frames []byte // the samples' frames
	params []byte // with augmentation: [B, augment.Width()] float32
	metas  []Meta
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
	return b.k.asm[s.Dataset].Build(ctx, w.(*Worker), f, s, ep, b.frames[i*n:(i+1)*n], m)
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
	return metaJSON(b.k.meta, samples, b.metas, b.k.dims, repeat)
}
