package splitspec

import (
	"errors"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
)

// infoWith builds splits from name, shard lengths, name, shard lengths...
func infoWith(splits ...any) []episode.Split {
	var out []episode.Split
	for i := 0; i < len(splits); i += 2 {
		out = append(out, episode.Split{Name: splits[i].(string), ShardEpisodes: splits[i+1].([]int64)})
	}
	return out
}

// The expected ranges come from TFDS 4.9 itself:
//
//	from tensorflow_datasets.core import naming, splits as S
//	def infos(splits):
//	  return [S.SplitInfo(name=n, shard_lengths=l, num_bytes=0,
//	          filename_template=naming.ShardedFileTemplate(data_dir='/d',
//	              dataset_name='ds', split=n, filetype_suffix='tfrecord'))
//	          for n, l in splits]
//	def resolve(splits, spec):
//	  n = {i.name: i.num_examples for i in infos(splits)}
//	  return [(a.splitname, a.from_ or 0, n[a.splitname] if a.to is None else a.to)
//	          for a in S._make_absolute_instructions(infos(splits), spec)]
//	resolve([('train', [12, 12]), ('val', [3])], 'train[:90%]')  # [('train', 0, 22)]
//	resolve([('train', [5])], 'train[:30%]')                      # [('train', 0, 2)]
//
// testdata/split_golden.json holds many more, with TFDS's file instructions.
func TestResolve(t *testing.T) {
	two := infoWith("train", []int64{12, 12}, "val", []int64{3})
	five := infoWith("train", []int64{5})
	r := func(split string, from, to int64) episode.Range {
		return episode.Range{Split: split, From: from, To: to}
	}
	for _, tc := range []struct {
		spec string
		info []episode.Split
		want []episode.Range
	}{
		{"train", two, []episode.Range{r("train", 0, 24)}},
		{"val", two, []episode.Range{r("val", 0, 3)}},
		{"train+val", two, []episode.Range{r("train", 0, 24), r("val", 0, 3)}},
		{"train + val", two, []episode.Range{r("train", 0, 24), r("val", 0, 3)}},
		{"train\t+\nval", two, []episode.Range{r("train", 0, 24), r("val", 0, 3)}},
		{"train\n", two, []episode.Range{r("train", 0, 24)}}, // Python's "$" matches before a final newline
		{"all", two, []episode.Range{r("train", 0, 24), r("val", 0, 3)}},
		{"val+all", two, []episode.Range{r("val", 0, 3), r("train", 0, 24), r("val", 0, 3)}},
		{"train[:90%]", two, []episode.Range{r("train", 0, 22)}}, // round(21.6)
		{"train[90%:]", two, []episode.Range{r("train", 22, 24)}},
		{"train[10:20]", two, []episode.Range{r("train", 10, 20)}},
		{"train[10:]", two, []episode.Range{r("train", 10, 24)}},
		{"train[-10:]", two, []episode.Range{r("train", 14, 24)}},
		{"train[:-10]", two, []episode.Range{r("train", 0, 14)}},
		{"train[-24:]", two, []episode.Range{r("train", 0, 24)}},
		{"train[-10%:]", two, []episode.Range{r("train", 22, 24)}},
		{"train[:12.5%]", two, []episode.Range{r("train", 0, 3)}},
		{"train[1_0:2_0]", two, []episode.Range{r("train", 10, 20)}},
		{"train[10%:15]", two, []episode.Range{r("train", 2, 4)}}, // FROM's unit applies to TO
		{"train[:4shard]", two, []episode.Range{r("train", 0, 24)}},
		{"train[:1shard]", two, []episode.Range{r("train", 0, 12)}},
		{"train[1shard:]", two, []episode.Range{r("train", 12, 24)}},
		{"train[1shard]", two, []episode.Range{r("train", 12, 24)}},
		{"train[0shard]", two, []episode.Range{r("train", 0, 12)}},
		{"train[-1shard]", two, []episode.Range{r("train", 12, 24)}},
		{"train[:-1shard]", two, []episode.Range{r("train", 0, 12)}},
		{"train[:0shard]", two, []episode.Range{r("train", 0, 24)}}, // TO <= 0 is shifted by the shard count
		{"train[1:2shard]", two, []episode.Range{r("train", 12, 24)}},
		{"train[:50%]+val[-1:]", two, []episode.Range{r("train", 0, 12), r("val", 2, 3)}},
		{"train[:10]+train[-10:]", two, []episode.Range{r("train", 0, 10), r("train", 14, 24)}},
		{"train[5:5]+val", two, []episode.Range{r("val", 0, 3)}},              // empty terms are dropped
		{"train[١:٣]", two, []episode.Range{r("train", 1, 3)}},                // Python's \d and int() take any decimal digits
		{"train[:10%]+train[-30%:]", five, []episode.Range{r("train", 3, 5)}}, // 0.5 rounds to 0, -1.5 to -2
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := Resolve(tc.spec, tc.info)
			if err != nil {
				t.Fatal(err)
			}
			if !equalRanges(got, tc.want) {
				t.Errorf("Resolve(%q) = %v, want %v", tc.spec, got, tc.want)
			}
		})
	}
}

