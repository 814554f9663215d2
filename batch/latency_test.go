package batch

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Count() != 0 {
		t.Fatal("empty histogram is not zero")
	}
	var all []time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for range 5000 {
				// Log-uniform from 10µs to 10s.
				d := time.Duration(1e4 * math.Pow(10, r.Float64()*6))
				h.Observe(d)
				mu.Lock()
				all = append(all, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(all)
	if h.Count() != int64(len(all)) || h.Max() != all[len(all)-1] {
		t.Fatalf("count %d max %v, want %d %v", h.Count(), h.Max(), len(all), all[len(all)-1])
	}
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 1} {
		exact := all[max(0, int(q*float64(len(all)))-1)]
		got := h.Quantile(q)
		// A bucket is 4% wide: the estimate is the bucket's upper bound.
		if float64(got) < float64(exact)*0.999 || float64(got) > float64(exact)*1.05 {
			t.Errorf("q%.2f = %v, exact %v", q, got, exact)
		}
	}
	s := h.Summary()
	if !(s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.Max) {
		t.Fatalf("summary not ordered: %+v", s)
	}
}
