package steps

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
)

// Batch is one batch of step samples being built: its buffer and layout.
type Batch struct {
	Buf    []byte
	Layout *Layout
	// jpegSizes are, per slot, the sizes of its compressed frames, [B][T]
	// (nil for a slot that is not decode: gpu); Finish writes them into
	// their arrays.
	jpegSizes [][]int32
}

// NewBatch returns the batch over buf, a buffer of l.Total bytes, with
// every array's header written.
func NewBatch(l *Layout, buf []byte) *Batch {
	l.WriteHeaders(buf)
	b := &Batch{Buf: buf, Layout: l, jpegSizes: make([][]int32, len(l.jpegSize))}
	for k, a := range l.jpegSize {
		if a >= 0 {
			arr := &l.Arrays[a]
			b.jpegSizes[k] = make([]int32, arr.Shape[0]*arr.Shape[1])
		}
	}
	return b
}

// compressed returns sample i's compressed sizes of slot k, nil for a
// slot that is not decode: gpu.
func (b *Batch) compressed(k, i int) []int32 {
	s := b.jpegSizes[k]
	if s == nil {
		return nil
	}
	t := len(s) / b.Layout.Arrays[0].Shape[0]
	return s[i*t : (i+1)*t]
}

// Finish writes what the batch knows once every sample is built: each
// sample's sample_is_pad (repeat: true for a repeat; nil: none) and the
// compressed frames' sizes.
func (b *Batch) Finish(repeat []bool) {
	l := b.Layout
	for i := range l.Arrays[0].Shape[0] {
		l.SetSamplePad(b.Buf, i, repeat != nil && repeat[i])
	}
	for k, sizes := range b.jpegSizes {
		if sizes == nil {
			continue
		}
		a := &l.Arrays[l.jpegSize[k]]
		out := b.Buf[a.Data():]
		for j, n := range sizes {
			binary.LittleEndian.PutUint32(out[4*j:], uint32(n))
		}
	}
}

// Kind is step samples as a sample.Kind: a batch is one buffer holding
// every array's .npy file (Layout), each sample built by its dataset's
// Assembler.
type Kind struct {
	lay  *Layout
	asm  []*Assembler // by dataset index; nil where the plan never samples it
	meta config.MetaMode
}

var _ sample.Kind = (*Kind)(nil)

// NewKind returns the step samples of a mix: batches laid out by lay, one
// Assembler per dataset, metadata under meta.
func NewKind(lay *Layout, asm []*Assembler, meta config.MetaMode) (*Kind, error) {
	if !slices.ContainsFunc(asm, func(a *Assembler) bool { return a != nil }) {
		return nil, errors.New("no dataset to build samples from")
	}
	return &Kind{lay: lay, asm: asm, meta: meta}, nil
}

// Layout is the batch's layout.
func (k *Kind) Layout() *Layout { return k.lay }

// Files are the layout's arrays, each its own file in one buffer.
func (k *Kind) Files() sample.Files {
	f := sample.Files{Samples: k.lay.Arrays[0].Shape[0], Shape: []int{int(k.lay.Total)}}
	for _, a := range k.lay.Arrays {
		f.Parts = append(f.Parts, sample.Part{Suffix: "." + a.File, Off: a.Off, Size: a.Size})
	}
	return f
}

// NewWorker returns a worker's scratch.
func (k *Kind) NewWorker() sample.Worker { return NewWorker() }

// Needs is the mix's drop_last.
func (k *Kind) Needs(d int) sample.Need {
	n := k.asm[d].DropLast()
	return sample.Need{What: fmt.Sprintf("drop_last %d", n), Steps: n + 1, Fix: "lower sample.drop_last"}
}

// NewBatch starts batch n in buf, every array's header written.
func (k *Kind) NewBatch(n int64, buf []byte) (sample.Batch, error) {
	if int64(len(buf)) != k.lay.Total {
		return nil, fmt.Errorf("batch %d: buffer of %d bytes, want %d", n, len(buf), k.lay.Total)
	}
	return &kindBatch{k: k, b: NewBatch(k.lay, buf), metas: make([]Meta, k.lay.Arrays[0].Shape[0])}, nil
}

// kindBatch is a batch of step samples being built, as a sample.Batch.
type kindBatch struct {
	k     *Kind
	b     *Batch
	metas []Meta
}

func (b *kindBatch) Build(ctx context.Context, w sample.Worker, f sample.Frames, i int, s plan.Sample, ep episode.Episode) error {
	var m *Meta
	if b.k.meta != config.MetaNone {
		m = &b.metas[i]
	}
	return b.k.asm[s.Dataset].Build(ctx, w.(*Worker), f, s, ep, b.b, i, m)
}

// Finish writes every sample's sample_is_pad (true for repeats) and
// returns the batch's .json.
func (b *kindBatch) Finish(samples []plan.Sample, repeat []bool) ([]byte, error) {
	b.b.Finish(repeat)
	return MetaJSON(b.k.meta, b.metas)
}
