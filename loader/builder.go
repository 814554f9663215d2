package loader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/pairs"
	"github.com/oxefs/oxefs/plan"
)

// errPoolClosed is returned by a submission after Pool.Close.
var errPoolClosed = errors.New("decode pool closed: the daemon is shutting down")

// Pool is the one set of decode workers shared by every dataset and every
// batch: each worker owns a frames.Decoder, inside the pairs.Worker it
// builds samples with, so a batch's samples decode in parallel on every
// core and nothing is allocated per frame.
//
// Submissions hold mu shared while they send; Close takes it exclusively to
// close jobs, so no one sends on a closed channel, and every job queued
// before Close runs.
type Pool struct {
	// constants
	jobs    chan func(*pairs.Worker) // closed by Close, under mu
	wg      sync.WaitGroup           // workers
	decoder string

	mu     sync.RWMutex
	closed bool // guarded by mu
}

// NewPool starts n workers. opts picks the JPEG decoder and the shared
// decode budget.
func NewPool(n int, opts frames.DecoderOptions) (*Pool, error) {
	if n < 1 {
		return nil, fmt.Errorf("--workers must be at least 1, got %d", n)
	}
	p := &Pool{jobs: make(chan func(*pairs.Worker), 4*n)}
	workers := make([]*pairs.Worker, n)
	for i := range workers {
		d, err := frames.NewDecoder(opts)
		if err != nil {
			for _, w := range workers[:i] {
				w.Close()
			}
			return nil, err
		}
		workers[i] = pairs.NewWorker(d)
	}
	p.decoder = workers[0].Decoder().Name()
	for _, w := range workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer w.Close()
			for job := range p.jobs {
				job(w)
			}
		}()
	}
	return p, nil
}

// Decoder names the JPEG decoder in use.
func (p *Pool) Decoder() string { return p.decoder }

// submit queues job for a worker. It gives up when ctx ends first, and
// returns errPoolClosed after Close. A queued job always runs.
func (p *Pool) submit(ctx context.Context, job func(*pairs.Worker)) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return errPoolClosed
	}
	if err := ctx.Err(); err != nil {
		return err // a select would pick a free queue slot half the time
	}
	select {
	case p.jobs <- job:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the workers once queued work is done; later submissions
// fail. It is safe to call more than once.
func (p *Pool) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.jobs)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// BuildStats counts what the builders did, for stats.json.
type BuildStats struct {
	// Samples counts samples built per dataset (index of Mix.Datasets).
	Samples []atomic.Int64

	mu            sync.Mutex
	substitutions map[string]int64  // guarded by mu: by reason kind
	bad           map[string]string // guarded by mu: episode id -> reason, first seen
	badOrder      []string          // guarded by mu: episode ids in the order seen
	noEpisode     map[string]string // guarded by mu: dataset -> why none of its episodes can be used
}

// NewBuildStats counts for datasets datasets.
func NewBuildStats(datasets int) *BuildStats {
	return &BuildStats{
		Samples:       make([]atomic.Int64, datasets),
		substitutions: map[string]int64{},
		bad:           map[string]string{},
		noEpisode:     map[string]string{},
	}
}

// unusable records that no episode of dataset can be used, and why.
func (s *BuildStats) unusable(dataset string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noEpisode[dataset] = err.Error()
}

// Unusable returns the datasets none of whose episodes can be used, with
// the reason: their samples fail.
func (s *BuildStats) Unusable() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.noEpisode))
	for k, v := range s.noEpisode {
		out[k] = v
	}
	return out
}

// maxBadListed bounds the bad episodes stats.json lists by name.
const maxBadListed = 1000

// substituted records that a unit of episode id was replaced because of
// err. It reports whether this episode is new (to be logged once).
func (s *BuildStats) substituted(kind, id string, err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.substitutions[kind]++
	if _, seen := s.bad[id]; seen {
		return false
	}
	if len(s.badOrder) < maxBadListed {
		s.bad[id] = err.Error()
		s.badOrder = append(s.badOrder, id)
	}
	return true
}

// Substitutions returns counts by reason and the bad episodes with the
// first error seen for each (dataset/split/shard/record: reason).
func (s *BuildStats) Substitutions() (map[string]int64, []BadEpisode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := make(map[string]int64, len(s.substitutions))
	for k, v := range s.substitutions {
		counts[k] = v
	}
	bad := make([]BadEpisode, len(s.badOrder))
	for i, id := range s.badOrder {
		bad[i] = BadEpisode{Episode: id, Reason: s.bad[id]}
	}
	return counts, bad
}

// BadEpisode is an episode whose units were substituted.
type BadEpisode struct {
	Episode string `json:"episode"`
	Reason  string `json:"reason"`
}

// Builder builds the batches of one plan (the train or the val view).
type Builder struct {
	// dependencies
	plan     *plan.Plan
	datasets []*Dataset
	asm      []*pairs.Assembler // by dataset index; nil where the plan never samples it
	pool     *Pool
	stats    *BuildStats
	log      *slog.Logger
	subs     *substitutions // what substitution has learnt, shared by the workers

	// constants
	meta        config.MetaMode
	strict      bool
	sampleBytes int
	batchSize   int
}

// BuilderOptions configures NewBuilder.
type BuilderOptions struct {
	Meta   config.MetaMode
	Strict bool
	Stats  *BuildStats
	Log    *slog.Logger
}

