package loader

import (
	"encoding/json"
	"maps"
	"math"
	"os"
	"runtime/debug"
	"slices"

	"github.com/oxefs/oxefs/augment"
	"github.com/oxefs/oxefs/batch"
	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/norm"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/storage"
)

// info is info.json: the static description of a rank's views, or of the
// daemon when it serves several ranks (MultiRank). Fields are in the
// order of their JSON names.
type info struct {
	ActionDim int `json:"action_dim"`
	// Augment lists the arrays that record augmentation parameters and
	// what their columns hold; absent without augmentation.
	Augment *augmentInfo `json:"augment,omitempty"`
	// AugmentOff: --augment off dropped the config's augment blocks.
	AugmentOff bool                   `json:"augment_off,omitempty"`
	BatchSize  int                    `json:"batch_size"`
	Config     *config.Config         `json:"config"`
	Datasets   map[string]datasetInfo `json:"datasets"`
	Decoder    string                 `json:"decoder"`
	// Files are the files of a batch after "NNNNNN." (and its .json, with
	// meta): "npy" for frame pairs (and "augment.npy" when augmented),
	// each array's file for step samples.
	Files        []string        `json:"files"`
	Frames       *framesInfo     `json:"frames,omitempty"` // pair mode
	Memory       memoryInfo      `json:"memory"`
	Meta         config.MetaMode `json:"meta"`
	NumBatches   int64           `json:"num_batches"`
	OxefsVersion string          `json:"oxefs_version"`
	PID          int             `json:"pid"`
	// Rank, Train and Val are a rank's; the daemon's document has
	// RankDirs instead. Ranks lists the ranks served by directory.
	Rank     *int        `json:"rank,omitempty"`
	RankDirs string      `json:"rank_dirs,omitempty"`
	Ranks    []int       `json:"ranks,omitempty"`
	Sample   *sampleInfo `json:"sample,omitempty"` // step mode
	Seed     uint64      `json:"seed"`
	Serving  *Serving    `json:"serving,omitempty"`
	StateDim int         `json:"state_dim"`
	Train    *viewField  `json:"train,omitempty"`
	Val      *viewField  `json:"val,omitempty"`
	World    int         `json:"world"`
}

// augmentInfo is info.json's "augment": each array that records a camera
// slot's augmentation parameters ([B, len(Columns)] float32, one row per
// sample, the same for every frame of the slot in it), its columns and
// what each holds. The val view records the parameters it applied (its
// centre crop, else the identity).
type augmentInfo struct {
	Arrays  []string          `json:"arrays"`
	Columns []augmentColumn   `json:"columns"`
	Slots   map[string]string `json:"slots"` // array per camera slot
	// In says where the arrays are: a .npy each, or the .json's keys.
	In string `json:"in"`
}

type augmentColumn struct {
	Name    string `json:"name"`
	Meaning string `json:"meaning"`
}

// newAugmentInfo describes arrays (by camera slot), nil when there are
// none.
func newAugmentInfo(slots map[string]string) *augmentInfo {
	if len(slots) == 0 {
		return nil
	}
	a := &augmentInfo{Slots: slots}
	for _, name := range slices.Sorted(maps.Values(slots)) {
		a.Arrays = append(a.Arrays, name)
	}
	doc := augment.ColumnDoc()
	for i, c := range augment.Columns() {
		a.Columns = append(a.Columns, augmentColumn{Name: c, Meaning: doc[i]})
	}
	return a
}

// framesInfo describes the batch array.
type framesInfo struct {
	Decode config.DecodeMode `json:"decode"`
	// JPEGSize names the file of the frames' JPEG sizes (decode: gpu).
	JPEGSize string        `json:"jpeg_size,omitempty"`
	DType    string        `json:"dtype"`
	Layout   config.Layout `json:"layout"`
	Shape    []int         `json:"shape"`
}

// datasetInfo is info.json's entry for one dataset: its own action and
// state widths, the real dimensions in the padded arrays (the masks in
// each batch's metadata say the same per sample), and its normalisation
// statistics once computed (oxefs stats).
type datasetInfo struct {
	ActionDim int         `json:"action_dim"`
	StateDim  int         `json:"state_dim"`
	Stats     *norm.Stats `json:"stats,omitempty"`
	// Commit is the commit a source at a revision (an hf:// branch or tag)
	// was resolved to, which every read of this daemon names.
	Commit string `json:"commit,omitempty"`
	// Step mode only: the dataset's dataset_index, camera per slot, fps
	// (0: none) and deltas in steps.
	DatasetIndex *int               `json:"dataset_index,omitempty"`
	Cameras      map[string]string  `json:"cameras,omitempty"`
	FPS          float64            `json:"fps,omitempty"`
	Deltas       *config.StepDeltas `json:"deltas,omitempty"`
}

// pinnedCommit returns the commit that b, or a backend it wraps, pinned
// its reads to (storage/hf), or "" when none did.
func pinnedCommit(b storage.Backend) string {
	var p interface{ Pinned() string }
	if storage.As(b, &p) {
		return p.Pinned()
	}
	return ""
}

