package loader

import (
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/episodes"
	"github.com/oxefs/oxefs/norm"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/storage"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/oxefs/oxefs/assemble"
	"github.com/oxefs/oxefs/bench"
	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/steps"
)

// openParallel bounds the datasets whose metadata is fetched at once.
const openParallel = 8

// Mix is an opened mix: its datasets, validated against their metadata,
// and its plans.
type Mix struct {
	// Config is the config as loaded, with each dataset's image_key
	// resolved when the config left it out.
	Config *config.Config
	// Datasets are the datasets with a weight, in config order;
	// plan.Sample.Dataset indexes this slice, in both views.
	Datasets []*Dataset
	// Train plans the batches; Val the validation view, nil when no
	// dataset names a val_split.
	Train, Val *plan.Plan
	// MaxActionDim and MaxStateDim are the widest action and state over
	// the mix: per-sample actions and states are zero-padded to them.
	MaxActionDim, MaxStateDim int
	// Ranks are the plans of every rank served (MixOptions.Ranks), in
	// order; Train and Val are the first's.
	Ranks []RankPlans
	// World is the number of data-parallel ranks the plans are shared by.
	World int

	kind mixKind // the kind of sample (kindOf)
}

// RankPlans are one rank's views: global batches rank, rank+world, …
// renumbered from 0.
type RankPlans struct {
	Rank       int
	Train, Val *plan.Plan
}

// Dataset is one opened dataset of a mix.
type Dataset struct {
	Config config.DatasetConfig
	// Data is the dataset as its format opened it; Episodes reads its
	// episodes through the RAM cache (MixOptions.Episodes), or straight
	// from Data without one.
	Data     format.Dataset
	Episodes episode.Dataset
	// Image is the image_key feature (shape, encoding).
	Image episode.Feature
	// ActionDim is the sum of the action keys' per-step sizes; StateDim the
	// state key's per-step size (0 when not configured).
	ActionDim, StateDim int
	// Train is the split selection the train view samples from; Val the
	// val split's, nil without one.
	Train, Val []episode.Range
	// Norm holds the dataset's normalisation statistics, once loaded or
	// computed (Mix.NormStats); nil before.
	Norm *norm.Stats
	// Step samples (a `sample` block) only: the dataset's camera per slot
	// (a slot left out is zeros), its deltas in steps, and the fps they
	// were resolved with (0: none).
	Cameras map[string]string
	Deltas  steps.Deltas
	FPS     float64
}

// MixOptions configure Open.
type MixOptions struct {
	// Rank and World shard both views: rank r of w sees global batches r,
	// r+w, … renumbered from 0. World 0 means 1. Ranks, when set, plans
	// several ranks of the same world at once (Mix.Ranks) and Rank is
	// ignored.
	Rank, World int
	Ranks       []int
	// Workers bounds the shards read at once while indexing episode
	// lengths; 0 means GOMAXPROCS.
	Workers int
	// Progress, if set, is told how episode-length indexing advances
	// (samples_per_episode 0 with no index yet). Calls are serialised.
	Progress func(IndexProgress)
	// Episodes, when not nil, keeps loaded episodes in RAM for every
	// dataset of the mix.
	Episodes *episodes.Cache
	// Offline requires the store to be offline (store.Options.Offline) and
	// checks, before anything is planned, that the cache holds everything
	// the mix needs: see CheckOffline.
	Offline bool
	Log     *slog.Logger
}

// IndexProgress is the state of one dataset's pass over its episodes:
// episode-length indexing, or the statistics pass (Stats set).
type IndexProgress struct {
	Dataset     string
	Done, Total int64
	Stats       bool
}