// NewBuilder builds plan's batches with one assembler per dataset.
func NewBuilder(plan *plan.Plan, datasets []*Dataset, asm []*pairs.Assembler, pool *Pool, opts BuilderOptions) (*Builder, error) {
	b := &Builder{
		plan: plan, datasets: datasets, asm: asm, pool: pool, stats: opts.Stats, log: opts.Log,
		meta: opts.Meta, strict: opts.Strict, batchSize: plan.BatchSize(),
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

// Shape is the batch array's shape for the given layout.
func (b *Builder) Shape() []int {
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
	panic("unreachable: NewBuilder checked")
}

// Build fills buf, the batch's frames, with batch n and returns its
// metadata file (nil with meta: none). It is a batch.BuildFunc.
func (b *Builder) Build(ctx context.Context, n int64, buf []byte) ([]byte, error) {
	samples := b.plan.Batch(n, make([]plan.Sample, 0, b.batchSize))
	if len(buf) != len(samples)*b.sampleBytes {
		return nil, fmt.Errorf("batch %d: buffer of %d bytes for %d samples of %d", n, len(buf), len(samples), b.sampleBytes)
	}
	metas := make([]pairs.Meta, len(samples))
	errs := make([]error, len(samples))
	var wg sync.WaitGroup
	for i, s := range samples {
		job := func(w *pairs.Worker) {
			defer wg.Done()
			if err := ctx.Err(); err != nil {
				errs[i] = err // cancelled while queued: decode nothing
				return
			}
			var m *pairs.Meta
			if b.meta != config.MetaNone {
				m = &metas[i]
			}
			errs[i] = b.sample(ctx, w, s, buf[i*b.sampleBytes:(i+1)*b.sampleBytes], m)
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
		return nil, fmt.Errorf("batch %d: %w", n, err)
	}
	return b.metaJSON(samples, metas)
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
func (b *Builder) sample(ctx context.Context, w *pairs.Worker, s plan.Sample, dst []byte, m *pairs.Meta) error {
	err := b.try(ctx, w, s, dst, m)
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
		err := b.try(ctx, w, c, dst, m)
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
				b.datasets[s.Dataset].Config.Name, tally.images, b.datasets[s.Dataset].Data.EpisodeID(s.Episode), err)
		}
	}
	err = b.noUsableEpisode(s, tally)
	if tally.images == 0 && b.subs.setUnusable(s.Dataset, err) {
		// Every episode is unusable for every sample: say so once, and
		// fail this dataset's samples at once from now on.
		b.stats.unusable(b.datasets[s.Dataset].Config.Name, err)
		b.log.Error("dataset has no usable episode", "dataset", b.datasets[s.Dataset].Config.Name, "err", err)
	}
	return err
}

// batchMeta is a batch's .json file: one array per field, in sample order,
// the shape of a trainer's batch dict.
type batchMeta struct {
	DatasetName  []string `json:"dataset_name"`
	EpisodeID    []string `json:"episode_id,omitempty"`
	FrameIdx     []int    `json:"frame_idx,omitempty"`
	FrameIndices [][]int  `json:"frame_indices,omitempty"`
	Offset       []int    `json:"offset,omitempty"`
	Language     []string `json:"language,omitempty"`
	Action       []floats `json:"action,omitempty"`
	InitialState []floats `json:"initial_state,omitempty"`
	// ActionMask and StateMask are 1 for the dimensions of action and
	// initial_state that the sample's dataset has, 0 for the padding up to
	// the mix's widest: a padded 0 and a real 0 are told apart by them.
	ActionMask []mask   `json:"action_mask,omitempty"`
	StateMask  []mask   `json:"state_mask,omitempty"`
	Robot      []string `json:"robot,omitempty"`
}

// mask is a JSON array of 0s and 1s: the first n of width are 1.
type mask struct{ n, width int }

func (m mask) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, 2+2*m.width)
	out = append(out, '[')
	for i := range m.width {
		if i > 0 {
			out = append(out, ',')
		}
		if i < m.n {
			out = append(out, '1')
		} else {
			out = append(out, '0')
		}
	}
	return append(out, ']'), nil
}

// floats is a JSON array of numbers in which a non-finite value (which JSON
// cannot carry) is null, so one NaN in a dataset's actions cannot fail a
// batch.
type floats []float64

func (f floats) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, 2+len(f)*12)
	out = append(out, '[')
	for i, x := range f {
		if i > 0 {
			out = append(out, ',')
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			out = append(out, "null"...)
			continue
		}
		out = strconv.AppendFloat(out, x, 'g', -1, 64)
	}
	return append(out, ']'), nil
}

func (b *Builder) metaJSON(samples []plan.Sample, metas []pairs.Meta) ([]byte, error) {
	if b.meta == config.MetaNone {
		return nil, nil
	}
	var out batchMeta
	for i := range metas {
		m := &metas[i]
		out.DatasetName = append(out.DatasetName, m.DatasetName)
		if b.meta != config.MetaFull {
			continue
		}
		out.EpisodeID = append(out.EpisodeID, m.EpisodeID)
		out.FrameIdx = append(out.FrameIdx, m.FrameIdx)
		out.FrameIndices = append(out.FrameIndices, m.FrameIndices)
		out.Offset = append(out.Offset, m.Offset)
		out.Language = append(out.Language, m.Language)
		out.Action = append(out.Action, m.Action)
		out.InitialState = append(out.InitialState, m.InitialState)
		d := b.datasets[samples[i].Dataset]
		out.ActionMask = append(out.ActionMask, mask{d.ActionDim, len(m.Action)})
		out.StateMask = append(out.StateMask, mask{d.StateDim, len(m.InitialState)})
		out.Robot = append(out.Robot, m.Robot)
	}
	return json.Marshal(out)
}
