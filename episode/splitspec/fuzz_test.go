package splitspec

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
)

// fuzzDataset builds a dataset from "name=len,len;name=len" (the Resolve fuzz
// target's second input), or returns nil when that does not describe one.
// A dataset is what a format would accept: unique split names, shard
// lengths not negative, and episode counts that fit an int64.
func fuzzDataset(desc string) []episode.Split {
	var splits []episode.Split
	for _, s := range strings.Split(desc, ";") {
		name, lengths, _ := strings.Cut(s, "=")
		if _, dup := splitNamed(splits, name); dup || name == "" {
			return nil
		}
		sp := episode.Split{Name: name}
		var sum int64
		for _, l := range strings.Split(lengths, ",") {
			if l == "" {
				continue
			}
			n, err := strconv.ParseInt(l, 10, 64)
			if err != nil || n < 0 || sum > math.MaxInt64-n {
				return nil
			}
			sum += n
			sp.ShardEpisodes = append(sp.ShardEpisodes, n)
		}
		splits = append(splits, sp)
	}
	return splits
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
			s, ok := splitNamed(d, r.Split)
			if !ok {
				t.Fatalf("range %v of an unknown split", r)
			}
			if r.From < 0 || r.From >= r.To || r.To > s.Episodes() {
				t.Fatalf("range %v out of bounds (split has %d)", r, s.Episodes())
			}
			// Walking the range shard by shard, as a reader does, covers
			// exactly as many examples as the range holds.
			var covered int64
			for _, fi := range fileInstructions(d, []episode.Range{r}) {
				if fi.Take <= 0 || fi.Skip < 0 || fi.Skip+fi.Take > s.ShardEpisodes[fi.Shard] {
					t.Fatalf("file instruction %+v outside a shard of %d", fi, s.ShardEpisodes[fi.Shard])
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