// OpenMix opens the config's datasets with env, validates the config
// against their metadata (splits, feature keys and kinds), builds the
// episode-length index where samples_per_episode 0 needs it and it is
// missing, and builds the plans. Datasets with weight ≤ 0 are dropped
// first, without being opened. Config problems come back together as
// ConfigErrors naming the line, dataset, field and the valid choices.
func OpenMix(ctx context.Context, cfg *config.Config, env *format.Env, opts MixOptions) (*Mix, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	world := max(opts.World, 1)
	ranks := opts.Ranks
	if len(ranks) == 0 {
		ranks = []int{opts.Rank}
	}
	if err := CheckRanks(ranks, world); err != nil {
		return nil, err
	}
	resolved := *cfg
	resolved.Datasets = slices.Clone(cfg.Datasets)
	m := &Mix{Config: &resolved, World: world, kind: kindOf(&resolved)}
	var active []*config.DatasetConfig
	for i := range resolved.Datasets {
		d := &resolved.Datasets[i]
		if !d.Sampled() {
			log.Info("dataset dropped: weight ≤ 0", "dataset", d.Name, "weight", d.Weight.String())
			continue
		}
		active = append(active, d)
	}
	if opts.Offline {
		if err := checkOffline(ctx, active, cfg.SamplesPerEpisode == 0, cfg, env); err != nil {
			return nil, err
		}
	}
	opened, err := openAll(ctx, active, cfg, env)
	if err != nil {
		return nil, err
	}
	for j, o := range opened {
		o.ds.Episodes = o.ds.Data
		o.ds.Train, o.ds.Val = o.train, o.val
		if opts.Episodes != nil {
			o.ds.Episodes = opts.Episodes.Wrap(o.ds.Data)
		}
		*active[j] = o.ds.Config // with the image key resolved
		m.Datasets = append(m.Datasets, o.ds)
		m.MaxActionDim = max(m.MaxActionDim, o.ds.ActionDim)
		m.MaxStateDim = max(m.MaxStateDim, o.ds.StateDim)
	}
	if err := m.plan(ctx, opened, opts); err != nil {
		return nil, err
	}
	if n := m.Train.NumBatches(); world > 1 && n%int64(world) != 0 {
		log.Info(fmt.Sprintf("the train epoch has %d batches for %d ranks: every rank lists %d, and ranks %d..%d take their last from the next epoch",
			n, world, (n+int64(world)-1)/int64(world), n%int64(world), world-1))
	}
	for _, r := range ranks {
		rp := RankPlans{Rank: r}
		if rp.Train, err = m.Train.Shard(r, world); err != nil {
			return nil, err
		}
		if m.Val != nil {
			if rp.Val, err = m.Val.Shard(r, world); err != nil {
				return nil, err
			}
		}
		m.Ranks = append(m.Ranks, rp)
	}
	m.Train, m.Val = m.Ranks[0].Train, m.Ranks[0].Val
	return m, nil
}

// buildDatasets is what the batch builders read of the mix's datasets.
func (m *Mix) buildDatasets() []assemble.Dataset {
	out := make([]assemble.Dataset, len(m.Datasets))
	for i, d := range m.Datasets {
		out[i] = assemble.Dataset{Name: d.Config.Name, Episodes: d.Episodes, EpisodeID: d.Data.EpisodeID}
	}
	return out
}

// BareDatasets is what the bare decode loop (bench.BareDecode) reads of
// the mix's datasets.
func (m *Mix) BareDatasets() []bench.BareDataset {
	out := make([]bench.BareDataset, len(m.Datasets))
	for i, d := range m.Datasets {
		out[i] = bench.BareDataset{Episodes: d.Episodes, ImageKey: d.Image.Key, Frames: m.Config.FramesOf(&d.Config)}
		if len(d.Image.Shape) >= 2 {
			out[i].Height, out[i].Width = d.Image.Shape[0], d.Image.Shape[1]
		}
	}
	return out
}

// CheckRanks refuses ranks outside 0..world-1 and repeated ranks, naming
// the valid range.
func CheckRanks(ranks []int, world int) error {
	seen := make(map[int]bool, len(ranks))
	for _, r := range ranks {
		if r < 0 || r >= world {
			return fmt.Errorf("rank %d of world %d: ranks are 0..%d", r, world, world-1)
		}
		if seen[r] {
			return fmt.Errorf("rank %d is listed twice", r)
		}
		seen[r] = true
	}
	return nil
}

// opened is one dataset after openDataset: the dataset and its resolved
// train and val selections.
type opened struct {
	ds         *Dataset
	train, val []episode.Range
}

