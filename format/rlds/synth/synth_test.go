package synth

import (
	"github.com/oxefs/oxefs/format/synthetic"
	"github.com/oxefs/oxefs/storage"
	_ "github.com/oxefs/oxefs/storage/local"

	"bytes"
	"context"
	"image"
	_ "image/jpeg"
	_ "image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format/rlds"
	"github.com/oxefs/oxefs/format/rlds/tfds"
	"github.com/oxefs/oxefs/store"
)

// generate runs Generate into a fresh directory and fails the test on error.
func generate(t testing.TB, o Options) *Result {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	res, err := Generate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// small is the configuration most tests read: the first four datasets
// cover dict and flat actions, one and two cameras, Text and code-point
// language, JPEG and PNG.
var small = Options{Datasets: 4, Episodes: 3, Steps: 20}

func openDataset(t *testing.T, st *store.Store, dir string) *rlds.Dataset {
	t.Helper()
	src, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := rlds.Open(context.Background(), st, "", src)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestStoreReadsEveryEpisode(t *testing.T) {
	res := generate(t, small)
	if len(res.Datasets) != 4 {
		t.Fatalf("%d datasets, want 4", len(res.Datasets))
	}
	st, err := store.NewStore(store.Options{IndexDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sawPNG, sawCodepoints, sawDict := false, false, false
	for _, d := range res.Datasets {
		t.Run(d.Name, func(t *testing.T) {
			ds := openDataset(t, st, d.Dir)
			if ds.Meta.Name != d.Name || ds.Meta.Version != version {
				t.Errorf("dataset_info names %s %s, want %s %s", ds.Meta.Name, ds.Meta.Version, d.Name, version)
			}
			checkFeatures(t, d.Dataset, ds.Features)
			for _, split := range []string{"train", "val"} {
				info, ok := ds.Meta.Split(split)
				if !ok {
					t.Fatalf("no split %s", split)
				}
				if got, want := info.NumExamples(), int64(d.SplitEpisodes[split]); got != want {
					t.Errorf("%s: %d episodes, want %d", split, got, want)
				}
				size := int64(0)
				index := 0
				for shard, n := range info.ShardLengths {
					name, err := ds.ShardName(split, shard)
					if err != nil {
						t.Fatal(err)
					}
					fi, err := os.Stat(filepath.Join(d.Dir, name))
					if err != nil {
						t.Fatal(err)
					}
					size += fi.Size()
					for rec := range int(n) {
						ep, err := ds.Episode(context.Background(), rlds.Ref{Split: split, Shard: shard, Record: rec})
						if err != nil {
							t.Fatalf("%s shard %d record %d: %v", split, shard, rec, err)
						}
						id := int64(index)
						if split == "val" {
							id += int64(d.SplitEpisodes["train"])
						}
						checkEpisode(t, d.Dataset, ep, small.Steps, id)
						index++
					}
				}
				if size != info.NumBytes {
					t.Errorf("%s: numBytes %d, shards hold %d", split, info.NumBytes, size)
				}
			}
		})
		sawPNG = sawPNG || d.PNG
		sawCodepoints = sawCodepoints || d.Language.Codepoints > 0
		sawDict = sawDict || len(d.Actions) > 1
	}
	if !sawPNG || !sawCodepoints || !sawDict {
		t.Errorf("the small run lacks a layout: png %v, code points %v, dict actions %v", sawPNG, sawCodepoints, sawDict)
	}
	checkMixFiles(t, res)
}

// checkFeatures compares the parsed features.json with the layout.
func checkFeatures(t *testing.T, d synthetic.Dataset, feats *tfds.Features) {
	t.Helper()
	var want []string
	for _, l := range leaves(d) {
		want = append(want, l.key)
	}
	slices.Sort(want)
	if got := feats.Keys(); !slices.Equal(got, want) {
		t.Errorf("features %v, want %v", got, want)
	}
	for _, c := range d.Cameras {
		f, _ := feats.Lookup(c.Key)
		format := map[bool]string{true: "png", false: "jpeg"}[d.PNG]
		if f.Kind != episode.KindImage || f.Encoding != format || !slices.Equal(f.Shape, []int{c.Height, c.Width, 3}) || !f.PerStep {
			t.Errorf("%s: %v %s %v per-step %v, want a %s image [%d %d 3]", c.Key, f.Kind, f.Encoding, f.Shape, f.PerStep, format, c.Height, c.Width)
		}
	}
	tensors := slices.Clone(d.Actions)
	if d.State.Key != "" {
		tensors = append(tensors, d.State)
	}
	for _, a := range tensors {
		f, _ := feats.Lookup(a.Key)
		if f.Kind != episode.KindTensor || f.DType != "float32" || !slices.Equal(f.Shape, []int{a.Dim}) {
			t.Errorf("%s: %v %s %v, want float32 [%d]", a.Key, f.Kind, f.DType, f.Shape, a.Dim)
		}
	}
	lang, _ := feats.Lookup(d.Language.Key)
	if d.Language.Codepoints > 0 {
		if lang.Kind != episode.KindTensor || lang.DType != "int32" || !slices.Equal(lang.Shape, []int{d.Language.Codepoints}) {
			t.Errorf("%s: %v %s %v, want int32 [%d]", lang.Key, lang.Kind, lang.DType, lang.Shape, d.Language.Codepoints)
		}
	} else if lang.Kind != episode.KindText || !lang.PerStep {
		t.Errorf("%s: %v, want per-step text", lang.Key, lang.Kind)
	}
	for _, k := range []string{"steps/is_first", "steps/is_last", "steps/is_terminal"} {
		if f, _ := feats.Lookup(k); f.DType != "bool" || len(f.Shape) != 0 {
			t.Errorf("%s: %s %v, want a bool scalar", k, f.DType, f.Shape)
		}
	}
}

func checkEpisode(t *testing.T, d synthetic.Dataset, ep episode.Episode, steps int, id int64) {
	t.Helper()
	where := ep.ID()
	if ep.Steps() != steps {
		t.Fatalf("%s: %d steps, want %d", where, ep.Steps(), steps)
	}
	view := func(key string) episode.View {
		v, err := ep.Feature(key)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		return v
	}
	ints := func(key string) []int64 {
		got, err := view(key).Int64s(nil)
		if err != nil {
			t.Fatalf("%s %s: %v", where, key, err)
		}
		return got
	}
	floats := func(key string, per int) []float64 {
		v := view(key)
		if v.Per() != per {
			t.Errorf("%s %s: %d values per step, want %d", where, key, v.Per(), per)
		}
		got, err := v.Float64s(nil)
		if err != nil {
			t.Fatalf("%s %s: %v", where, key, err)
		}
		return got
	}
	first, last, terminal := ints("steps/is_first"), ints("steps/is_last"), ints("steps/is_terminal")
	reward, discount := floats("steps/reward", 1), floats("steps/discount", 1)
	for s := range steps {
		isFirst, isLast := int64(0), int64(0)
		if s == 0 {
			isFirst = 1
		}
		if s == steps-1 {
			isLast = 1
		}
		if first[s] != isFirst || last[s] != isLast || terminal[s] != isLast || reward[s] != float64(isLast) || discount[s] != 1 {
			t.Errorf("%s step %d: is_first %d is_last %d is_terminal %d reward %v discount %v",
				where, s, first[s], last[s], terminal[s], reward[s], discount[s])
		}
	}
	for _, a := range d.Actions {
		vals := floats(a.Key, a.Dim)
		if allZero(vals) {
			t.Errorf("%s %s: all zero", where, a.Key)
		}
	}
	if d.State.Key != "" {
		floats(d.State.Key, d.State.Dim)
	}
	for _, c := range d.Cameras {
		v := view(c.Key)
		var prev []byte
		for s := range steps {
			data := v.Bytes(s)
			img, format, err := image.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s %s step %d: %v", where, c.Key, s, err)
			}
			if format != v.Spec().Encoding || img.Bounds().Dy() != c.Height || img.Bounds().Dx() != c.Width {
				t.Fatalf("%s %s step %d: %s %v, want %s %dx%d", where, c.Key, s, format, img.Bounds().Size(), v.Spec().Encoding, c.Height, c.Width)
			}
			if bytes.Equal(data, prev) {
				t.Errorf("%s %s step %d: same frame as the step before", where, c.Key, s)
			}
			prev = data
		}
	}
	lang := view(d.Language.Key)
	var texts []string
	if d.Language.Codepoints > 0 {
		cps := ints(d.Language.Key)
		n := d.Language.Codepoints
		for s := range steps {
			row := cps[s*n : (s+1)*n]
			end := slices.Index(row, 0)
			if end <= 0 || slices.ContainsFunc(row[end:], func(c int64) bool { return c != 0 }) {
				t.Fatalf("%s step %d: code points %v are not a zero-padded string", where, s, row[:min(end+2, n)])
			}
			var b strings.Builder
			for _, c := range row[:end] {
				b.WriteRune(rune(c))
			}
			texts = append(texts, b.String())
		}
	} else {
		for s := range steps {
			texts = append(texts, string(lang.Bytes(s)))
		}
	}
	for s, text := range texts {
		if text == "" || !utf8.ValidString(text) || text != texts[0] {
			t.Errorf("%s step %d: language %q (step 0: %q)", where, s, text, texts[0])
		}
	}
	if got := ints("episode_metadata/episode_id"); len(got) != 1 || got[0] != id {
		t.Errorf("%s: episode_id %v, want %d", where, got, id)
	}
	if path := string(view("episode_metadata/file_path").Bytes(0)); !strings.HasPrefix(path, "synthetic://"+d.Name+"/") {
		t.Errorf("%s: file_path %q", where, path)
	}
}

func allZero(v []float64) bool {
	return !slices.ContainsFunc(v, func(x float64) bool { return x != 0 })
}

// mixFileYAML is the README's mix config, the keys synth writes. Decoding
// with KnownFields fails on any other key, as the strict mix parser would.
type mixFileYAML struct {
	Seed       uint64         `yaml:"seed"`
	BatchSize  int            `yaml:"batch_size"`
	ImageSize  []int          `yaml:"image_size"`
	NumBatches int64          `yaml:"num_batches"`
	Datasets   []mixEntryYAML `yaml:"datasets"`
}

type mixEntryYAML struct {
	Name        string   `yaml:"name"`
	Source      string   `yaml:"source"`
	Split       string   `yaml:"split"`
	ValSplit    string   `yaml:"val_split"`
	Weight      float64  `yaml:"weight"`
	ImageKey    string   `yaml:"image_key"`
	Offset      int      `yaml:"offset"`
	LanguageKey string   `yaml:"language_key"`
	ActionKeys  []string `yaml:"action_keys"`
	StateKey    string   `yaml:"state_key"`
}

func readMix(t *testing.T, path string) mixFileYAML {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var m mixFileYAML
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func checkMixFiles(t *testing.T, res *Result) {
	t.Helper()
	byName := map[string]DatasetResult{}
	for _, d := range res.Datasets {
		byName[d.Name] = d
	}
	dir := filepath.Dir(filepath.Dir(res.Datasets[0].Dir))
	want := []string{"mix.yaml", "mix-single.yaml", "mix-two-copies.yaml", "mix-steps.yaml"}
	if len(res.MixFiles) != len(want) {
		t.Errorf("mix files %v, want %v", res.MixFiles, want)
	}
	for i, f := range res.MixFiles[:min(len(want), len(res.MixFiles))] {
		if f != filepath.Join(dir, want[i]) {
			t.Errorf("mix file %d is %s, want %s", i, f, filepath.Join(dir, want[i]))
		}
	}
	check := func(file string, e mixEntryYAML, d DatasetResult) {
		t.Helper()
		if e.Source != d.Dir || !filepath.IsAbs(e.Source) {
			t.Errorf("%s %s: source %q, want %q", file, e.Name, e.Source, d.Dir)
		}
		if e.ImageKey != d.Cameras[0].Key || e.LanguageKey != d.Language.Key || e.StateKey != d.State.Key {
			t.Errorf("%s %s: keys %q %q %q", file, e.Name, e.ImageKey, e.LanguageKey, e.StateKey)
		}
		var actions []string
		for _, a := range d.Actions {
			actions = append(actions, a.Key)
		}
		if !slices.Equal(e.ActionKeys, actions) {
			t.Errorf("%s %s: action_keys %v, want %v", file, e.Name, e.ActionKeys, actions)
		}
		if e.Offset < 1 || e.Offset >= small.Steps || e.Weight <= 0 {
			t.Errorf("%s %s: offset %d weight %v", file, e.Name, e.Offset, e.Weight)
		}
	}

	all := readMix(t, filepath.Join(dir, "mix.yaml"))
	if all.BatchSize <= 0 || !slices.Equal(all.ImageSize, []int{256, 256}) || all.NumBatches != mixNumBatches {
		t.Errorf("mix.yaml: batch_size %d image_size %v num_batches %d", all.BatchSize, all.ImageSize, all.NumBatches)
	}
	if len(all.Datasets) != len(res.Datasets) {
		t.Fatalf("mix.yaml lists %d datasets, want %d", len(all.Datasets), len(res.Datasets))
	}
	for i, e := range all.Datasets {
		d := res.Datasets[i]
		if e.Name != d.Name || e.Split != "train" || e.ValSplit != "val" {
			t.Errorf("mix.yaml entry %d: %s %s %s, want %s train val", i, e.Name, e.Split, e.ValSplit, d.Name)
		}
		check("mix.yaml", e, d)
	}

	single := readMix(t, filepath.Join(dir, "mix-single.yaml"))
	if len(single.Datasets) != 1 || single.Datasets[0].Name != singleDataset || single.Datasets[0].Split != "train" {
		t.Fatalf("mix-single.yaml: %+v", single.Datasets)
	}
	check("mix-single.yaml", single.Datasets[0], byName[singleDataset])

	two := readMix(t, filepath.Join(dir, "mix-two-copies.yaml"))
	if len(two.Datasets) != 2 {
		t.Fatalf("mix-two-copies.yaml: %d datasets, want 2", len(two.Datasets))
	}
	a, b := two.Datasets[0], two.Datasets[1]
	if a.Name == b.Name || a.Source != b.Source || a.Weight != b.Weight ||
		a.Split != "train[:50%]" || b.Split != "train[50%:]" || a.ValSplit != "val[:50%]" || b.ValSplit != "val[50%:]" {
		t.Errorf("mix-two-copies.yaml: %+v", two.Datasets)
	}
	for _, e := range two.Datasets {
		check("mix-two-copies.yaml", e, byName[singleDataset])
	}
}

// TestSplitsResolve checks that the split strings of the mix configs select
// episodes in the written datasets, the halves disjoint and complete.
func TestSplitsResolve(t *testing.T) {
	res := generate(t, Options{Datasets: 1, Episodes: 5, Steps: 3})
	st, err := store.NewStore(store.Options{IndexDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ds := openDataset(t, st, res.Datasets[0].Dir)
	count := func(spec string) int64 {
		rs, err := ds.Select(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		n := int64(0)
		for _, r := range rs {
			n += r.Len()
		}
		return n
	}
	for _, split := range []string{"train", "val"} {
		all := count(split)
		a, b := count(split+"[:50%]"), count(split+"[50%:]")
		if a == 0 || b == 0 || a+b != all {
			t.Errorf("%s: halves %d + %d, whole %d", split, a, b, all)
		}
	}
}

// TestShardBytes checks that --shard-size sizes each train shard near the
// target whatever the dataset's frame sizes, and that it needs --shards.
func TestShardBytes(t *testing.T) {
	const target = 1 << 20
	res := generate(t, Options{Datasets: 3, Shards: 3, ShardBytes: target, Steps: 10})
	for _, d := range res.Datasets {
		shards, err := filepath.Glob(filepath.Join(d.Dir, d.Name+"-train.tfrecord-*"))
		if err != nil {
			t.Fatal(err)
		}
		if len(shards) != 3 {
			t.Fatalf("%s: %d train shards, want 3", d.Name, len(shards))
		}
		for _, s := range shards {
			st, err := os.Stat(s)
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() < target*2/3 || st.Size() > target*3/2 {
				t.Errorf("%s: %d bytes, want about %d", filepath.Base(s), st.Size(), target)
			}
		}
	}
	_, err := Generate(context.Background(), Options{Dir: t.TempDir(), Datasets: 1, ShardBytes: target})
	if err == nil || !strings.Contains(err.Error(), "--shard-size needs --shards") {
		t.Errorf("--shard-size without --shards: %v", err)
	}
}
