package tfds

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/episode/splitspec"
	"github.com/oxefs/oxefs/internal/testkit"
)

const repoTestdata = "../../../testdata"

func loadManifest(t *testing.T) testkit.Manifest { return testkit.LoadManifest(t) }

// TestFixtures parses the datasets that TFDS itself wrote into
// ../../testdata/datasets and checks this package against what TFDS and
// TensorFlow read back from them (../../testdata/manifest.json): the splits and
// shard files, the tf.train.Example keys of a real record, and every split
// string the generator resolved, down to the episode ids in read order.
func TestFixtures(t *testing.T) {
	m := loadManifest(t)
	for name, ds := range m.Datasets {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(repoTestdata, ds.Dir)
			info, err := ParseDatasetInfo(readFile(t, filepath.Join(dir, "dataset_info.json")))
			if err != nil {
				t.Fatal(err)
			}
			feats, err := ParseFeatures(readFile(t, filepath.Join(dir, "features.json")))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(info.SplitNames(), ds.SplitOrder) {
				t.Errorf("splits %v, TFDS %v", info.SplitNames(), ds.SplitOrder)
			}
			// Episode ids by split, in example order.
			ids := map[string][]int64{}
			for splitName, want := range ds.Splits {
				s, ok := info.Split(splitName)
				if !ok {
					t.Fatalf("no split %s", splitName)
				}
				if s.NumExamples() != want.NumExamples || !slices.Equal(s.ShardLengths, want.ShardLengths) {
					t.Errorf("split %s: %d examples in %v, TFDS %d in %v", splitName, s.NumExamples(), s.ShardLengths, want.NumExamples, want.ShardLengths)
				}
				names, err := info.ShardNames(splitName)
				if err != nil {
					t.Fatal(err)
				}
				var wantNames []string
				for _, sh := range want.Shards {
					wantNames = append(wantNames, sh.File)
					for _, r := range sh.Records {
						ids[splitName] = append(ids[splitName], r.EpisodeID)
					}
				}
				if !slices.Equal(names, wantNames) {
					t.Errorf("split %s: shard names %v, TFDS %v", splitName, names, wantNames)
				}
			}
			checkExampleKeys(t, feats, ds.ExampleKeys)
			for _, ss := range ds.SplitStrings {
				t.Run(ss.Split, func(t *testing.T) {
					ranges, err := splitspec.Resolve(ss.Split, neutralSplits(info))
					reversed := strings.Contains(ss.Note, "reversed")
					if !ss.OK || reversed {
						// A reversed slice TFDS may even read (wrong records);
						// here it selects nothing.
						if err == nil {
							t.Fatalf("Resolve = %v; TFDS: %s", ranges, ss.Error)
						}
						want := splitspec.ErrInvalidSplit
						switch {
						case reversed || strings.Contains(ss.Error, "corresponds to no data"):
							want = splitspec.ErrEmptySplit
						case strings.Contains(ss.Error, "Unknown split"):
							want = splitspec.ErrUnknownSplit
						}
						if !errors.Is(err, want) {
							t.Errorf("Resolve error %v, want %v (TFDS: %s)", err, want, ss.Error)
						}
						return
					}
					if err != nil {
						t.Fatalf("Resolve: %v; TFDS reads %d episodes", err, len(ss.EpisodeIDs))
					}
					var got []int64
					for _, r := range ranges {
						got = append(got, ids[r.Split][r.From:r.To]...)
					}
					if !slices.Equal(got, ss.EpisodeIDs) {
						t.Errorf("episode ids %v, TFDS %v", got, ss.EpisodeIDs)
					}
					var gotFI, wantFI []string
					for _, fi := range fileInstructions(info, ranges) {
						names, _ := info.ShardNames(fi.Split)
						gotFI = append(gotFI, fmtFI(names[fi.Shard], fi.Skip, fi.Take))
					}
					for _, fi := range ss.FileInstructions {
						take := fi.Take
						if take == -1 {
							take = fi.ExamplesInShard - fi.Skip
						}
						wantFI = append(wantFI, fmtFI(fi.File, fi.Skip, take))
					}
					if !slices.Equal(gotFI, wantFI) {
						t.Errorf("file instructions %v, TFDS %v", gotFI, wantFI)
					}
				})
			}
		})
	}
}

// neutralSplits is the dataset's splits as format/rlds hands them to the
// split grammar.
func neutralSplits(info *DatasetInfo) []episode.Split {
	var out []episode.Split
	for _, s := range info.Splits {
		out = append(out, episode.Split{Name: s.Name, ShardEpisodes: s.ShardLengths})
	}
	return out
}

// fileInstruction is one shard read of TFDS's file_instructions: take
// records after skipping skip.
type fileInstruction struct {
	Split      string
	Shard      int
	Skip, Take int64
}

// fileInstructions turns ranges into per-shard reads through Locate, the way
// format/rlds walks them.
func fileInstructions(info *DatasetInfo, ranges []episode.Range) []fileInstruction {
	var out []fileInstruction
	for _, r := range ranges {
		s, _ := info.Split(r.Split)
		for i := r.From; i < r.To; {
			shard, rec := s.Locate(i)
			take := min(s.ShardLengths[shard]-rec, r.To-i)
			out = append(out, fileInstruction{r.Split, shard, rec, take})
			i += take
		}
	}
	return out
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fmtFI(file string, skip, take int64) string {
	return file + "[" + itoa(skip) + "+" + itoa(take) + "]"
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// checkExampleKeys compares the Example keys a real record holds (and their
// list kinds) with those the flattened features predict.
func checkExampleKeys(t *testing.T, feats *Features, real []testkit.ManifestExampleKey) {
	t.Helper()
	want := map[string]string{}
	for _, f := range feats.All() {
		keys := f.ExampleKeys()
		for i, k := range keys {
			kind := listKind(f)
			if i > 0 { // ragged row lengths
				kind = "int64_list"
			}
			want[k] = kind
		}
	}
	got := map[string]string{}
	for _, k := range real {
		got[k.Key] = k.Kind
	}
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if got[k] != want[k] {
			f, _ := feats.Lookup(k)
			if got[k] == "" && f.Optional {
				continue
			}
			t.Errorf("Example key %q: record has %q, features.json predicts %q", k, got[k], want[k])
		}
	}
}

// listKind is the tf.train.Feature list TFDS writes a feature's values into.
func listKind(f Feature) string {
	switch {
	case f.Kind != episode.KindTensor && f.Kind != episode.KindClassLabel:
		return "bytes_list" // images, videos, text
	case f.Kind == episode.KindClassLabel:
		return "int64_list"
	case f.Encoding == "bytes" || f.Encoding == "zlib" || f.DType == "string":
		return "bytes_list"
	case strings.HasPrefix(f.DType, "float") || f.DType == "bfloat16":
		return "float_list"
	default:
		return "int64_list"
	}
}
