package assemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
)

// Builder builds the batches of one plan (the train or the val view).
type Builder struct {
	// dependencies
	plan     *plan.Plan
	datasets []Dataset
	kind     sample.Kind
	params   sample.Transformer
	pool     *Pool
	stats    *Stats
	log      *slog.Logger
	fetch    func(ctx context.Context, samples []plan.Sample) error
	subs     *substitutions // what substitution has learnt, shared by the workers
	stages   sync.Pool      // *sample.Stage, one per batch being built

	// constants
	strict      bool
	markRepeats bool
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
}

// Options configures New.
type Options struct {
	Strict bool
	Stats  *Stats
	Log    *slog.Logger
	// Params draws each sample's transform parameters per camera slot
	// (the view's augmentation); sample.Identity{} draws none.
	Params sample.Transformer
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

// New builds plan's batches of kind's samples on pool, whose workers
// were made for kind (NewPool).
func New(plan *plan.Plan, datasets []Dataset, kind sample.Kind, pool *Pool, opts Options) (*Builder, error) {
	if n := kind.Files().Samples; n != plan.BatchSize() {
		return nil, fmt.Errorf("batches of %d for a plan of %d", n, plan.BatchSize())
	}
	if pool.kind != kind {
		return nil, errors.New("a decode pool made for another kind of sample")
	}
	if opts.Params == nil {
		return nil, errors.New("no Transformer: sample.Identity{} draws no parameters")
	}
	b := &Builder{
		plan: plan, datasets: datasets, kind: kind, params: opts.Params, pool: pool, stats: opts.Stats, log: opts.Log, fetch: opts.Fetch,
		strict: opts.Strict, markRepeats: opts.MarkRepeats, batchSize: plan.BatchSize(),
		subs: newSubstitutions(len(datasets)),
	}
	b.stages.New = func() any { return sample.NewStage() }
	return b, nil
}

// Files says what a batch is to the scheduler.
func (b *Builder) Files() sample.Files { return b.kind.Files() }

// Build fills buf, the batch's buffer, with batch n and returns its
// metadata file (nil with meta: none). It is a batch.BuildFunc.
func (b *Builder) Build(ctx context.Context, n int64, buf []byte) ([]byte, error) {
	samples := b.plan.Batch(n, make([]plan.Sample, 0, b.batchSize))
	if len(samples) != b.batchSize {
		return nil, fmt.Errorf("batch %d: %d samples, want %d", n, len(samples), b.batchSize)
	}
	bt, err := b.kind.NewBatch(n, buf)
	if err != nil {
		return nil, err
	}
	if b.fetch != nil {
		if err := b.fetch(ctx, samples); err != nil {
			return nil, fmt.Errorf("batch %d: %w", n, err)
		}
	}
	stage := b.stages.Get().(*sample.Stage)
	stage.Reset(n, samples, b.params)
	err = b.each(ctx, n, samples, func(i int, s plan.Sample, w *worker) error {
		before, passed := w.frames.Decoded(), w.frames.Compressed()
		defer func() {
			b.stats.FramesDecoded.Add(w.frames.Decoded() - before)
			b.stats.FramesCompressed.Add(w.frames.Compressed() - passed)
		}()
		f := stage.For(w.frames, i)
		return b.sample(ctx, s, stage, i, func(c plan.Sample, ep episode.Episode) error {
			return bt.Build(ctx, w.kind, f, i, c, ep)
		})
	})
	b.stages.Put(stage) // every job is done: each waited for
	if err != nil {
		return nil, err
	}
	var repeat []bool
	if b.markRepeats {
		repeat = make([]bool, len(samples))
		for i, s := range samples {
			repeat[i] = s.Epoch > 0
		}
	}
	return bt.Finish(samples, repeat)
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
// build writes a candidate from its episode into sample i's place;
// stage is the batch's frame stage, whose claims of a failed candidate
// are revoked before the next is built.
func (b *Builder) sample(ctx context.Context, s plan.Sample, stage *sample.Stage, i int, build func(c plan.Sample, ep episode.Episode) error) error {
	err := b.try(ctx, s, stage, i, build)
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
		err := b.try(ctx, c, stage, i, build)
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
