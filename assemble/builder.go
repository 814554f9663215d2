package assemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/pairs"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/steps"
)

// Builder builds the batches of one plan (the train or the val view).
type Builder struct {
	// dependencies
	plan     *plan.Plan
	datasets []Dataset
	asm      []*pairs.Assembler // by dataset index; nil where the plan never samples it
	// step mode (NewSteps): the assemblers of step samples and the
	// batch's layout; nil in pair mode
	steps  []*steps.Assembler
	layout *steps.Layout
	pool   *Pool
	stats  *Stats
	log    *slog.Logger
	fetch  func(ctx context.Context, samples []plan.Sample) error
	subs   *substitutions // what substitution has learnt, shared by the workers

	// constants
	meta        config.MetaMode
	strict      bool
	markRepeats bool
	sampleBytes int
	batchSize   int
}

// Dataset is what a Builder reads of one dataset of the mix.
type Dataset struct {
	// Name names the dataset in errors and logs.
	Name string
	// Episodes loads its episodes (through the RAM cache).
	Episodes episode.Dataset
	// EpisodeID names an episode in logs and stats.json.
	EpisodeID func(episode.Key) string
	// ActionDim and StateDim are its own action and state widths, for the
	// masks in batch metadata.
	ActionDim, StateDim int
}

// Options configures New.
type Options struct {
	Meta   config.MetaMode
	Strict bool
	Stats  *Stats
	Log    *slog.Logger
	// Fetch, when set, is given each batch's samples, as planned, before
	// any is queued for decoding: it brings their remote bytes in, all at
	// once, so that decode workers never wait on the network. Its error
	// fails the batch.
	Fetch func(ctx context.Context, samples []plan.Sample) error
	// MarkRepeats marks the samples that only fill a one-pass view's
	// batches (the val view): those of a dataset-epoch after the first,
	// whose units the view has served already. Pair mode: the .json's
	// is_repeat; step mode: sample_is_pad. Unset (the train view, which
	// runs through epochs by design), is_repeat is left out and
	// sample_is_pad is all false.
	MarkRepeats bool
}

// New builds plan's batches with one assembler per dataset.
func New(plan *plan.Plan, datasets []Dataset, asm []*pairs.Assembler, pool *Pool, opts Options) (*Builder, error) {
	b := &Builder{
		plan: plan, datasets: datasets, asm: asm, pool: pool, stats: opts.Stats, log: opts.Log, fetch: opts.Fetch,
		meta: opts.Meta, strict: opts.Strict, markRepeats: opts.MarkRepeats, batchSize: plan.BatchSize(),
		subs: newSubstitutions(len(datasets)),
	}
	for _, a := range asm {
		if a == nil {
			continue
		}
		if b.sampleBytes != 0 && a.SampleBytes() != b.sampleBytes {
			return nil, errors.New("datasets of one mix disagree on the sample size")
		}
		b.sampleBytes = a.SampleBytes()
	}
	if b.sampleBytes == 0 {
		return nil, errors.New("no dataset to build samples from")
	}
	return b, nil
}

// NewSteps builds plan's batches of step samples (package steps) with one
// assembler per dataset, into buffers of layout.Total bytes that hold
// every array's file, headers included (batch.Config.Headerless).
func NewSteps(plan *plan.Plan, datasets []Dataset, asm []*steps.Assembler, layout *steps.Layout, pool *Pool, opts Options) (*Builder, error) {
	if !slices.ContainsFunc(asm, func(a *steps.Assembler) bool { return a != nil }) {
		return nil, errors.New("no dataset to build samples from")
	}
	if layout.Arrays[0].Shape[0] != plan.BatchSize() {
		return nil, fmt.Errorf("a layout of batches of %d for a plan of %d", layout.Arrays[0].Shape[0], plan.BatchSize())
	}
	return &Builder{
		plan: plan, datasets: datasets, steps: asm, layout: layout, pool: pool, stats: opts.Stats, log: opts.Log, fetch: opts.Fetch,
		meta: opts.Meta, strict: opts.Strict, markRepeats: opts.MarkRepeats, batchSize: plan.BatchSize(),
		subs: newSubstitutions(len(datasets)),
	}, nil
}

// Shape is the batch array's shape for the given layout; in step mode,
// the buffer's length in bytes.
func (b *Builder) Shape() []int {
	if b.layout != nil {
		return []int{int(b.layout.Total)}
	}
	cfg := b.firstAssembler().Config()
	f := b.firstAssembler().FramesPerSample()
	if cfg.Layout == config.BCFHW {
		return []int{b.batchSize, 3, f, cfg.Height, cfg.Width}
	}
	return []int{b.batchSize, f, cfg.Height, cfg.Width, 3}
}

func (b *Builder) firstAssembler() *pairs.Assembler {
	for _, a := range b.asm {
		if a != nil {
			return a
		}
	}
	panic("unreachable: New checked")
}

// Build fills buf, the batch's frames, with batch n and returns its
// metadata file (nil with meta: none). It is a batch.BuildFunc.
func (b *Builder) Build(ctx context.Context, n int64, buf []byte) ([]byte, error) {
	if b.layout != nil {
		return b.buildSteps(ctx, n, buf)
	}
	samples := b.plan.Batch(n, make([]plan.Sample, 0, b.batchSize))
	if len(buf) != len(samples)*b.sampleBytes {
		return nil, fmt.Errorf("batch %d: buffer of %d bytes for %d samples of %d", n, len(buf), len(samples), b.sampleBytes)
	}
	if b.fetch != nil {
		if err := b.fetch(ctx, samples); err != nil {
			return nil, fmt.Errorf("batch %d: %w", n, err)
		}
	}
	metas := make([]pairs.Meta, len(samples))
	err := b.each(ctx, n, samples, func(i int, s plan.Sample, w *worker) error {
		var m *pairs.Meta
		if b.meta != config.MetaNone {
			m = &metas[i]
		}
		dst := buf[i*b.sampleBytes : (i+1)*b.sampleBytes]
		return b.sample(ctx, s, func(c plan.Sample, ep episode.Episode) error {
			return b.asm[c.Dataset].Build(ctx, w.pairs, c, ep, dst, m)
		})
	})
	if err != nil {
		return nil, err
	}
	return b.metaJSON(samples, metas)
}

