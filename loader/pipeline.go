package loader

import (
	"github.com/oxefs/oxefs/assemble"
	"github.com/oxefs/oxefs/batch"
	"github.com/oxefs/oxefs/episodes"
	"github.com/oxefs/oxefs/storage/diskcache"
	"github.com/oxefs/oxefs/storage/retry"

	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
)

// Options configures a Pipeline: the mount's flags.
type Options struct {
	Config   *config.Config
	CacheDir string
	// Mem bounds everything the pipeline holds (see Pipeline); Disk the
	// disk cache.
	Mem, Disk   int64
	Workers     int
	Readahead   int
	Rank, World int
	// Ranks, when set, serves several ranks of the same world from this
	// one pipeline (Pipeline.Ranks); Rank is then ignored.
	Ranks        []int
	Strict       bool
	MaxFetchRate int64
	// AugmentOff drops the config's augment blocks (--augment off):
	// batches are those of the config without them; info.json says so.
	AugmentOff bool
	// Retry bounds fetches from remote sources; zero fields take defaults.
	Retry retry.Policy
	// VerifyRanges is how ranges of remote objects that no format check
	// covers are verified (see StorageOptions.VerifyRanges).
	VerifyRanges diskcache.VerifyRanges
	// Offline serves from the cache alone (see StorageOptions.Offline and
	// MixOptions.Offline).
	Offline bool
	// Decoder forces a JPEG decoder ("go", "turbo"); "" picks the best.
	Decoder string
	// Memfd builds each batch's .npy file in a memfd of its own, for a
	// mount that serves by FUSE passthrough (see batch.Config.Memfd);
	// SetServing turns it off when the kernel refuses passthrough.
	Memfd bool
	// Progress reports episode-length indexing (samples_per_episode 0).
	Progress func(IndexProgress)
	Version  string
	Log      *slog.Logger
}

// The --mem budget is shared out once, at start:
//   - batches (built, being built, being read, readahead): half, of which
//     the validation view gets a quarter when there is one;
//   - parsed episodes in the RAM cache: a quarter;
//   - the rest, a quarter, is headroom: half of it (an eighth of --mem) is
//     the decode budget (frames.DecodeMemory) that every image's decode
//     reserves from, before allocating, what its header says it needs
//     beyond a worker's own buffers; a 32nd of --mem bounds the sample
//     tables of video files (LeRobot's, through format.Env.IndexBytes);
//     the rest is for
//     what is not counted exactly: episodes being decoded, fetch buffers,
//     FUSE request buffers, libavcodec's frames and the Go runtime. The Go
//     GC is told the whole budget as its soft limit, so garbage never
//     pushes the process past it.
const (
	batchShare  = 0.5
	ramShare    = 0.25
	decodeShare = 0.125
	indexShare  = 1.0 / 32
)

// Pipeline is everything behind a mount or an in-process benchmark: the
// store, the mix, one worker pool, and a scheduler per view of each rank
// served. Several ranks share the store, the caches, the pool and --mem:
// each gets an equal part of the batch budget.
type Pipeline struct {
	// Storage is the storage stack, with the store on it (Storage.Store),
	// and Env what every dataset is opened with (that store, the shared
	// video index).
	Storage *Storage
	Env     *format.Env
	// Episodes keeps parsed episodes of every dataset in RAM.
	Episodes *episodes.Cache
	Mix      *Mix
	Pool     *assemble.Pool
	// Ranks are the ranks served, in Options.Ranks order (one, Options.Rank,
	// without it).
	Ranks []*Rank
	// Train and Val are the first rank's views; Val is nil without a val
	// view.
	Train, Val *batch.Scheduler
	Builds     *assemble.Stats
	// Read latencies, recorded by the mount (or the benchmark) per file
	// read; Build latencies per batch build.
	ReadLatency, BuildLatency batch.Histogram
	// ServedBytes counts the batch-file bytes the mount's reads copied
	// out of this process; files served by passthrough add none.
	ServedBytes atomic.Int64

	opts     Options
	started  time.Time
	infoMu   sync.Mutex // guards info, every Rank.info and serving
	info     []byte     // the daemon's info.json with several ranks
	serving  *Serving
	prefetch *prefetcher
	valStats *assemble.Stats

	decodeMem *frames.DecodeMemory // the workers' shared decode budget
	kind      sample.Kind          // the kind of sample, as the builders see it (kindOf)
}

// Rank is one rank's two views.
type Rank struct {
	Rank int
	// Train and Val schedule the rank's views; Val is nil without a val
	// view.
	Train, Val *batch.Scheduler
	plans      RankPlans
	info       []byte
}

