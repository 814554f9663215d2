// Package bench measures a batch source the way the field measures data
// loaders: readers that read like DataLoader workers, a warm-up, optional
// compute time per batch, latency percentiles, throughput, time to first
// batch, memory and cache figures from the daemon, and whether the mix
// served is the mix asked for. The same code reads a mount (plain file
// reads) or a pipeline in-process (no FUSE): the difference between the two
// is what the mount costs.
//
// BareDecode is the decoder's ceiling beside it: the frames of the same
// samples decoded with nothing else of the pipeline.
//
// bench imports the scheduler (package batch), for the in-process reads,
// and the plan, the neutral model and the frame decoders, for the bare
// decode loop; it must not import the composition root, which hands it a
// Pipeline and the datasets of its mix.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oxefs/oxefs/batch"
)

// Source is what a benchmark reads.
type Source interface {
	// Read reads batch n whole into buf (grown as needed) and returns it and
	// the batch's metadata file (nil without one).
	Read(ctx context.Context, n int64, buf []byte) (data, meta []byte, err error)
	// Info returns info.json; Stats returns stats.json now.
	Info() []byte
	Stats() []byte
	// Name says what is measured ("mount /tmp/oxe", "in-process mix.yaml").
	Name() string
	// CPU is the processor time used so far.
	CPU() CPU
}

// Options configures Run.
type Options struct {
	// Readers read like DataLoader workers: reader i reads start+i,
	// start+i+R, start+i+2R, ...
	Readers int
	// Warmup batches are read first and not measured.
	Warmup int64
	// Batches are measured after the warm-up.
	Batches int64
	Start   int64
	// Compute is slept after each batch, as a training step would.
	Compute time.Duration
	// Progress, when set, is called after each batch.
	Progress func()
}

// Record is one batch read: a line of batch_times.jsonl.
type Record struct {
	Index           int64          `json:"idx"`
	Seconds         float64        `json:"dt_s"`
	Reader          int            `json:"reader"`
	Warmup          bool           `json:"is_warmup"`
	DatasetCounts   map[string]int `json:"dataset_counts"`
	DominantDataset string         `json:"dominant_dataset"`
	Bytes           int64          `json:"bytes"`
	EndSeconds      float64        `json:"end_s"` // since the start of the run
}

// Result is a finished run.
type Result struct {
	Source  string
	Options Options
	Records []Record // in completion order
	// Wall is the measured phase's duration; FirstBatch the time from the
	// start to the first batch read.
	Wall, FirstBatch time.Duration
	// CPU is the processor time the measured phase used.
	CPU   CPU
	Info  Info
	Stats json.RawMessage // the source's stats.json at the end
}

// Info is what the benchmark needs from info.json.
type Info struct {
	NumBatches int64  `json:"num_batches"`
	BatchSize  int    `json:"batch_size"`
	Decoder    string `json:"decoder"`
	Train      *struct {
		// MaxBatch is the last index the view serves: past the listing
		// (num_batches) a train view serves the next epochs by index; a
		// val view serves its one pass. Absent, the listing is the end.
		MaxBatch *int64 `json:"max_batch"`
		Plan     struct {
			Datasets []struct {
				Name   string  `json:"name"`
				Weight float64 `json:"weight"`
			} `json:"datasets"`
		} `json:"plan"`
	} `json:"train"`
	Val *struct {
		NumBatches int64 `json:"num_batches"`
	} `json:"val"`
}

// Targets returns each dataset's normalised weight from info.json.
func (i Info) Targets() map[string]float64 {
	out := map[string]float64{}
	if i.Train != nil {
		for _, d := range i.Train.Plan.Datasets {
			out[d.Name] = d.Weight
		}
	}
	return out
}

// LastBatch is the last batch index the view serves: max_batch, or
// without it the last one listed.
func (i Info) LastBatch() int64 {
	if i.Train != nil && i.Train.MaxBatch != nil {
		return *i.Train.MaxBatch
	}
	return i.NumBatches - 1
}

// fewer says which flags fit a run into batches 0..last.
func fewer(last int64, opts Options) string {
	switch fit := last + 1 - opts.Start; {
	case fit <= 0:
		return fmt.Sprintf("give --start at most %d", last)
	case fit > opts.Warmup:
		return fmt.Sprintf("read fewer, e.g. --batches %d", fit-opts.Warmup)
	default:
		return fmt.Sprintf("read fewer, e.g. --warmup 0 --batches %d", fit)
	}
}

