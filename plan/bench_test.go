package plan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/oxefs/oxefs/config"
)

// oxeMix is a 29-dataset mix shaped like Open X-Embodiment: datasets of
// 64 to 1,024 shards of ~50 episodes, totalling about episodes episodes.
func oxeMix(episodes int, spe int, lengths bool) []DatasetShape {
	var shapes []DatasetShape
	per := episodes / 29
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 29 {
		shards := 64 << (i % 5) // 64 … 1024
		eps := max(per/shards, 1)
		s := shapeOfShards(fmt.Sprintf("oxe%02d", i), config.NewWeight(int64(1+i%7), 1), repeat(shards, eps))
		if lengths {
			s.MinOffset = 5
			s.Lengths = make([]int32, shards*eps)
			for j := range s.Lengths {
				s.Lengths[j] = int32(20 + rng.IntN(300))
			}
		}
		shapes = append(shapes, s)
	}
	_ = spe
	return shapes
}

// BenchmarkBatch measures planning one batch of 256 samples from 29
// datasets: sequential batches (the daemon's common case), random batches
// anywhere up to 10^12 (each touches a new epoch of most datasets, so it
// pays for the window orders), and all-pairs units.
func BenchmarkBatch(b *testing.B) {
	for _, c := range []struct {
		name    string
		spe     int
		lengths bool
		random  bool
	}{
		{"sequential", 1, false, false},
		{"random-1e12", 1, false, true},
		{"all-pairs-sequential", 0, true, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := mustPlan(b, Options{Seed: 1, BatchSize: 256, SamplesPerEpisode: c.spe, WindowShards: 4}, oxeMix(200_000, c.spe, c.lengths))
			rng := rand.New(rand.NewPCG(2, 2))
			buf := make([]Sample, 0, 256)
			n := int64(0)
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if c.random {
					n = rng.Int64N(1_000_000_000_000)
				} else {
					n++
				}
				buf = p.Batch(n, buf)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/batch")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/batch")
		})
	}
}

// BenchmarkPlanMemory measures the heap a plan of a 1M-episode mix holds,
// after it has planned batches (order caches filled).
func BenchmarkPlanMemory(b *testing.B) {
	for _, c := range []struct {
		name string
		spe  int
	}{{"samples_per_episode-1", 1}, {"all-pairs", 0}} {
		b.Run(c.name, func(b *testing.B) {
			var mib float64
			for b.Loop() {
				shapes := oxeMix(1_000_000, c.spe, c.spe == 0)
				var ms0, ms1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms0)
				p := mustPlan(b, Options{BatchSize: 256, SamplesPerEpisode: c.spe, WindowShards: 4}, shapes)
				for n := range int64(100) {
					p.Batch(n*1000, nil)
				}
				runtime.GC()
				runtime.ReadMemStats(&ms1)
				mib = float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc)) / (1 << 20)
				runtime.KeepAlive(p)
				runtime.KeepAlive(shapes)
			}
			b.ReportMetric(mib, "MiB")
		})
	}
}

// BenchmarkShuffleQuality measures what the block shuffle costs in
// randomness, against an ideal global shuffle of each dataset-epoch.
//
// The dataset watched has 1,024 shards of 50 episodes and 4 samples per
// episode (204,800 units) and gets 64 samples of each 256-sample batch; a
// window is 4 shards = 800 units = 12.5 batches. Two figures, for batches
// gap apart:
//
//   - same-shard: the probability that a sample of batch n and one of batch
//     n+gap come from the same shard. An ideal shuffle gives 1/1024.
//   - share-episode: the probability that batches n and n+gap hold a sample
//     of the same episode. An ideal shuffle gives 1 − (1 − 3/U)^(64·64).
func BenchmarkShuffleQuality(b *testing.B) {
	shapes := []DatasetShape{
		shapeOfShards("watched", config.NewWeight(1, 4), repeat(1024, 50)),
		shapeOfShards("rest", config.NewWeight(3, 4), repeat(256, 50)),
	}
	p := mustPlan(b, Options{Seed: 9, BatchSize: 256, SamplesPerEpisode: 4, WindowShards: 4}, shapes)
	U := float64(1024 * 50 * 4)
	idealShard := 1.0 / 1024
	idealEpisode := 1 - math.Pow(1-3/(U-1), 64*64)
	type ep struct{ shard, record int }
	watched := func(n int64) []ep {
		var out []ep
		for _, s := range p.Batch(n, nil) {
			if s.Dataset == 0 {
				out = append(out, ep{s.Episode.Shard, s.Episode.Record})
			}
		}
		return out
	}
	for b.Loop() {
		rng := rand.New(rand.NewPCG(3, 3))
		for _, gap := range []int64{1, 10, 100, 10_000} {
			const trials = 400
			var sameShard, pairs, shared float64
			for range trials {
				n := rng.Int64N(1 << 40)
				x, y := watched(n), watched(n+gap)
				eps := make(map[ep]bool)
				for _, e := range x {
					eps[e] = true
				}
				share := false
				for _, e := range y {
					share = share || eps[e]
					for _, f := range x {
						pairs++
						if e.shard == f.shard {
							sameShard++
						}
					}
				}
				if share {
					shared++
				}
			}
			b.ReportMetric(sameShard/pairs, fmt.Sprintf("same-shard-gap%d", gap))
			b.ReportMetric(shared/trials, fmt.Sprintf("share-episode-gap%d", gap))
		}
		b.ReportMetric(idealShard, "ideal-same-shard")
		b.ReportMetric(idealEpisode, "ideal-share-episode")
	}
}

// cpuTime is the process's user+system CPU time: on a shared machine it
// says what planning costs better than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