// gcLimit is the Go runtime's soft memory limit: the whole budget, less
// the batches' share when batches live in memfds, outside the Go heap.
func gcLimit(mem int64, memfd bool) int64 {
	if memfd {
		return mem - int64(float64(mem)*batchShare)
	}
	return mem
}

// Open opens the datasets, validates the config against them and starts the
// workers. Nothing is built until a batch is asked for.
func Open(ctx context.Context, opts Options) (*Pipeline, error) {
	if opts.AugmentOff {
		opts.Config = opts.Config.WithoutAugment()
	}
	cfg := opts.Config
	if err := checkMem(cfg, opts.Mem, len(opts.Ranks)); err != nil {
		return nil, err
	}
	debug.SetMemoryLimit(gcLimit(opts.Mem, opts.Memfd))
	st, err := OpenStorage(StorageOptions{
		CacheDir: opts.CacheDir, Disk: opts.Disk, Retry: opts.Retry, MaxFetchRate: opts.MaxFetchRate, Offline: opts.Offline, Log: opts.Log,
		VerifyRanges: opts.VerifyRanges,
	})
	if err != nil {
		return nil, err
	}
	p := &Pipeline{Storage: st, opts: opts, started: time.Now()}
	if p.Episodes, err = episodes.New(int64(float64(opts.Mem) * ramShare)); err != nil {
		st.Close()
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			p.Close()
		}
	}()
	p.Env = &format.Env{Store: st.Store, IndexBytes: int64(float64(opts.Mem) * indexShare)}
	p.Mix, err = OpenMix(ctx, cfg, p.Env, MixOptions{
		Rank: opts.Rank, World: opts.World, Ranks: opts.Ranks, Workers: opts.Workers, Progress: opts.Progress, Episodes: p.Episodes,
		Offline: opts.Offline, Log: opts.Log,
	})
	if err != nil {
		return nil, err
	}
	// Statistics already saved are shown in info.json; normalising needs
	// them, so they are computed now where missing.
	if err := p.Mix.NormStats(ctx, cfg.Normalize.Any(), opts.Workers, opts.Decoder, opts.Progress); err != nil {
		return nil, err
	}
	if p.kind, err = p.Mix.kind.assemble(p.Mix); err != nil {
		return nil, err
	}
	p.decodeMem = frames.NewDecodeMemory(int64(float64(opts.Mem) * decodeShare))
	p.Pool, err = assemble.NewPool(opts.Workers, p.kind, frameDecoder(frames.DecoderOptions{JPEG: opts.Decoder, Memory: p.decodeMem}))
	if err != nil {
		return nil, err
	}
	opts.Log.Info("decoder", "jpeg", p.Pool.Decoder(), "decode", opts.Config.Decode, "workers", opts.Workers)

	meta := cfg.Meta
	budget := int64(float64(opts.Mem)*batchShare) / int64(len(p.Mix.Ranks))
	trainBudget, valBudget := budget, int64(0)
	if p.Mix.Val != nil {
		valBudget = budget / 4
		trainBudget -= valBudget
	}
	p.prefetch = newPrefetcher(p.Mix, opts.Log)
	p.Builds = assemble.NewStats(len(p.Mix.Datasets))
	if p.Mix.Val != nil {
		p.valStats = assemble.NewStats(len(p.Mix.Datasets))
	}
	for _, rp := range p.Mix.Ranks {
		r := &Rank{Rank: rp.Rank, plans: rp}
		p.Ranks = append(p.Ranks, r)
		if r.Train, err = p.view(rp.Train, true, meta, trainBudget, p.Builds); err != nil {
			return nil, err
		}
		if rp.Val != nil {
			if r.Val, err = p.view(rp.Val, false, meta, valBudget, p.valStats); err != nil {
				return nil, fmt.Errorf("validation view: %w", err)
			}
		}
	}
	p.Train, p.Val = p.Ranks[0].Train, p.Ranks[0].Val
	p.warnMemory()
	for _, r := range p.Ranks {
		if r.info, err = p.infoJSON(r); err != nil {
			return nil, err
		}
	}
	if p.info, err = p.infoJSON(nil); err != nil {
		return nil, err
	}
	ok = true
	return p, nil
}