// Run reads warmup+batches batches and times each. A train view serves
// indices past its listing (the next epochs), so a run may read past
// num_batches up to max_batch.
func Run(ctx context.Context, src Source, opts Options) (*Result, error) {
	if opts.Readers < 1 {
		return nil, fmt.Errorf("--readers must be at least 1, got %d", opts.Readers)
	}
	if opts.Batches < 1 || opts.Warmup < 0 || opts.Start < 0 {
		return nil, fmt.Errorf("need --batches ≥ 1, --warmup ≥ 0 and --start ≥ 0")
	}
	var info Info
	if err := json.Unmarshal(src.Info(), &info); err != nil {
		return nil, fmt.Errorf("%s: info.json: %w", src.Name(), err)
	}
	total := opts.Warmup + opts.Batches
	if last := info.LastBatch(); opts.Start+total-1 > last {
		return nil, fmt.Errorf("%s serves batches 0..%d (it lists %d); --start %d + --warmup %d + --batches %d reads up to batch %d: %s",
			src.Name(), last, info.NumBatches, opts.Start, opts.Warmup, opts.Batches, opts.Start+total-1, fewer(last, opts))
	}
	res := &Result{Source: src.Name(), Options: opts, Info: info}
	var (
		mu          sync.Mutex
		start       = time.Now()
		warmDone    = make(chan struct{})
		warmLeft    atomic.Int64
		measureFrom time.Time
		firstOnce   sync.Once
	)
	var cpuFrom CPU
	warmLeft.Store(opts.Warmup)
	if opts.Warmup == 0 {
		close(warmDone)
		measureFrom, cpuFrom = start, src.CPU()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, opts.Readers)
	var wg sync.WaitGroup
	for r := range opts.Readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for k := int64(r); k < total; k += int64(opts.Readers) {
				n := opts.Start + k
				warm := k < opts.Warmup
				if !warm {
					// Measured reads start when every warm-up read is done.
					select {
					case <-warmDone:
					case <-ctx.Done():
						return
					}
				}
				t0 := time.Now()
				data, meta, err := src.Read(ctx, n, buf)
				if err != nil {
					errs <- fmt.Errorf("batch %d: %w", n, err)
					cancel()
					return
				}
				buf = data
				end := time.Now()
				firstOnce.Do(func() { res.FirstBatch = end.Sub(start) })
				rec := Record{Index: n, Seconds: end.Sub(t0).Seconds(), Reader: r, Warmup: warm,
					Bytes: int64(len(data)) + int64(len(meta)), EndSeconds: end.Sub(start).Seconds()}
				rec.DatasetCounts, rec.DominantDataset = countDatasets(meta)
				mu.Lock()
				res.Records = append(res.Records, rec)
				mu.Unlock()
				if warm && warmLeft.Add(-1) == 0 {
					mu.Lock()
					measureFrom, cpuFrom = time.Now(), src.CPU()
					mu.Unlock()
					close(warmDone)
				}
				if opts.Progress != nil {
					opts.Progress()
				}
				if opts.Compute > 0 {
					select {
					case <-time.After(opts.Compute):
					case <-ctx.Done():
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(drain(errs)...); err != nil {
		return nil, err
	}
	res.Wall = time.Since(measureFrom)
	cpu := src.CPU()
	res.CPU = CPU{Pipeline: cpu.Pipeline - cpuFrom.Pipeline, Reader: cpu.Reader - cpuFrom.Reader}
	res.Stats = json.RawMessage(src.Stats())
	return res, nil
}

func drain(ch chan error) []error {
	var out []error
	for err := range ch {
		out = append(out, err)
	}
	return out
}

// countDatasets counts samples per dataset from a batch's metadata.
func countDatasets(meta []byte) (map[string]int, string) {
	if meta == nil {
		return nil, ""
	}
	var m struct {
		DatasetName []string `json:"dataset_name"`
	}
	if json.Unmarshal(meta, &m) != nil {
		return nil, ""
	}
	counts := map[string]int{}
	for _, d := range m.DatasetName {
		counts[d]++
	}
	dominant, best := "", -1
	for _, d := range slices.Sorted(maps.Keys(counts)) { // ties: first name
		if counts[d] > best {
			dominant, best = d, counts[d]
		}
	}
	return counts, dominant
}

// Summary is what a run measured: the table printed and --json's object.
type Summary struct {
	Source      string        `json:"source"`
	Readers     int           `json:"readers"`
	Batches     int64         `json:"batches"`
	BatchSize   int           `json:"batch_size"`
	BatchesPerS float64       `json:"batches_per_s"`
	SamplesPerS float64       `json:"samples_per_s"`
	MBPerS      float64       `json:"mb_per_s"`
	Latency     batch.Summary `json:"latency"`
	FirstBatchS float64       `json:"time_to_first_batch_s"`
	// CPU per sample over the measured phase: the process building
	// batches, and the reader when it is another process (a mount).
	PipelineCPUms float64            `json:"pipeline_cpu_ms_per_sample"`
	ReaderCPUms   float64            `json:"reader_cpu_ms_per_sample"`
	PeakRSS       int64              `json:"daemon_peak_rss_bytes"`
	MemBudget     int64              `json:"daemon_mem_budget_bytes"`
	RAMHitRate    float64            `json:"ram_cache_hit_rate"`
	DiskHitRate   float64            `json:"disk_cache_hit_rate"`
	FetchedBytes  int64              `json:"fetched_bytes"`
	Decoder       string             `json:"decoder"`
	Shares        map[string]float64 `json:"shares"`
	Targets       map[string]float64 `json:"targets"`
	MaxDeviation  float64            `json:"max_share_deviation"`
	Mixture       MixtureSummary     `json:"mixture"`
}

// MixtureSummary is mixture_summary.txt.
type MixtureSummary struct {
	MeasuredBatches        int     `json:"measured_batches"`
	UniqueDominantDatasets int     `json:"unique_dominant_datasets"`
	DominantSwitchRate     float64 `json:"dominant_switch_rate"`
}

// Measured returns the measured (not warm-up) records in batch order.
func (r *Result) Measured() []Record {
	var out []Record
	for _, rec := range r.Records {
		if !rec.Warmup {
			out = append(out, rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// Summarise computes the summary.
func (r *Result) Summarise() Summary {
	m := r.Measured()
	s := Summary{
		Source: r.Source, Readers: r.Options.Readers, Batches: int64(len(m)),
		BatchSize: r.Info.BatchSize, Decoder: r.Info.Decoder,
		FirstBatchS: r.FirstBatch.Seconds(), Targets: r.Info.Targets(), Shares: map[string]float64{},
	}
	var h batch.Histogram
	var bytes int64
	counts := map[string]int{}
	var samples int
	for _, rec := range m {
		h.Observe(time.Duration(rec.Seconds * float64(time.Second)))
		bytes += rec.Bytes
		for d, c := range rec.DatasetCounts {
			counts[d] += c
			samples += c
		}
	}
	s.Latency = h.Summary()
	if secs := r.Wall.Seconds(); secs > 0 {
		s.BatchesPerS = float64(len(m)) / secs
		s.SamplesPerS = s.BatchesPerS * float64(r.Info.BatchSize)
		s.MBPerS = float64(bytes) / 1e6 / secs
	}
	if n := float64(len(m) * r.Info.BatchSize); n > 0 {
		s.PipelineCPUms = float64(r.CPU.Pipeline) / float64(time.Millisecond) / n
		s.ReaderCPUms = float64(r.CPU.Reader) / float64(time.Millisecond) / n
	}
	for d, c := range counts {
		s.Shares[d] = float64(c) / float64(samples)
	}
	for d, w := range s.Targets {
		s.MaxDeviation = math.Max(s.MaxDeviation, math.Abs(s.Shares[d]-w))
	}
	s.Mixture = mixtureSummary(m)

	var st struct {
		Memory struct {
			Peak   int64 `json:"peak_rss_bytes"`
			Budget int64 `json:"budget_bytes"`
		} `json:"memory"`
		RAM struct {
			HitRate float64 `json:"hit_rate"`
		} `json:"ram_cache"`
		Disk struct {
			HitRate float64 `json:"hit_rate"`
		} `json:"disk_cache"`
		Fetch struct{ Bytes int64 } `json:"fetch"`
	}
	if json.Unmarshal(r.Stats, &st) == nil {
		s.PeakRSS, s.MemBudget = st.Memory.Peak, st.Memory.Budget
		s.RAMHitRate, s.DiskHitRate, s.FetchedBytes = st.RAM.HitRate, st.Disk.HitRate, st.Fetch.Bytes
	}
	return s
}

func mixtureSummary(m []Record) MixtureSummary {
	ms := MixtureSummary{MeasuredBatches: len(m)}
	unique := map[string]bool{}
	switches := 0
	for i, rec := range m {
		if rec.DominantDataset == "" {
			continue
		}
		unique[rec.DominantDataset] = true
		if i > 0 && rec.DominantDataset != m[i-1].DominantDataset {
			switches++
		}
	}
	ms.UniqueDominantDatasets = len(unique)
	if len(m) > 1 {
		ms.DominantSwitchRate = float64(switches) / float64(len(m)-1)
	}
	return ms
}
