package batch

import (
	"math"
	"sync/atomic"
	"time"
)

// Histogram records durations in logarithmic buckets (about 4% wide, from
// 1µs to about 20 minutes) with atomic counters, so that any goroutine can
// record without a lock and percentiles are accurate to a bucket.
type Histogram struct {
	counts [histBuckets]atomic.Int64
	total  atomic.Int64
	max    atomic.Int64 // nanoseconds
}

const (
	histBase    = 1e3 // 1µs in ns
	histGrowth  = 1.04
	histBuckets = 530 // histBase·1.04^530 ≈ 1.1e12 ns
)

var histLogGrowth = math.Log(histGrowth)

func histBucket(ns int64) int {
	if ns <= histBase {
		return 0
	}
	b := int(math.Log(float64(ns)/histBase)/histLogGrowth) + 1
	return min(b, histBuckets-1)
}

// histUpper is the upper bound of bucket b in nanoseconds.
func histUpper(b int) float64 { return histBase * math.Pow(histGrowth, float64(b)) }

// Observe records one duration.
func (h *Histogram) Observe(d time.Duration) {
	ns := int64(d)
	h.counts[histBucket(ns)].Add(1)
	h.total.Add(1)
	for {
		m := h.max.Load()
		if ns <= m || h.max.CompareAndSwap(m, ns) {
			break
		}
	}
}

// Count returns the number of observations.
func (h *Histogram) Count() int64 { return h.total.Load() }

// Max returns the largest observation.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Quantile returns the q-quantile (0 < q ≤ 1) as the upper bound of its
// bucket, capped at the maximum seen; 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	total := h.total.Load()
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(total)))
	var seen int64
	for b := range histBuckets {
		seen += h.counts[b].Load()
		if seen >= rank {
			return min(time.Duration(histUpper(b)), h.Max())
		}
	}
	return h.Max()
}

// Summary is a histogram's percentiles in seconds, for stats.json.
type Summary struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_s"`
	P90   float64 `json:"p90_s"`
	P99   float64 `json:"p99_s"`
	Max   float64 `json:"max_s"`
}

// Summary returns the histogram's percentiles.
func (h *Histogram) Summary() Summary {
	return Summary{
		Count: h.Count(),
		P50:   h.Quantile(0.5).Seconds(),
		P90:   h.Quantile(0.9).Seconds(),
		P99:   h.Quantile(0.99).Seconds(),
		Max:   h.Max().Seconds(),
	}
}