func (p *Pipeline) view(pl *plan.Plan, train bool, meta config.MetaMode, budget int64, stats *assemble.Stats) (*batch.Scheduler, error) {
	opts := assemble.Options{Strict: p.opts.Strict, Stats: stats, Log: p.opts.Log, MarkRepeats: !train, Params: transformer(p.Mix, pl, train)}
	if p.Mix.hasRemote() {
		// The batch's remote episodes arrive before the samples are
		// queued, all at once and each on its own (an RLDS record's byte
		// range, not its whole shard, which the prefetcher brings in plan
		// order meanwhile; a LeRobot episode's rows and video samples):
		// decode workers then never wait on the network, so neither
		// readahead nor another view's builds hold them while this
		// batch's source is slow, and a dead source fails the batch
		// within one retry budget (see fetchbatch.go).
		opts.Fetch = p.Mix.fetchBatch
	}
	b, err := assemble.New(pl, p.Mix.buildDatasets(), p.kind, p.Pool, opts)
	if err != nil {
		return nil, err
	}
	view := "val"
	if train {
		view = "train"
	}
	build := func(ctx context.Context, n int64, buf []byte) ([]byte, error) {
		start := time.Now()
		p.prefetch.advance(pl, n)
		// Batch n's reads of the source have priority n: the batch a
		// reader waits for gets the bandwidth before those built ahead of
		// it (their fills pause, abandoning their requests), and the
		// whole-shard prefetch gets what the batches leave.
		ctx = diskcache.WithPriority(ctx, n)
		meta, err := b.Build(ctx, n, buf)
		took := time.Since(start)
		p.BuildLatency.Observe(took)
		if log := p.opts.Log; log != nil && log.Enabled(ctx, slog.LevelDebug) {
			// --log-level debug: a line per batch built (readahead
			// included), which says where the time goes.
			attrs := []slog.Attr{slog.String("view", view), slog.Int64("batch", n), slog.Duration("took", took.Round(time.Microsecond))}
			if err != nil {
				attrs = append(attrs, slog.Any("err", err))
			}
			log.LogAttrs(ctx, slog.LevelDebug, "batch built", attrs...)
		}
		return meta, err
	}
	limit := pl.NumBatches() // the val view is one pass
	if train {
		limit = pl.MaxBatch() + 1 // train serves later epochs by name
	}
	files := b.Files()
	return batch.NewScheduler(batch.Config{
		Len:       pl.NumBatches(),
		Limit:     limit,
		Shape:     files.Shape,
		Meta:      meta != config.MetaNone,
		Build:     build,
		Budget:    budget,
		Readahead: p.opts.Readahead,
		// A batch of several files is one buffer whose files are each a
		// memfd of their own (batch.Config.Parts), for passthrough; each
		// holds its own header.
		Memfd:      p.opts.Memfd,
		Headerless: len(files.Parts) > 0,
		Parts:      batchParts(files),
	})
}

// warnMemory warns when a view's batch budget holds fewer than two
// batches: readers then wait for each other's files to close.
func (p *Pipeline) warnMemory() {
	for _, v := range []struct {
		s    *batch.Scheduler
		val  bool
		name string
	}{{p.Train, false, "train"}, {p.Val, true, "val"}} {
		if v.s == nil || v.s.Budget()/v.s.BatchBytes() >= 2 {
			continue
		}
		per := p.memPerReader(v.s, v.val)
		p.opts.Log.Warn(fmt.Sprintf("--mem %d MiB holds one %s batch of %.1f MiB at a time: a second open batch file waits until the first is closed; "+
			"use --mem %d MiB or more for one reader, (readers + 1) x %d MiB for several",
			p.opts.Mem>>20, v.name, float64(v.s.BatchBytes())/(1<<20), 2*per>>20, per>>20))
	}
}

// schedulers are the views of every rank.
func (p *Pipeline) schedulers() []*batch.Scheduler {
	var out []*batch.Scheduler
	for _, r := range p.Ranks {
		for _, s := range []*batch.Scheduler{r.Train, r.Val} {
			if s != nil {
				out = append(out, s)
			}
		}
	}
	return out
}

// Close stops everything.
func (p *Pipeline) Close() {
	if p.prefetch != nil {
		p.prefetch.close()
	}
	for _, s := range p.schedulers() {
		s.Close()
	}
	if p.Pool != nil {
		p.Pool.Close()
	}
	if p.Episodes != nil {
		p.Episodes.Close()
	}
	p.Storage.Close()
}

// StopReadahead stops building batches ahead of demand: on shutdown, only
// the readers already there are served.
func (p *Pipeline) StopReadahead() {
	for _, s := range p.schedulers() {
		s.StopReadahead()
	}
}

// View returns the scheduler of the val view when val is set, else the
// train view's; nil when the mix has no val view.
func (p *Pipeline) View(val bool) *batch.Scheduler {
	if val {
		return p.Val
	}
	return p.Train
}

// MultiRank reports whether the pipeline serves ranks by directory
// (Options.Ranks set), rank/R/ each, rather than one rank at the top.
func (p *Pipeline) MultiRank() bool { return len(p.opts.Ranks) > 0 }
