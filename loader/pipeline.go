package loader

import (
	"github.com/oxefs/oxefs/batch"
	"github.com/oxefs/oxefs/episodes"
	"github.com/oxefs/oxefs/storage"
	"github.com/oxefs/oxefs/storage/diskcache"
	"github.com/oxefs/oxefs/storage/retry"
	"github.com/oxefs/oxefs/store"

	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/format/lerobot"
	"github.com/oxefs/oxefs/format/rlds"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/pairs"
	"github.com/oxefs/oxefs/plan"
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
	// Retry bounds fetches from remote sources; zero fields take defaults.
	Retry retry.Policy
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
//     tables of LeRobot video files (lerobot.IndexCache); the rest is for
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
	// Storage is the storage stack; Store the store every format reads through.
	Storage *Storage
	Store   *store.Store
	// Episodes keeps parsed episodes of every dataset in RAM.
	Episodes *episodes.Cache
	Mix      *Mix
	Pool     *Pool
	// Ranks are the ranks served, in Options.Ranks order (one, Options.Rank,
	// without it).
	Ranks []*Rank
	// Train and Val are the first rank's views; Val is nil without a val
	// view.
	Train, Val *batch.Scheduler
	Builds     *BuildStats
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
	valStats *BuildStats

	decodeMem *frames.DecodeMemory // the workers' shared decode budget
	// videoIndex keeps the LeRobot datasets' video sample tables.
	videoIndex *lerobot.IndexCache
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
	cfg := opts.Config
	if err := checkMem(cfg, opts.Mem, len(opts.Ranks)); err != nil {
		return nil, err
	}
	debug.SetMemoryLimit(gcLimit(opts.Mem, opts.Memfd))
	st, err := OpenStorage(StorageOptions{
		CacheDir: opts.CacheDir, Disk: opts.Disk, Retry: opts.Retry, MaxFetchRate: opts.MaxFetchRate, Offline: opts.Offline, Log: opts.Log,
	})
	if err != nil {
		return nil, err
	}
	p := &Pipeline{Storage: st, Store: st.Store, opts: opts, started: time.Now()}
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
	p.videoIndex = lerobot.NewIndexCache(int64(float64(opts.Mem) * indexShare))
	p.Mix, err = OpenMix(ctx, cfg, st.Store, MixOptions{
		Rank: opts.Rank, World: opts.World, Ranks: opts.Ranks, Workers: opts.Workers, Progress: opts.Progress, Episodes: p.Episodes,
		Offline: opts.Offline, Log: opts.Log, VideoIndex: p.videoIndex,
	})
	if err != nil {
		return nil, err
	}
	// Statistics already saved are shown in info.json; normalising needs
	// them, so they are computed now where missing.
	if err := p.Mix.NormStats(ctx, cfg.Normalize.Any(), opts.Workers, opts.Progress); err != nil {
		return nil, err
	}
	asm, err := assemblers(p.Mix)
	if err != nil {
		return nil, err
	}
	p.decodeMem = frames.NewDecodeMemory(int64(float64(opts.Mem) * decodeShare))
	p.Pool, err = NewPool(opts.Workers, frames.DecoderOptions{JPEG: opts.Decoder, Memory: p.decodeMem})
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
	p.Builds = NewBuildStats(len(p.Mix.Datasets))
	if p.Mix.Val != nil {
		p.valStats = NewBuildStats(len(p.Mix.Datasets))
	}
	for _, rp := range p.Mix.Ranks {
		r := &Rank{Rank: rp.Rank, plans: rp}
		p.Ranks = append(p.Ranks, r)
		if r.Train, err = p.view(rp.Train, true, asm, meta, trainBudget, p.Builds); err != nil {
			return nil, err
		}
		if rp.Val != nil {
			if r.Val, err = p.view(rp.Val, false, asm, meta, valBudget, p.valStats); err != nil {
				return nil, fmt.Errorf("validation view: %w", err)
			}
		}
	}
	p.Train, p.Val = p.Ranks[0].Train, p.Ranks[0].Val
	p.prefetch = newPrefetcher(st.Store, p.Mix, opts.Log)
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

// assemblers makes one pairs.Assembler per dataset of the mix.
func assemblers(m *Mix) ([]*pairs.Assembler, error) {
	cfg := m.Config
	out := make([]*pairs.Assembler, len(m.Datasets))
	for i, d := range m.Datasets {
		dc := d.Config
		pc := pairs.Config{
			ImageKey:     d.Image.Key,
			Frames:       cfg.FramesOf(&dc),
			ActionKeys:   dc.ActionKeys,
			StateKey:     dc.StateKey,
			LanguageKey:  dc.LanguageKey,
			Robot:        dc.Robot,
			Height:       cfg.ImageSize[0],
			Width:        cfg.ImageSize[1],
			Resize:       cfg.Resize,
			Layout:       cfg.Layout,
			Decode:       cfg.Decode,
			MaxActionDim: m.MaxActionDim,
			MaxStateDim:  m.MaxStateDim,
		}
		if d.Norm != nil {
			pc.ActionNorm = affine(cfg.Normalize.Action, d.Norm.ActionSum)
			pc.StateNorm = affine(cfg.Normalize.State, d.Norm.State)
		}
		a, err := pairs.New(d.Data.Info(), pc)
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

func (p *Pipeline) view(pl *plan.Plan, train bool, asm []*pairs.Assembler, meta config.MetaMode, budget int64, stats *BuildStats) (*batch.Scheduler, error) {
	b, err := NewBuilder(pl, p.Mix.Datasets, asm, p.Pool, BuilderOptions{
		Meta: meta, Strict: p.opts.Strict, Stats: stats, Log: p.opts.Log,
	})
	if err != nil {
		return nil, err
	}
	build := func(ctx context.Context, n int64, buf []byte) ([]byte, error) {
		start := time.Now()
		p.prefetch.advance(pl, n)
		// Batch n's reads of the source have priority n: the batch a
		// reader waits for gets the bandwidth before those built ahead of
		// it (their fills pause, abandoning their requests), and the
		// whole-shard prefetch gets what the batches leave.
		ctx = diskcache.WithPriority(ctx, n)
		// The batch's remote episodes arrive before the samples are queued,
		// all at once and each on its own (its record's byte range, not its
		// whole shard, which the prefetcher brings in plan order meanwhile):
		// decode workers then never wait on the network, so neither
		// readahead nor another view's builds hold them while this batch's
		// source is slow, and a dead source fails the batch within one
		// retry budget.
		if p.prefetch != nil {
			if err := rlds.FetchEpisodes(ctx, p.Store, p.Mix.EpisodeRefs(pl.Batch(n, nil))); err != nil {
				p.BuildLatency.Observe(time.Since(start))
				return nil, fmt.Errorf("batch %d: %w", n, err)
			}
		}
		meta, err := b.Build(ctx, n, buf)
		p.BuildLatency.Observe(time.Since(start))
		return meta, err
	}
	limit := pl.NumBatches() // the val view is one pass
	if train {
		limit = pl.MaxBatch() + 1 // train serves later epochs by name
	}
	return batch.NewScheduler(batch.Config{
		Len:       pl.NumBatches(),
		Limit:     limit,
		Shape:     b.Shape(),
		Meta:      meta != config.MetaNone,
		Build:     build,
		Budget:    budget,
		Readahead: p.opts.Readahead,
		Memfd:     p.opts.Memfd,
	})
}

// batchMemShare is the share of --mem that holds one rank's view's
// batches.
func (p *Pipeline) batchMemShare(val bool) float64 {
	share := batchShare * 3 / 4
	switch {
	case p.Val == nil:
		share = batchShare
	case val:
		share = batchShare / 4
	}
	return share / float64(len(p.Ranks))
}

// memPerReader is the --mem that holds one more batch of the view: each
// reader holds the batch of the file it has open (open files pin their
// batch), so N concurrent readers need (N+1) times this, the extra batch
// being built while they read. Rounded up to a MiB.
func (p *Pipeline) memPerReader(s *batch.Scheduler, val bool) int64 {
	const mib = 1 << 20
	per := int64(math.Ceil(float64(s.BatchBytes()) / p.batchMemShare(val)))
	return (per + mib - 1) / mib * mib
}

// memoryInfo is info.json's memory section: what --mem holds, and the
// smallest useful --mem.
func (p *Pipeline) memoryInfo() map[string]any {
	per := p.memPerReader(p.Train, false)
	slots := p.Train.Budget() / p.Train.BatchBytes()
	rule := "--mem of (readers + 1) * min_mem_bytes_per_reader or more, readers being the batch files open at once"
	if len(p.Ranks) > 1 {
		rule += " in one rank"
	}
	return map[string]any{
		"budget_bytes":                p.opts.Mem,
		"batch_bytes":                 p.Train.BatchBytes(),
		"batch_budget_bytes":          p.Train.Budget(),
		"max_concurrent_open_batches": slots,
		"max_concurrent_readers":      max(slots-1, 1),
		"min_mem_bytes_per_reader":    per,
		"min_mem_bytes":               2 * per,
		"min_mem_rule":                rule,
	}
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

// Info returns the top directory's info.json: the one rank's, or with
// several (MultiRank) the daemon's, which lists the ranks and leaves the
// views to each rank's own (Rank.Info).
func (p *Pipeline) Info() []byte {
	if p.MultiRank() {
		p.infoMu.Lock()
		defer p.infoMu.Unlock()
		return p.info
	}
	return p.RankInfo(p.Ranks[0])
}

// RankInfo returns rank r's info.json.
func (p *Pipeline) RankInfo(r *Rank) []byte {
	p.infoMu.Lock()
	defer p.infoMu.Unlock()
	return r.info
}

// Serving is how a mount serves its .npy files, for info.json: Mode is
// fs's name for it (passthrough, page-cache, direct-io); Refused, when
// set, is why passthrough was not used.
type Serving struct {
	Mode    string `json:"mode"`
	Refused string `json:"passthrough_refused,omitempty"`
	// PassthroughOpens, when set, counts the opens the kernel serves by
	// passthrough, for stats.json.
	PassthroughOpens func() int64 `json:"-"`
}

// SetServing records how the mount serves .npy files in every info.json.
// Without passthrough, batches built from now on go back to heap buffers,
// which are reused from batch to batch.
func (p *Pipeline) SetServing(s Serving) error {
	if s.Mode != "passthrough" && p.opts.Memfd {
		debug.SetMemoryLimit(gcLimit(p.opts.Mem, false))
		for _, r := range p.Ranks {
			r.Train.SetMemfd(false)
			if r.Val != nil {
				r.Val.SetMemfd(false)
			}
		}
	}
	p.infoMu.Lock()
	defer p.infoMu.Unlock()
	p.serving = &s
	for _, r := range p.Ranks {
		info, err := p.infoJSON(r)
		if err != nil {
			return err
		}
		r.info = info
	}
	info, err := p.infoJSON(nil)
	if err != nil {
		return err
	}
	p.info = info
	return nil
}

// infoJSON is the static description of rank r's views, or with r nil of
// the daemon.
func (p *Pipeline) infoJSON(r *Rank) ([]byte, error) {
	view := func(s *batch.Scheduler, pl *plan.Plan) map[string]any {
		if s == nil {
			return nil
		}
		return map[string]any{
			"num_batches":                 s.Len(),
			"max_batch":                   s.Limit() - 1,
			"npy_bytes":                   s.NPYSize(),
			"plan":                        pl.Info(),
			"batch_budget_bytes":          s.Budget(),
			"max_concurrent_open_batches": s.Budget() / s.BatchBytes(),
		}
	}
	shape := p.Train.Shape()
	info := map[string]any{
		"oxefs_version": p.opts.Version,
		"pid":           os.Getpid(),
		"config":        p.Mix.Config,
		"seed":          p.Mix.Config.Seed,
		"batch_size":    shape[0],
		"frames": map[string]any{
			"shape":  shape,
			"dtype":  "uint8",
			"layout": p.Mix.Config.Layout,
			"decode": p.Mix.Config.Decode,
		},
		"meta":       p.Mix.Config.Meta,
		"decoder":    p.Pool.Decoder(),
		"world":      p.Mix.World,
		"action_dim": p.Mix.MaxActionDim,
		"state_dim":  p.Mix.MaxStateDim,
		"datasets":   p.datasetDims(),
		"memory":     p.memoryInfo(),
	}
	if p.serving != nil {
		info["serving"] = p.serving
	}
	if p.MultiRank() {
		ranks := make([]int, len(p.Ranks))
		for i, r := range p.Ranks {
			ranks[i] = r.Rank
		}
		info["ranks"] = ranks
	}
	if r == nil {
		info["num_batches"] = p.Train.Len()
		info["rank_dirs"] = "rank/R: info.json, stats.json, batches/, val/batches/ of each rank R in ranks"
		return json.MarshalIndent(info, "", "  ")
	}
	info["rank"] = r.Rank
	info["num_batches"] = r.Train.Len()
	info["train"] = view(r.Train, r.plans.Train)
	info["val"] = view(r.Val, r.plans.Val)
	return json.MarshalIndent(info, "", "  ")
}

// datasetDims is info.json's datasets section: each dataset's own action
// and state widths, the real dimensions in the padded arrays (the masks in
// each batch's metadata say the same per sample), and its normalisation
// statistics once computed (oxefs stats).
func (p *Pipeline) datasetDims() map[string]any {
	out := make(map[string]any, len(p.Mix.Datasets))
	for _, d := range p.Mix.Datasets {
		ds := map[string]any{"action_dim": d.ActionDim, "state_dim": d.StateDim}
		if d.Norm != nil {
			ds["stats"] = d.Norm
		}
		out[d.Config.Name] = ds
	}
	return out
}

// Stats returns the top directory's stats.json: the pipeline's live
// state, with the views of the one rank, or with several (MultiRank) of
// every rank under "ranks".
func (p *Pipeline) Stats() []byte {
	if p.MultiRank() {
		return p.stats(nil)
	}
	return p.stats(p.Ranks[0])
}

// RankStats returns rank r's stats.json: the pipeline's live state, with
// r's views. The caches, fetches and samples are the daemon's, shared by
// every rank.
func (p *Pipeline) RankStats(r *Rank) []byte { return p.stats(r) }

func (p *Pipeline) stats(r *Rank) []byte {
	rss, peak, shmem := ReadRSS()
	st := &p.Storage.Fetch
	ram, disk := &p.Store.Stats, &p.Storage.Disk.Stats
	subs, bad := p.Builds.Substitutions()
	perDataset := func(bs *BuildStats) map[string]int64 {
		out := map[string]int64{}
		for i, d := range p.Mix.Datasets {
			if n := bs.Samples[i].Load(); n > 0 || bs == p.Builds {
				out[d.Config.Name] = n
			}
		}
		return out
	}
	sched := func(s *batch.Scheduler) map[string]any {
		if s == nil {
			return nil
		}
		return map[string]any{
			"requests":       s.Stats.Requests.Load(),
			"builds":         s.Stats.Builds.Load(),
			"build_errors":   s.Stats.BuildErrors.Load(),
			"ready_hits":     s.Stats.ReadyHits.Load(),
			"in_flight_hits": s.Stats.InFlightHits.Load(),
			"readahead_hits": s.Stats.ReadaheadHits.Load(),
			"evictions":      s.Stats.Evictions.Load(),
			"memory_waits":   s.Stats.MemoryWaits.Load(),
			"waiting":        s.Waiting(),
			"held_bytes":     s.Held(),
			"budget_bytes":   s.Budget(),
		}
	}
	out := map[string]any{
		"uptime_s":      time.Since(p.started).Seconds(),
		"build_latency": p.BuildLatency.Summary(),
		"read_latency":  p.ReadLatency.Summary(),
		"served_bytes":  p.ServedBytes.Load(),
		"ram_cache": map[string]any{
			"hits": p.Episodes.Stats.Hits.Load(), "misses": p.Episodes.Stats.Misses.Load(),
			"hit_rate":        rate(p.Episodes.Stats.Hits.Load(), p.Episodes.Stats.Misses.Load()),
			"episodes_loaded": ram.EpisodesLoaded.Load(), "bytes_read": ram.BytesRead.Load(),
		},
		"disk_cache": map[string]any{
			"hits": disk.Hits.Load(), "misses": disk.Misses.Load(),
			"hit_rate":  rate(disk.Hits.Load(), disk.Misses.Load()),
			"evictions": disk.Evictions.Load(), "bytes_written": disk.BytesWritten.Load(),
			"budget_bytes":  p.Storage.Disk.Budget(),
			"ranges_reused": disk.RangesReused.Load(),
		},
		"fetch": map[string]any{
			"bytes": st.Bytes.Load(), "attempts": st.Attempts.Load(),
			"retries": st.Retries.Load(), "failures": st.Failures.Load(),
			"header_hops": ram.Hops.Load(), "records": disk.RangesFetched.Load(),
			"record_bytes": disk.RangeBytes.Load(), "records_from_downloads": disk.RangesFromFill.Load(),
			"abandoned_for_priority": disk.Abandoned.Load(),
		},
		"memory": map[string]any{
			"rss_bytes": rss, "peak_rss_bytes": peak, "shmem_bytes": shmem, "budget_bytes": p.opts.Mem,
		},
		"samples_per_dataset": perDataset(p.Builds),
		"substitutions":       subs,
		"bad_episodes":        bad,
	}
	if r != nil {
		out["train"], out["val"] = sched(r.Train), sched(r.Val)
	} else {
		ranks := map[string]any{}
		for _, r := range p.Ranks {
			ranks[strconv.Itoa(r.Rank)] = map[string]any{"train": sched(r.Train), "val": sched(r.Val)}
		}
		out["ranks"] = ranks
	}
	out["decode_memory"] = decodeMemoryStats(p.decodeMem)
	if is := p.videoIndex.Stats(); is.Parses > 0 {
		out["video_index"] = map[string]any{
			"budget_bytes": is.Bound, "held_bytes": is.Bytes, "files": is.Files,
			"hits": is.Hits, "parses": is.Parses, "evicted": is.Evicted,
		}
	}
	p.infoMu.Lock()
	if s := p.serving; s != nil {
		sv := map[string]any{"mode": s.Mode}
		if s.PassthroughOpens != nil {
			sv["passthrough_opens"] = s.PassthroughOpens()
		}
		out["serving"] = sv
	}
	p.infoMu.Unlock()
	if u := p.Builds.Unusable(); len(u) > 0 {
		out["unusable_datasets"] = u
	}
	if p.valStats != nil {
		vsubs, vbad := p.valStats.Substitutions()
		out["val_samples_per_dataset"] = perDataset(p.valStats)
		out["val_substitutions"] = vsubs
		out["val_bad_episodes"] = vbad
		if u := p.valStats.Unusable(); len(u) > 0 {
			out["val_unusable_datasets"] = u
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Appendf(nil, `{"error": %q}`, err.Error())
	}
	return append(b, '\n')
}

// decodeMemoryStats reports the decode budget: bytes reserved now and at
// most, and images refused as needing more than all of it.
func decodeMemoryStats(m *frames.DecodeMemory) map[string]any {
	held, peak, refused := m.Stats()
	return map[string]any{"budget_bytes": m.Limit(), "held_bytes": held, "peak_bytes": peak, "images_refused": refused}
}

func rate(hits, misses int64) float64 {
	if hits+misses == 0 {
		return 0
	}
	return float64(hits) / float64(hits+misses)
}

// ReadRSS returns the process's resident set size now and at its peak
// (VmRSS, VmHWM) and the shared memory in it (RssShmem: batches in memfds,
// which VmRSS and VmHWM include), in bytes; zeros where /proc is not
// readable.
func ReadRSS() (now, peak, shmem int64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM" && key != "RssShmem") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "VmRSS":
			now = kb << 10
		case "VmHWM":
			peak = kb << 10
		default:
			shmem = kb << 10
		}
	}
	return now, peak, shmem
}

// prefetcher fetches the shards the next batches need into the disk cache,
// in plan order, while builds go on. Only remote datasets need it: it is nil
// when the mix has none.
type prefetcher struct {
	store *store.Store
	mix   *Mix
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}
	done   chan struct{}

	mu   sync.Mutex
	plan *plan.Plan // guarded by mu: the view read last
	at   int64      // guarded by mu: the batch to prefetch from
	last int64      // guarded by mu: where the last prefetch started
}

// prefetchAhead is how many batches ahead the prefetcher looks.
const prefetchAhead = 64

func newPrefetcher(st *store.Store, m *Mix, log *slog.Logger) *prefetcher {
	remote := false
	for _, d := range m.Datasets {
		if _, local := d.Data.Backend().(storage.Filer); !local && d.RLDS() != nil {
			remote = true
		}
	}
	if !remote {
		return nil
	}
	pf := &prefetcher{store: st, mix: m, log: log, wake: make(chan struct{}, 1), done: make(chan struct{}), last: -prefetchAhead}
	pf.ctx, pf.cancel = context.WithCancel(context.Background())
	go pf.run()
	return pf
}

// advance says that batch n of plan is being built.
func (pf *prefetcher) advance(pl *plan.Plan, n int64) {
	if pf == nil {
		return
	}
	pf.mu.Lock()
	pf.plan, pf.at = pl, n
	pf.mu.Unlock()
	select {
	case pf.wake <- struct{}{}:
	default:
	}
}

func (pf *prefetcher) run() {
	defer close(pf.done)
	for {
		select {
		case <-pf.ctx.Done():
			return
		case <-pf.wake:
		}
		pf.mu.Lock()
		pl, at, last := pf.plan, pf.at, pf.last
		if at >= last && at < last+prefetchAhead/2 {
			pf.mu.Unlock()
			continue // the last prefetch still covers this stretch
		}
		pf.last = at
		pf.mu.Unlock()
		refs := pf.mix.ShardRefs(pl.ShardsAhead(at, prefetchAhead, nil))
		if _, err := rlds.Prefetch(pf.ctx, pf.store, refs, 4, nil); err != nil && pf.ctx.Err() == nil {
			pf.log.Warn("prefetch", "err", err)
		}
	}
}

func (pf *prefetcher) close() {
	pf.cancel()
	<-pf.done
}
