package loader

import (
	"context"
	"slices"

	"github.com/oxefs/oxefs/batch"
	"github.com/oxefs/oxefs/fs"
	"github.com/oxefs/oxefs/sample"
)

// FSView is a view's batches as fs serves them: a batch of several files
// (sample.Files.Parts: step samples, augmented pairs) is fs.Parted.
func (p *Pipeline) FSView(s *batch.Scheduler) fs.Batches {
	if parts := fsParts(p.kind.Files()); len(parts) > 0 {
		return partedView{FSView{s}, parts}
	}
	return FSView{s}
}

// Parts are the files of a batch of several, for fs.Parted: each a range
// of the batch's buffer. Nil for a batch of one file.
func (p *Pipeline) Parts() []fs.Part { return fsParts(p.kind.Files()) }

func fsParts(files sample.Files) []fs.Part {
	var out []fs.Part
	for _, a := range files.Parts {
		out = append(out, fs.Part{Suffix: a.Suffix, Off: a.Off, Size: a.Size})
	}
	return out
}

// batchParts are the files of a batch of several for its scheduler
// (batch.Config.Parts); nil for a batch of one file.
func batchParts(files sample.Files) []batch.Part {
	var out []batch.Part
	for _, a := range files.Parts {
		out = append(out, batch.Part{Off: a.Off, Size: a.Size})
	}
	return out
}

// FSView adapts a scheduler to fs.Batches (whose Get returns the
// interface).
type FSView struct{ *batch.Scheduler }

// Get returns batch n; a look (the daemon's own page) reads no further.
func (v FSView) Get(ctx context.Context, n int64) (fs.Batch, error) {
	if fs.Looking(ctx) {
		ctx = batch.Look(ctx)
	}
	b, err := v.Scheduler.Get(ctx, n)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// partedView is a view of batches of several files: fs.Parted.
type partedView struct {
	FSView
	parts []fs.Part
}

func (v partedView) Parts() []fs.Part { return v.parts }

var _ fs.Parted = partedView{}

// BatchFiles returns copies of the files of batch n of view s, by their
// suffix after the batch's name: ".npy" (pair mode) or one ".<array>.npy"
// per array (step mode), and ".json" when the mix has metadata. It is the
// in-process way to read what a mount serves (tests, benchmarks).
func (p *Pipeline) BatchFiles(ctx context.Context, s *batch.Scheduler, n int64) (map[string][]byte, error) {
	b, err := s.Get(ctx, n)
	if err != nil {
		return nil, err
	}
	defer b.Release()
	var whole []byte
	for _, part := range b.NPY() {
		whole = append(whole, part...)
	}
	out := map[string][]byte{}
	parts := p.kind.Files().Parts
	for _, part := range parts {
		out[part.Suffix] = slices.Clone(whole[part.Off : part.Off+part.Size])
	}
	if len(parts) == 0 {
		out[".npy"] = whole
	}
	if m := b.Meta(); m != nil {
		out[".json"] = slices.Clone(m)
	}
	return out, nil
}
