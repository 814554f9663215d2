package tfds

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
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
			if x.Kind < KindTensor || x.Kind > KindUnsupported {
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
			if x.Kind != KindImage {
				t.Fatalf("Images() holds %q of kind %v", x.Key, x.Kind)
			}
		}
	})
}

// fuzzDataset builds a dataset from "name=len,len;name=len" (the Resolve fuzz
// target's second input), or returns nil when that does not describe one.
func fuzzDataset(desc string) *DatasetInfo {
	type split struct {
		Name         string   `json:"name"`
		ShardLengths []string `json:"shardLengths"`
	}
	var splits []split
	for _, s := range strings.Split(desc, ";") {
		name, lengths, _ := strings.Cut(s, "=")
		sp := split{Name: name}
		for _, l := range strings.Split(lengths, ",") {
			if l == "" {
				continue
			}
			if _, err := strconv.ParseInt(l, 10, 64); err != nil {
				return nil
			}
			sp.ShardLengths = append(sp.ShardLengths, l)
		}
		splits = append(splits, sp)
	}
	b, err := json.Marshal(map[string]any{"name": "ds", "splits": splits})
	if err != nil {
		return nil
	}
	d, err := ParseDatasetInfo(b)
	if err != nil {
		return nil
	}
	return d
}

func FuzzResolve(f *testing.F) {
	const two = "train=12,12;val=3"
	const gaps = "train=3,0,4,0,0,5,2;test=;val=0,0;train-v2=1,1,1;2023=7"
	for _, spec := range []string{
		"train", "train+val", "train + val", "all", "all+train", "train[:90%]", "train[90%:]",
		"train[10:200]", "train[10:20]", "train[-10:]", "train[-10%:]", "train[:-10%]", "train[:4shard]",
		"train[4shard]", "train[-1shard]", "train[:-6shard]", "train[:0shard]", "train[1:3shard]",
		"train[10%:20]", "train[1_0:2_0]", "train[:12.5%]", "train[.5%:1.%]", "train[١:٣]", "train\n",
		"train[5:5]", "train[7:3]", "trian", "train[", "train[1:2:3]", "train[10]", "train[:101%]",
		"train[:99999999999999999999]", "train[99999999999999999999shard]", "all[:1%]", " train",
	} {
		f.Add(spec, two)
		f.Add(spec, gaps)
	}
	f.Add("train[:50%]", "train=4611686018427387904,4611686018427387903")
	f.Add("odd[-1:]", "odd=9007199254740993")
	f.Add("train[:30%]", "train=5")
	f.Fuzz(func(t *testing.T, spec, desc string) {
		d := fuzzDataset(desc)
		if d == nil {
			return
		}
		ranges, err := Resolve(spec, d)
		if err != nil {
			var se *SplitError
			if !errors.As(err, &se) || se.Spec != spec {
				t.Fatalf("error %v is not a *SplitError for the spec", err)
			}
			if !errors.Is(err, ErrInvalidSplit) && !errors.Is(err, ErrUnknownSplit) && !errors.Is(err, ErrEmptySplit) {
				t.Fatalf("error %v matches no sentinel", err)
			}
			return
		}
		if len(ranges) == 0 {
			t.Fatal("no ranges and no error")
		}
		for _, r := range ranges {
			s, ok := d.Split(r.Split)
			if !ok {
				t.Fatalf("range %v of an unknown split", r)
			}
			if r.From < 0 || r.From >= r.To || r.To > s.NumExamples() {
				t.Fatalf("range %v out of bounds (split has %d)", r, s.NumExamples())
			}
			// Walking the range shard by shard, as a reader does, covers
			// exactly as many examples as the range holds.
			var covered int64
			for _, fi := range fileInstructions(d, []Range{r}) {
				if fi.Take <= 0 || fi.Skip < 0 || fi.Skip+fi.Take > s.ShardLengths[fi.Shard] {
					t.Fatalf("file instruction %+v outside a shard of %d", fi, s.ShardLengths[fi.Shard])
				}
				covered += fi.Take
			}
			if covered != r.Len() {
				t.Fatalf("range %v holds %d examples, shard reads cover %d", r, r.Len(), covered)
			}
		}
		again, err := Resolve(spec, d)
		if err != nil || !slices.Equal(again, ranges) {
			t.Fatalf("Resolve is not deterministic: %v, %v then %v", ranges, err, again)
		}
	})
}
