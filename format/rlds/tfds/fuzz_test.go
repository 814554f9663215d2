package tfds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
)

func addFixtures(f *testing.F, pattern string) {
	paths, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzParseDatasetInfo(f *testing.F) {
	addFixtures(f, "*dataset_info.json")
	f.Add([]byte(`{"name":"d","fileFormat":"array_record","splits":[{"name":"train","shardLengths":["3","0",4],"filepathTemplate":"{SPLIT}/{{x}}-{SHARD_INDEX}"}]}`))
	f.Add([]byte(`{"splits":[{"name":"a-b","shardLengths":[]},{"name":"c","numBytes":"-1"}]}`))
	f.Add([]byte(`{"name":"d","splits":[{"name":"train","shardLengths":["9223372036854775807"]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDatasetInfo(b)
		if err != nil {
			return
		}
		for i := range d.Splits {
			s := &d.Splits[i]
			var sum int64
			for _, n := range s.ShardLengths {
				if n < 0 {
					t.Fatalf("split %s: negative shard length %d", s.Name, n)
				}
				sum += n
			}
			if s.NumExamples() != sum {
				t.Fatalf("split %s: NumExamples %d, sum %d", s.Name, s.NumExamples(), sum)
			}
			for _, i := range []int64{0, sum / 2, sum - 1} {
				if i < 0 || i >= sum {
					continue
				}
				shard, rec := s.Locate(i)
				if shard < 0 || rec < 0 || rec >= s.ShardLengths[shard] {
					t.Fatalf("split %s: Locate(%d) = %d, %d", s.Name, i, shard, rec)
				}
			}
			if len(s.ShardLengths) > 10000 {
				continue
			}
			names, err := d.ShardNames(s.Name)
			if err != nil {
				if d.Name == "" && strings.Contains(s.FilepathTemplate, "{DATASET}") {
					continue
				}
				t.Fatalf("split %s: ShardNames: %v", s.Name, err)
			}
			if len(names) != len(s.ShardLengths) {
				t.Fatalf("split %s: %d names for %d shards", s.Name, len(names), len(s.ShardLengths))
			}
		}
	})
}

func FuzzParseFeatures(f *testing.F) {
	addFixtures(f, "*features.json")
	f.Add([]byte(`{"featuresDict":{"features":{"s":{"sequence":{"feature":{"sequence":{"feature":{"video":{"shape":{"dimensions":["-1","2","2","3"]}}}}}}}}}}`))
	f.Add([]byte(`{"featuresDict":{"features":{"t":{"pythonClassName":"x.Translation","translation":{"languages":["fr","en","fr"]}}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, err := ParseFeatures(b)
		if err != nil {
			return
		}
		all := fs.All()
		for i, x := range all {
			if i > 0 && all[i-1].Key >= x.Key {
				t.Fatalf("keys not sorted and unique: %q then %q", all[i-1].Key, x.Key)
			}
			if y, ok := fs.Lookup(x.Key); !ok || y.Key != x.Key || y.Kind != x.Kind {
				t.Fatalf("Lookup(%q) = %+v, %v", x.Key, y, ok)
			}
			if x.Kind < episode.KindTensor || x.Kind > episode.KindUnsupported {
				t.Fatalf("%q: bad kind %d", x.Key, x.Kind)
			}
			for _, d := range x.Shape {
				if d < -1 {
					t.Fatalf("%q: bad shape %v", x.Key, x.Shape)
				}
			}
			if x.SequenceRank < 0 || (x.PerStep && x.SequenceRank < 1) {
				t.Fatalf("%q: sequence rank %d, per step %v", x.Key, x.SequenceRank, x.PerStep)
			}
			if len(x.ExampleKeys()) != max(1, x.SequenceRank) {
				t.Fatalf("%q: example keys %v for rank %d", x.Key, x.ExampleKeys(), x.SequenceRank)
			}
		}
		for _, x := range fs.Images() {
			if x.Kind != episode.KindImage {
				t.Fatalf("Images() holds %q of kind %v", x.Key, x.Kind)
			}
		}
	})
}