// joinRanges returns the train selection followed by the val one, in a
// new slice: every episode a dataset's views read.
func joinRanges(train, val []episode.Range) []episode.Range {
	return append(slices.Clone(train), val...)
}

// openAll opens the datasets at most openParallel at a time and returns
// every config problem they show, in line order.
//
// A source that gave up (storage.ErrUnavailable: every retry failed for
// --fetch-timeout) stops the open: the datasets not yet opened are not
// tried, and those being opened are abandoned, so a mix of many datasets
// behind one dead endpoint fails within one fetch's bound rather than one
// per wave of openParallel. The error names the sources that gave up and
// how many datasets were left untried.
func openAll(ctx context.Context, dcs []*config.DatasetConfig, cfg *config.Config, env *format.Env) ([]opened, error) {
	out := make([]opened, len(dcs))
	errs := make([]config.ConfigErrors, len(dcs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(openParallel)
	octx, giveUp := context.WithCancel(gctx)
	defer giveUp()
	for j, dc := range dcs {
		g.Go(func() error {
			if octx.Err() != nil {
				return gctx.Err() // another source gave up: not tried
			}
			var unavailable bool
			out[j].ds, out[j].train, out[j].val, errs[j], unavailable = openDataset(octx, dc, cfg, env)
			if unavailable {
				giveUp()
			} else if octx.Err() != nil && gctx.Err() == nil {
				errs[j] = nil // abandoned as another source gave up
			}
			return gctx.Err()
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var all config.ConfigErrors
	untried := 0
	for j, e := range errs {
		all = append(all, e...)
		if e == nil && out[j].ds == nil {
			untried++
		}
	}
	if len(all) > 0 {
		sort.SliceStable(all, func(i, j int) bool { return all[i].Line < all[j].Line })
		if untried > 0 {
			all = append(all, &config.ConfigError{Msg: fmt.Sprintf("%d more datasets not opened: a source gave up after --fetch-timeout (above)", untried)})
		}
		return nil, all
	}
	if err := useCameras(out); err != nil {
		return nil, err
	}
	return out, nil
}

// useCameras tells each dataset that can leave cameras out
// (format.CameraSelector) which it reads: the image keys of every entry
// over its source, since entries over one source share its parsed
// episodes (package episodes).
func useCameras(out []opened) error {
	keys := map[string][]string{}
	for _, o := range out {
		loc := o.ds.Data.Info().Location
		if k := o.ds.Config.ImageKey; k != "" && !slices.Contains(keys[loc], k) {
			keys[loc] = append(keys[loc], k)
		}
		for _, slot := range slices.Sorted(maps.Keys(o.ds.Cameras)) {
			if k := o.ds.Cameras[slot]; !slices.Contains(keys[loc], k) {
				keys[loc] = append(keys[loc], k)
			}
		}
	}
	for _, o := range out {
		if cs, ok := o.ds.Data.(format.CameraSelector); ok {
			if err := cs.UseCameras(keys[o.ds.Data.Info().Location]); err != nil {
				return err
			}
		}
	}
	return nil
}

// plan builds the train and val plans of the opened datasets, indexing
// episode lengths first when samples_per_episode is 0.
func (m *Mix) plan(ctx context.Context, opened []opened, opts MixOptions) error {
	cfg := m.Config
	lengths := make([]map[string][]int32, len(opened))
	if cfg.SamplesPerEpisode == 0 {
		var mu sync.Mutex
		for j, o := range opened {
			l, err := indexLengths(ctx, o.ds, joinRanges(o.train, o.val), opts, &mu)
			if err != nil {
				return err
			}
			lengths[j] = l
		}
	} else {
		// Not needed to plan, but an index that exists tells how many
		// episodes are too short (info.json) and whether any is long enough.
		for j, o := range opened {
			lengths[j], _ = knownSplitLengths(o.ds, joinRanges(o.train, o.val))
		}
	}
	popts := plan.Options{
		Seed:              cfg.Seed,
		BatchSize:         cfg.BatchSize,
		SamplesPerEpisode: cfg.SamplesPerEpisode,
		WindowShards:      cfg.WindowShards,
		NumBatches:        cfg.NumBatches,
	}
	train := make([]plan.DatasetShape, len(opened))
	val := make([]plan.DatasetShape, len(opened))
	hasVal := false
	for j, o := range opened {
		dc := &o.ds.Config
		var err error
		if train[j], err = shapeOf(o.ds, dc.Split, o.train, lengths[j], m.kind.minOffset(dc)); err != nil {
			return err
		}
		// A dataset without a val split is left out of the val view, but
		// kept with no weight so that indices agree between the views.
		val[j] = plan.DatasetShape{Name: dc.Name, Source: dc.Source}
		if dc.ValSplit != "" {
			hasVal = true
			if val[j], err = shapeOf(o.ds, dc.ValSplit, o.val, lengths[j], m.kind.minOffset(dc)); err != nil {
				return err
			}
		}
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var (
		errs config.ConfigErrors
		fits []lengthFit
	)
	for j, o := range opened {
		dc := &o.ds.Config
		e, fit := m.kind.checkLength(ctx, m, o.ds, "split", dc.Split, o.train, train[j].Lengths, log)
		errs, fits = append(errs, e...), append(fits, fit)
		if dc.ValSplit != "" {
			e, fit := m.kind.checkLength(ctx, m, o.ds, "val_split", dc.ValSplit, o.val, val[j].Lengths, log)
			errs, fits = append(errs, e...), append(fits, fit)
		}
	}
	errs = append(errs, checkChunk(fits, log)...)
	if len(errs) > 0 {
		return errs
	}
	var err error
	if m.Train, err = plan.New(popts, train); err != nil {
		return err
	}
	if hasVal {
		popts.NumBatches = 0 // the val view is one pass
		if m.Val, err = plan.New(popts, val); err != nil {
			return fmt.Errorf("val view: %w", err)
		}
	}
	return nil
}

// ShardRefs maps a plan's shard keys (plan.Plan.Shards, plan.Plan.ShardsAhead,
// plan.Plan.DatasetShards of m.Train or m.Val) to shard references, for
// format.Prefetch. Shards of datasets whose format fetches nothing ahead
// (format.ShardFetcher) are left out.
func (m *Mix) ShardRefs(keys []plan.ShardKey) []format.ShardRef {
	out := make([]format.ShardRef, 0, len(keys))
	for _, k := range keys {
		if d := m.Datasets[k.Dataset].Data; format.FetcherOf(d) != nil {
			out = append(out, format.ShardRef{Dataset: d, Split: k.Split, Shard: k.Shard})
		}
	}
	return out
}

// EpisodeRefs names the episodes of samples, for format.FetchEpisodes.
// Episodes of datasets whose format fetches nothing ahead are left out.
func (m *Mix) EpisodeRefs(samples []plan.Sample) []format.EpisodeRef {
	out := make([]format.EpisodeRef, 0, len(samples))
	for _, s := range samples {
		if d := m.Datasets[s.Dataset].Data; format.FetcherOf(d) != nil {
			out = append(out, format.EpisodeRef{Dataset: d, Key: s.Episode})
		}
	}
	return out
}

// openDataset opens one dataset and checks its config against the
// metadata.
func openDataset(ctx context.Context, dc *config.DatasetConfig, cfg *config.Config, env *format.Env) (_ *Dataset, train, val []episode.Range, errs config.ConfigErrors, unavailable bool) {
	add := func(key, format string, args ...any) {
		errs = append(errs, &config.ConfigError{Line: dc.Line(key), Dataset: dc.Name, Field: key, Msg: fmt.Sprintf(format, args...)})
	}
	src, err := storage.Open(ctx, dc.Source, sourceOptions(dc, env.Offline()))
	if err != nil {
		add("source", "%v", err)
		return nil, nil, nil, errs, errors.Is(err, storage.ErrUnavailable)
	}
	data, err := format.Open(ctx, dc.Name, src, env)
	if err != nil {
		add("source", "%v", err)
		return nil, nil, nil, errs, errors.Is(err, storage.ErrUnavailable)
	}
	d := &Dataset{Config: *dc, Data: data}
	train, err = data.Select(dc.Split)
	if err != nil {
		add("split", "%v", err)
	}
	if dc.ValSplit != "" {
		if val, err = data.Select(dc.ValSplit); err != nil {
			add("val_split", "%v", err)
		}
	}
	if sc, ok := data.(format.SplitChecker); ok {
		checkShards(sc, train, val, add)
	}
	use, ferrs := dc.CheckFeatures(configFeatures(data.Info().Features.All()))
	bad := func(key, format string, args ...any) *config.ConfigError {
		return &config.ConfigError{Line: dc.Line(key), Dataset: dc.Name, Field: key, Msg: fmt.Sprintf(format, args...)}
	}
	kerrs := kindOf(cfg).openDataset(d, use, ferrs, bad)
	errs = append(errs, kerrs...)
	d.ActionDim, d.StateDim = use.ActionDim, use.StateDim
	return d, train, val, errs, false
}

// checkShards checks the files of every split the selections read against
// the dataset's metadata (format.SplitChecker), once per split.
func checkShards(data format.SplitChecker, train, val []episode.Range, add func(key, format string, args ...any)) {
	checked := map[string]bool{}
	for _, sel := range []struct {
		field  string
		ranges []episode.Range
	}{{"split", train}, {"val_split", val}} {
		for _, r := range sel.ranges {
			if checked[r.Split] {
				continue
			}
			checked[r.Split] = true
			if err := data.CheckSplit(r.Split); err != nil {
				add(sel.field, "%v", err)
			}
		}
	}
}

// configFeatures describes a dataset's features to the config rules.
func configFeatures(fs []episode.Feature) []config.Feature {
	out := make([]config.Feature, len(fs))
	for i, f := range fs {
		out[i] = config.Feature{Key: f.Key, Kind: f.Kind, DType: f.DType, Shape: f.Shape, PerStep: f.PerStep, Ragged: f.Ragged}
	}
	return out
}

// indexLengths returns the length index holding every split the ranges
// read, building what is missing.
func indexLengths(ctx context.Context, d *Dataset, ranges []episode.Range, opts MixOptions, mu *sync.Mutex) (map[string][]int32, error) {
	data, ok := d.Data.(format.LengthIndexer)
	if !ok {
		if ls, ok := knownSplitLengths(d, ranges); ok {
			return ls, nil // the format stores them
		}
		return nil, fmt.Errorf("dataset %s: no episode lengths for samples_per_episode 0", d.Config.Name)
	}
	var splits []string
	for _, r := range ranges {
		if !slices.Contains(splits, r.Split) {
			splits = append(splits, r.Split)
		}
	}
	sort.Strings(splits)
	have, err := data.LoadLengths()
	var total int64
	for _, s := range splits {
		if err == nil {
			if _, ok := have[s]; ok {
				continue
			}
		}
		if si, ok := d.Data.Info().Split(s); ok {
			total += si.Episodes()
		}
	}
	if total == 0 && err == nil {
		return have, nil
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var done int64
	report := func(n int) {
		if opts.Progress == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		done += int64(n)
		opts.Progress(IndexProgress{Dataset: d.Config.Name, Done: done, Total: total})
	}
	report(0)
	l, err := data.BuildLengths(ctx, splits, workers, report)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: episode lengths (samples_per_episode 0): %w", d.Config.Name, err)
	}
	return l, nil
}

// shapeOf describes a dataset's selection to the plan.
func shapeOf(d *Dataset, split string, ranges []episode.Range, lengths map[string][]int32, minOffset int) (plan.DatasetShape, error) {
	s := plan.DatasetShape{
		Name:      d.Config.Name,
		Source:    d.Config.Source,
		Split:     split,
		Weight:    d.Config.Weight,
		MinOffset: minOffset,
	}
	segs, err := d.Data.Info().Segments(ranges)
	if err != nil {
		return s, fmt.Errorf("dataset %s: %w", d.Config.Name, err)
	}
	s.Segments = segs
	if lengths != nil {
		for _, r := range ranges {
			ls, ok := lengths[r.Split]
			if !ok || int64(len(ls)) < r.To {
				return s, fmt.Errorf("dataset %s: the episode-length index lacks split %s", d.Config.Name, r.Split)
			}
			s.Lengths = append(s.Lengths, ls[r.From:r.To]...)
		}
	}
	return s, nil
}