// each builds every sample of batch n on the decode pool, one job per
// sample, and waits for them: build(i, s, w) writes sample i, s, with
// worker w. A job still queued when ctx ends builds nothing. The samples'
// errors are joined, naming the batch.
func (b *Builder) each(ctx context.Context, n int64, samples []plan.Sample, build func(i int, s plan.Sample, w *worker) error) error {
	errs := make([]error, len(samples))
	var wg sync.WaitGroup
	for i, s := range samples {
		job := func(w *worker) {
			defer wg.Done()
			if err := ctx.Err(); err != nil {
				errs[i] = err // cancelled while queued: decode nothing
				return
			}
			errs[i] = build(i, s, w)
		}
		wg.Add(1)
		if err := b.pool.submit(ctx, job); err != nil {
			// Shutting down: queue nothing more.
			wg.Done()
			errs[i] = err
			break
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("batch %d: %w", n, err)
	}
	return nil
}

// sample builds one sample, substituting deterministically for a bad or
// too-short episode: the replacement is the first candidate of
// plan.Plan.Substitutes that builds — every other episode of the window, then of
// the dataset, each tried once — so the same bad unit is always replaced by
// the same good one, and batch bytes do not depend on which reader met the
// damage first. Episodes known to give no sample are skipped without
// loading them (they would fail again). The sample fails only when no
// episode of the dataset can be used, with an error that says so, or after
// maxImageFailures candidates whose frames do not decode.
//
// build writes a candidate from its episode into the sample's place.
func (b *Builder) sample(ctx context.Context, s plan.Sample, build func(c plan.Sample, ep episode.Episode) error) error {
	err := b.try(ctx, s, build)
	if err == nil {
		return nil
	}
	whole, ok := b.failed(s, err)
	if !ok {
		return err // transient source errors, --strict: EIO for this read
	}
	if err := b.subs.unusableErr(s.Dataset); err != nil {
		return err
	}
	var tally walkTally
	tally.add(whole, err)
	for c := range b.plan.Substitutes(s) {
		own := c.Episode == s.Episode // the last candidate: a new key for the same episode
		if k := b.subs.known(c); k != 0 {
			if !own {
				tally.add(k, nil)
			}
			continue
		}
		err := b.try(ctx, c, build)
		if err == nil {
			return nil
		}
		whole, ok := b.failed(c, err)
		if !ok {
			return err
		}
		if !own {
			tally.add(whole, err)
		}
		if whole == 0 && tally.images >= maxImageFailures {
			return fmt.Errorf("dataset %s: %d episodes tried in place of %s have frames that do not decode; last: %w",
				b.datasets[s.Dataset].Name, tally.images, b.datasets[s.Dataset].EpisodeID(s.Episode), err)
		}
	}
	err = b.noUsableEpisode(s, tally)
	if tally.images == 0 && b.subs.setUnusable(s.Dataset, err) {
		// Every episode is unusable for every sample: say so once, and
		// fail this dataset's samples at once from now on.
		b.stats.unusable(b.datasets[s.Dataset].Name, err)
		b.log.Error("dataset has no usable episode", "dataset", b.datasets[s.Dataset].Name, "err", err)
	}
	return err
}

// buildSteps is Build in step mode: buf is the whole batch, every array's
// file; each sample writes its part of every array, decoding each frame
// once per batch (steps.Batch).
func (b *Builder) buildSteps(ctx context.Context, n int64, buf []byte) ([]byte, error) {
	samples := b.plan.Batch(n, make([]plan.Sample, 0, b.batchSize))
	if int64(len(buf)) != b.layout.Total || len(samples) != b.batchSize {
		return nil, fmt.Errorf("batch %d: buffer of %d bytes for %d samples, want %d bytes for %d", n, len(buf), len(samples), b.layout.Total, b.batchSize)
	}
	if b.fetch != nil {
		if err := b.fetch(ctx, samples); err != nil {
			return nil, fmt.Errorf("batch %d: %w", n, err)
		}
	}
	batch := steps.NewBatch(b.layout, buf)
	metas := make([]steps.Meta, len(samples))
	err := b.each(ctx, n, samples, func(i int, s plan.Sample, w *worker) error {
		var m *steps.Meta
		if b.meta != config.MetaNone {
			m = &metas[i]
		}
		before := w.steps.Decoded()
		defer func() { b.stats.FramesDecoded.Add(w.steps.Decoded() - before) }()
		return b.sample(ctx, s, func(c plan.Sample, ep episode.Episode) error {
			return b.steps[c.Dataset].Build(ctx, w.steps, c, ep, batch, i, m)
		})
	})
	if err != nil {
		return nil, err
	}
	for i, s := range samples {
		b.layout.SetSamplePad(buf, i, b.repeat(s))
	}
	return steps.MetaJSON(b.meta, metas)
}

// repeat is whether sample s only fills its batch (Options.MarkRepeats).
func (b *Builder) repeat(s plan.Sample) bool { return b.markRepeats && s.Epoch > 0 }