// With 5 examples pct*5/100 lands on halves at 10%, 30%, 50%, 70% and 90%,
// and Python's round() takes the even neighbour. Expected from TFDS, as in
// TestResolve: resolve([('train', [5])], f'train[:{p}%]').
func TestResolvePercentRounding(t *testing.T) {
	five := infoWith("train", []int64{5})
	for _, tc := range []struct {
		spec     string
		from, to int64
	}{
		{"train[:10%]", 0, 0}, // 0.5 -> 0
		{"train[:20%]", 0, 1},
		{"train[:30%]", 0, 2}, // 1.5 -> 2
		{"train[:40%]", 0, 2},
		{"train[:50%]", 0, 2}, // 2.5 -> 2
		{"train[:60%]", 0, 3},
		{"train[:70%]", 0, 4}, // 3.5 -> 4
		{"train[:80%]", 0, 4},
		{"train[:90%]", 0, 4}, // 4.5 -> 4
		{"train[:100%]", 0, 5},
		{"train[-10%:]", 0, 5},
		{"train[-30%:]", 3, 5},
		{"train[-50%:]", 3, 5},
		{"train[-70%:]", 1, 5},
		{"train[-90%:]", 1, 5},
		{"train[30%:70%]", 2, 4},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := Resolve(tc.spec, five)
			if tc.from == tc.to {
				if !errors.Is(err, ErrEmptySplit) {
					t.Fatalf("Resolve(%q) = %v, %v; want ErrEmptySplit", tc.spec, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []episode.Range{{Split: "train", From: tc.from, To: tc.to}}
			if !equalRanges(got, want) {
				t.Errorf("Resolve(%q) = %v, want %v", tc.spec, got, want)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	two := infoWith("train", []int64{12, 12}, "val", []int64{3})
	gaps := infoWith("train", []int64{3, 0, 4}, "test", []int64{}, "val", []int64{0, 0})
	for _, tc := range []struct {
		spec string
		info []episode.Split
		kind error
		msg  string
	}{
		{"trian", two, ErrUnknownSplit, `split "trian": no such split (valid: train, val)`},
		{"Train", two, ErrUnknownSplit, `split "Train": no such split (valid: train, val)`},
		{"train+tset", two, ErrUnknownSplit, `split "train+tset": no such split "tset" (valid: train, val)`},
		{"trian[:10%]", two, ErrUnknownSplit, `split "trian[:10%]": no such split "trian" (valid: train, val)`},
		{"train", nil, ErrUnknownSplit, `split "train": the dataset has no splits`},
		{"train[5:5]", two, ErrEmptySplit, `split "train[5:5]" selects no episodes (train has 24)`},
		{"train[7:3]", two, ErrEmptySplit, `split "train[7:3]" selects no episodes (train has 24)`},
		{"train[:1%]", two, ErrEmptySplit, `split "train[:1%]" selects no episodes (train has 24)`},
		{"train[:0%]+val[:0%]", two, ErrEmptySplit, `split "train[:0%]+val[:0%]" selects no episodes (train has 24, val has 3)`},
		{"train[3shard]", gaps, ErrEmptySplit, `split "train[3shard]" selects no episodes (train has 7)`},
		{"test", gaps, ErrEmptySplit, `split "test" selects no episodes (test has 0)`},
		{"val+test", gaps, ErrEmptySplit, `split "val+test" selects no episodes (val has 0, test has 0)`},
		{"train[:25]", two, ErrInvalidSplit, `split "train[:25]": train[:25] is out of range: train has 24 episodes`},
		{"train[-25:]", two, ErrInvalidSplit, "out of range"},
		{"train[:99999999999999999999]", two, ErrInvalidSplit, "out of range"},
		{"train[:101%]", two, ErrInvalidSplit, "percent bounds must be in [-100, 100]"},
		{"train[10]", two, ErrInvalidSplit, "only a shard can be selected alone"},
		{"train[10%]", two, ErrInvalidSplit, "only a shard can be selected alone"},
		{"train[1.5:]", two, ErrInvalidSplit, `invalid integer "1.5"`},
		{"train[1.5shard]", two, ErrInvalidSplit, `invalid integer "1.5"`},
		{"train[1__0:]", two, ErrInvalidSplit, `invalid integer "1__0"`},
		{"train[:1._5%]", two, ErrInvalidSplit, `invalid number "1._5"`},
		{"train[:" + strings.Repeat("1", 4301) + "]", two, ErrInvalidSplit, "more than 4300 digits"},
		{"all[:10%]", two, ErrInvalidSplit, "all does not support slicing"},
		{"train[", two, ErrInvalidSplit, `unrecognized split format "train["`},
		{"train[]", two, ErrInvalidSplit, "unrecognized split format"},
		{"train[:]", two, ErrInvalidSplit, "unrecognized split format"},
		{"train[1:2:3]", two, ErrInvalidSplit, "unrecognized split format"},
		{"train[ 1:2]", two, ErrInvalidSplit, "unrecognized split format"},
		{" train", two, ErrInvalidSplit, "unrecognized split format"},
		{"train ", two, ErrInvalidSplit, "unrecognized split format"},
		{"train\n\n", two, ErrInvalidSplit, "unrecognized split format"},
		{"train+", two, ErrInvalidSplit, `unrecognized split format ""`},
		{"train++val", two, ErrInvalidSplit, "unrecognized split format"},
		{"", two, ErrInvalidSplit, "unrecognized split format"},
		{"train.v2", two, ErrInvalidSplit, "unrecognized split format"},
		// A parse error anywhere wins over an unknown split before it, as in TFDS.
		{"tset+train[", two, ErrInvalidSplit, "unrecognized split format"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := Resolve(tc.spec, tc.info)
			if !errors.Is(err, tc.kind) {
				t.Fatalf("Resolve(%q) = %v, %v; want %v", tc.spec, got, err, tc.kind)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q\ndoes not contain %q", err, tc.msg)
			}
			var se *SplitError
			if !errors.As(err, &se) || se.Spec != tc.spec {
				t.Errorf("error %#v is not a *SplitError for %q", err, tc.spec)
			}
		})
	}
}

func TestResolveAllWithReservedName(t *testing.T) {
	// TFDS refuses to build a split named "all" and recurses forever when
	// reading one; Resolve says why.
	d := infoWith("all", []int64{3}, "train", []int64{2})
	if _, err := Resolve("all", d); !errors.Is(err, ErrInvalidSplit) || !strings.Contains(err.Error(), `named "all"`) {
		t.Errorf("Resolve(all) error %v", err)
	}
	// A split name that the split grammar cannot spell makes "all" fail too.
	d = infoWith("train.v2", []int64{3})
	if _, err := Resolve("all", d); !errors.Is(err, ErrInvalidSplit) {
		t.Errorf("Resolve(all) error %v", err)
	}
}

func TestSplitPlus(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"a", []string{"a"}},
		{"a+b", []string{"a", "b"}},
		{"a + b", []string{"a", "b"}},
		{"a  \t+\n b", []string{"a", "b"}},
		{"a + + b", []string{"a", "", "b"}},
		{"+a", []string{"", "a"}},
		{"a+", []string{"a", ""}},
		{" a b +c ", []string{" a b", "c "}},
		{"a\u2003+\u001cb", []string{"a", "b"}}, // Python's \s: Unicode spaces and U+001C..U+001F
	} {
		if got := splitPlus(tc.in); strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("splitPlus(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
