package steps

import (
	"context"
	"sync"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/plan"
)

// BenchmarkBuildBatch builds a batch of 8 step samples of one tiny_bridge
// episode (t = 0..7) with two cameras and two steps of history, a chunk of
// 50 and the state history, by 4 goroutines; shared: one batch (each
// frame decoded once), alone: each sample in a batch of its own, decoding
// every frame it holds.
func BenchmarkBuildBatch(b *testing.B) {
	ds := openFixture(b, "tiny_bridge")
	ep := loadEpisode(b, ds, bridgeKey)
	action := make([]int, 50)
	for i := range action {
		action[i] = i
	}
	slot, state := []int{-1, 0}, []int{-1, 0}
	spec := bridgeSpec(8, config.BFHWC, slot, state, action)
	l, err := NewLayout(spec)
	if err != nil {
		b.Fatal(err)
	}
	a, err := New(ds.Info(), spec, l, bridgeConfig(slot, state, action))
	if err != nil {
		b.Fatal(err)
	}
	workers := make([]*testWorkerT, 4)
	for i := range workers {
		workers[i] = testWorker(b)
	}
	bufs := make([][]byte, 8)
	for i := range bufs {
		bufs[i] = make([]byte, l.Total)
	}
	for _, shared := range []bool{true, false} {
		name := "alone"
		if shared {
			name = "shared"
		}
		b.Run(name, func(b *testing.B) {
			var start int64
			for _, w := range workers {
				start += w.Decoded()
			}
			for range b.N {
				var batches [8]*testBatch
				for i := range batches {
					if shared {
						if i == 0 {
							batches[0] = newTestBatch(l, bufs[0])
						} else {
							batches[i] = batches[0]
						}
					} else {
						batches[i] = newTestBatch(l, bufs[i])
					}
				}
				var wg sync.WaitGroup
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := w; i < 8; i += len(workers) {
							if err := workers[w].build(a, context.Background(), plan.Sample{Episode: bridgeKey, Unit: i}, ep, batches[i], i, nil); err != nil {
								b.Error(err)
							}
						}
					}()
				}
				wg.Wait()
			}
			var end int64
			for _, w := range workers {
				end += w.Decoded()
			}
			b.ReportMetric(float64(end-start)/float64(b.N), "frames/batch")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(8*b.N), "ns/sample")
		})
	}
}
