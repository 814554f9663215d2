package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Paired is a side-by-side run of two sources over the same batches: each
// batch index is read from A and from B in turn, one read at a time, and
// the processor time of each read is A's or B's. Which of the two reads a
// batch first alternates from batch to batch, so that neither always
// follows the other. Alternating batch by batch puts both under the same
// machine at almost the same moment: the slow swings of a shared machine's
// speed, which move whole runs apart by tens of percent, fall on both
// alike and leave their ratio.
//
// The sources must not work between reads (no readahead): what one
// builds in the background would be charged to the other's reads.
type Paired struct {
	A, B Source
}

// PairedResult is a finished paired run: per measured batch, the
// processor time of its read from A and from B.
type PairedResult struct {
	Options Options
	// BatchSize is the samples of a batch (info.json's batch_size).
	BatchSize int
	// Indices are the measured batches; CPUA[i] and CPUB[i] the processor
	// time of reading Indices[i] from A and from B.
	Indices    []int64
	CPUA, CPUB []time.Duration
}

// Run reads warmup+batches batch indices from both sources. Readers in
// opts is ignored: the reads are one at a time.
func (p Paired) Run(ctx context.Context, opts Options) (*PairedResult, error) {
	if opts.Batches < 1 || opts.Warmup < 0 || opts.Start < 0 {
		return nil, fmt.Errorf("need --batches ≥ 1, --warmup ≥ 0 and --start ≥ 0")
	}
	var info Info
	if err := json.Unmarshal(p.A.Info(), &info); err != nil {
		return nil, fmt.Errorf("%s: info.json: %w", p.A.Name(), err)
	}
	total := opts.Warmup + opts.Batches
	if last := info.LastBatch(); opts.Start+total-1 > last {
		return nil, fmt.Errorf("%s serves batches 0..%d (it lists %d); --start %d + --warmup %d + --batches %d reads up to batch %d: %s",
			p.A.Name(), last, info.NumBatches, opts.Start, opts.Warmup, opts.Batches, opts.Start+total-1, fewer(last, opts))
	}
	res := &PairedResult{Options: opts, BatchSize: info.BatchSize}
	var buf []byte
	read := func(src Source, n int64) (time.Duration, error) {
		before := src.CPU().Pipeline
		data, _, err := src.Read(ctx, n, buf)
		if err != nil {
			return 0, fmt.Errorf("%s: batch %d: %w", src.Name(), n, err)
		}
		buf = data
		return src.CPU().Pipeline - before, nil
	}
	for k := range total {
		n := opts.Start + k
		first, second := p.A, p.B
		if k%2 == 1 {
			first, second = p.B, p.A
		}
		c1, err := read(first, n)
		if err != nil {
			return nil, err
		}
		c2, err := read(second, n)
		if err != nil {
			return nil, err
		}
		if opts.Progress != nil {
			opts.Progress()
		}
		if k < opts.Warmup {
			continue
		}
		if k%2 == 1 {
			c1, c2 = c2, c1
		}
		res.Indices = append(res.Indices, n)
		res.CPUA = append(res.CPUA, c1)
		res.CPUB = append(res.CPUB, c2)
	}
	return res, nil
}

// PairedSummary is what a paired run comes to.
type PairedSummary struct {
	Batches int `json:"batches"`
	Samples int `json:"samples"`
	// AMsPerSample and BMsPerSample are each source's processor time per
	// sample over the measured batches, in milliseconds.
	AMsPerSample float64 `json:"a_cpu_ms_per_sample"`
	BMsPerSample float64 `json:"b_cpu_ms_per_sample"`
	// Ratio is A's processor time over B's, all measured batches
	// together; BatchMedian, BatchMin and BatchMax are the median and
	// the range of the same ratio batch by batch.
	Ratio       float64 `json:"ratio"`
	BatchMedian float64 `json:"batch_ratio_median"`
	BatchMin    float64 `json:"batch_ratio_min"`
	BatchMax    float64 `json:"batch_ratio_max"`
}

// Summarise totals a paired run.
func (r *PairedResult) Summarise() PairedSummary {
	s := PairedSummary{Batches: len(r.Indices), Samples: len(r.Indices) * r.BatchSize}
	var a, b time.Duration
	var ratios []float64
	for i := range r.Indices {
		a += r.CPUA[i]
		b += r.CPUB[i]
		if r.CPUB[i] > 0 {
			ratios = append(ratios, float64(r.CPUA[i])/float64(r.CPUB[i]))
		}
	}
	if s.Samples > 0 {
		s.AMsPerSample = float64(a) / float64(time.Millisecond) / float64(s.Samples)
		s.BMsPerSample = float64(b) / float64(time.Millisecond) / float64(s.Samples)
	}
	if b > 0 {
		s.Ratio = float64(a) / float64(b)
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		s.BatchMin, s.BatchMax = ratios[0], ratios[len(ratios)-1]
		s.BatchMedian = ratios[len(ratios)/2]
		if len(ratios)%2 == 0 {
			s.BatchMedian = (ratios[len(ratios)/2-1] + ratios[len(ratios)/2]) / 2
		}
	}
	return s
}
