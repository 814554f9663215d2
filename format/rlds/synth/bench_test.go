package synth

import (
	"testing"

	"github.com/oxefs/oxefs/format/synthetic"
)

// BenchmarkEpisode renders, encodes and serializes whole episodes of a few
// representative datasets: b.SetBytes makes MB/s the encoded output rate;
// frames/s counts camera frames.
func BenchmarkEpisode(b *testing.B) {
	for _, name := range []string{"synth_bridge", "synth_kuka", "synth_cmu_stretch", "synth_droid"} {
		b.Run(name, func(b *testing.B) {
			d := datasetNamed(b, name)
			enc := newEncoder()
			const steps = 30
			var bytes int64
			frames := 0
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				k := episodeKey{seed: 1, dataset: d.Name, split: "train", index: i, id: int64(i), steps: steps}
				rec, n, err := record(*d, k, enc)
				if err != nil {
					b.Fatal(err)
				}
				bytes += int64(len(rec))
				frames += n
			}
			b.SetBytes(bytes / int64(b.N))
			b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "frames/s")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "episodes/s")
		})
	}
}

func datasetNamed(tb testing.TB, name string) *synthetic.Dataset {
	tb.Helper()
	for _, d := range synthetic.Datasets() {
		if d.Name == name {
			return &d
		}
	}
	tb.Fatalf("no dataset %s", name)
	return nil
}
