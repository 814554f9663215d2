package pairs

import (
	"context"
	"errors"
	"fmt"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
)

// Kind is frame pairs as a sample.Kind: a batch is one uint8 array of
// B samples of F frames, each sample built by its dataset's Assembler.
type Kind struct {
	asm         []*Assembler // by dataset index; nil where the plan never samples it
	dims        []Dims
	meta        config.MetaMode
	batchSize   int
	shape       []int
	sampleBytes int
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
	return k, nil
}

// Files is one array: [B, F, H, W, 3] (BFHWC) or [B, 3, F, H, W] (BCFHW).
func (k *Kind) Files() sample.Files { return sample.Files{Samples: k.batchSize, Shape: k.shape} }

// NewWorker returns a worker's scratch.
func (k *Kind) NewWorker() sample.Worker { return NewWorker() }

// Needs is the dataset's smallest offset.
func (k *Kind) Needs(d int) sample.Need {
	offset := k.asm[d].Config().Frames.Offset
	return sample.Need{What: "offset " + offset.String(), Steps: offset.Min + 1, Fix: "lower the offset"}
}

// NewBatch starts batch n in buf.
func (k *Kind) NewBatch(n int64, buf []byte) (sample.Batch, error) {
	if len(buf) != k.batchSize*k.sampleBytes {
		return nil, fmt.Errorf("batch %d: buffer of %d bytes for %d samples of %d", n, len(buf), k.batchSize, k.sampleBytes)
	}
	return &batch{k: k, buf: buf, metas: make([]Meta, k.batchSize)}, nil
}

// batch is a batch of pairs being built.
type batch struct {
	k     *Kind
	buf   []byte
	metas []Meta
}

func (b *batch) Build(ctx context.Context, w sample.Worker, f sample.Frames, i int, s plan.Sample, ep episode.Episode) error {
	var m *Meta
	if b.k.meta != config.MetaNone {
		m = &b.metas[i]
	}
	n := b.k.sampleBytes
	return b.k.asm[s.Dataset].Build(ctx, w.(*Worker), f, s, ep, b.buf[i*n:(i+1)*n], m)
}

func (b *batch) Finish(samples []plan.Sample, repeat []bool) ([]byte, error) {
	return metaJSON(b.k.meta, samples, b.metas, b.k.dims, repeat)
}