// memoryInfo is info.json's memory section: what --mem holds, and the
// smallest useful --mem.
type memoryInfo struct {
	BatchBudgetBytes         int64  `json:"batch_budget_bytes"`
	BatchBytes               int64  `json:"batch_bytes"`
	BudgetBytes              int64  `json:"budget_bytes"`
	MaxConcurrentOpenBatches int64  `json:"max_concurrent_open_batches"`
	MaxConcurrentReaders     int64  `json:"max_concurrent_readers"`
	MinMemBytes              int64  `json:"min_mem_bytes"`
	MinMemBytesPerReader     int64  `json:"min_mem_bytes_per_reader"`
	MinMemRule               string `json:"min_mem_rule"`
}

// viewInfo describes one view of a rank.
type viewInfo struct {
	BatchBudgetBytes         int64     `json:"batch_budget_bytes"`
	MaxBatch                 int64     `json:"max_batch"`
	MaxConcurrentOpenBatches int64     `json:"max_concurrent_open_batches"`
	NPYBytes                 int64     `json:"npy_bytes"`
	NumBatches               int64     `json:"num_batches"`
	Plan                     plan.Info `json:"plan"`
}

// viewField is a rank's view in info.json: null when the rank has no such
// view (no val view).
type viewField struct{ v *viewInfo }

func (f *viewField) MarshalJSON() ([]byte, error) { return json.Marshal(f.v) }

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

// memoryInfo is info.json's memory section.
func (p *Pipeline) memoryInfo() memoryInfo {
	per := p.memPerReader(p.Train, false)
	slots := p.Train.Budget() / p.Train.BatchBytes()
	rule := "--mem of (readers + 1) * min_mem_bytes_per_reader or more, readers being the batch files open at once"
	if len(p.Ranks) > 1 {
		rule += " in one rank"
	}
	return memoryInfo{
		BudgetBytes:              p.opts.Mem,
		BatchBytes:               p.Train.BatchBytes(),
		BatchBudgetBytes:         p.Train.Budget(),
		MaxConcurrentOpenBatches: slots,
		MaxConcurrentReaders:     max(slots-1, 1),
		MinMemBytesPerReader:     per,
		MinMemBytes:              2 * per,
		MinMemRule:               rule,
	}
}

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
	// Parted, in step mode, says how batches of several files are served.
	Parted string `json:"parted,omitempty"`
	// Nodes, when set, reports the FUSE nodes the mount holds for the
	// kernel's inodes of batch files, its bound on them and the entries
	// invalidated to keep within it, for stats.json.
	Nodes func() (held, max int, invalidated int64) `json:"-"`
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
	view := func(s *batch.Scheduler, pl *plan.Plan) *viewField {
		if s == nil {
			return &viewField{}
		}
		return &viewField{&viewInfo{
			NumBatches:               s.Len(),
			MaxBatch:                 s.Limit() - 1,
			NPYBytes:                 s.NPYSize(),
			Plan:                     pl.Info(),
			BatchBudgetBytes:         s.Budget(),
			MaxConcurrentOpenBatches: s.Budget() / s.BatchBytes(),
		}}
	}
	cfg := p.Mix.Config
	in := info{
		OxefsVersion: p.opts.Version,
		PID:          os.Getpid(),
		Config:       cfg,
		AugmentOff:   p.opts.AugmentOff,
		Seed:         cfg.Seed,
		Meta:         cfg.Meta,
		Decoder:      p.Pool.Decoder(),
		World:        p.Mix.World,
		ActionDim:    p.Mix.MaxActionDim,
		StateDim:     p.Mix.MaxStateDim,
		Datasets:     p.datasetInfo(),
		Memory:       p.memoryInfo(),
		Serving:      p.serving,
	}
	p.Mix.kind.describe(p, &in)
	if p.MultiRank() {
		in.Ranks = make([]int, len(p.Ranks))
		for i, r := range p.Ranks {
			in.Ranks[i] = r.Rank
		}
	}
	if r == nil {
		in.NumBatches = p.Train.Len()
		in.RankDirs = "rank/R: info.json, stats.json, batches/, val/batches/ of each rank R in ranks"
		return json.MarshalIndent(in, "", "  ")
	}
	in.Rank = &r.Rank
	in.NumBatches = r.Train.Len()
	in.Train = view(r.Train, r.plans.Train)
	in.Val = view(r.Val, r.plans.Val)
	return json.MarshalIndent(in, "", "  ")
}

// datasetInfo is info.json's datasets section, by dataset name.
func (p *Pipeline) datasetInfo() map[string]datasetInfo {
	out := make(map[string]datasetInfo, len(p.Mix.Datasets))
	for _, d := range p.Mix.Datasets {
		di := datasetInfo{ActionDim: d.ActionDim, StateDim: d.StateDim, Stats: d.Norm, Commit: pinnedCommit(d.Data.Backend())}
		p.Mix.kind.describeDataset(p, d, &di)
		out[d.Config.Name] = di
	}
	return out
}
