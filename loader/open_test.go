package loader

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/store"
)

const fixtures = "../testdata/datasets/"

func newStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	s, err := store.NewStore(store.Options{IndexDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func openYAML(t *testing.T, st *store.Store, y string, opts MixOptions) (*Mix, error) {
	t.Helper()
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return OpenMix(context.Background(), cfg, &format.Env{Store: st}, opts)
}

const threeDatasets = `
datasets:
  - name: bridge
    source: ` + fixtures + `tiny_bridge/1.0.0
    val_split: val
    weight: 0.5
    image_key: steps/observation/wrist_image
    language_key: steps/language_instruction
    action_keys: [steps/action/world_vector, steps/action/rotation_delta]
    state_key: steps/observation/state
  - name: kuka
    source: ` + fixtures + `tiny_kuka/1.0.0
    weight: 0.25
    action_keys: [steps/action]
    language_key: episode_metadata/language_instruction
  - name: off
    source: /nonexistent/dataset/1.0.0
    weight: 0
  - name: table
    source: ` + fixtures + `tiny_table/1.0.0
    weight: 0.25
    language_key: steps/observation/instruction
    action_keys: steps/action
`

func TestOpen(t *testing.T) {
	st := newStore(t, t.TempDir())
	var logs bytes.Buffer
	m, err := openYAML(t, st, threeDatasets, MixOptions{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "dataset dropped") || !strings.Contains(logs.String(), "dataset=off") {
		t.Errorf("the dropped dataset is not logged:\n%s", logs.String())
	}
	if len(m.Datasets) != 3 || m.Datasets[0].Config.Name != "bridge" || m.Datasets[1].Config.Name != "kuka" || m.Datasets[2].Config.Name != "table" {
		t.Fatalf("datasets %v", m.Datasets)
	}
	if k := m.Config.Datasets[1]; k.ImageKey != "steps/observation/image" || m.Datasets[1].Image.Shape[0] != 120 {
		t.Errorf("kuka's only image was not chosen: %q", k.ImageKey)
	}
	if m.MaxActionDim != 7 || m.MaxStateDim != 7 || m.Datasets[0].ActionDim != 6 || m.Datasets[2].ActionDim != 2 {
		t.Errorf("action dims %d/%d/%d max %d, state %d", m.Datasets[0].ActionDim, m.Datasets[1].ActionDim, m.Datasets[2].ActionDim, m.MaxActionDim, m.MaxStateDim)
	}
	info := m.Train.Info()
	for i, want := range []struct {
		episodes int64
		weight   float64
	}{{24, 0.5}, {8, 0.25}, {10, 0.25}} {
		d := info.Datasets[i]
		if d.Episodes != want.episodes || d.Units != want.episodes || d.Weight != want.weight || d.Source == "" || d.Split != "train" {
			t.Errorf("train %+v", d)
		}
	}
	if info.NumBatches != 1 { // ⌈42 units / 64⌉
		t.Errorf("num_batches %d", info.NumBatches)
	}
	if m.Val == nil {
		t.Fatal("no val view")
	}
	vi := m.Val.Info()
	if vi.Datasets[0].Episodes != 6 || vi.Datasets[0].Weight != 1 || vi.Datasets[1].Weight != 0 || vi.Datasets[2].Weight != 0 {
		t.Errorf("val %+v", vi.Datasets)
	}
	for _, s := range m.Val.Batch(3, nil) {
		if s.Dataset != 0 || s.Episode.Split != "val" {
			t.Fatalf("val sample %+v", s)
		}
	}
	// Every planned episode loads, and Shards names the datasets' shards.
	ctx := context.Background()
	for n := range int64(4) {
		for _, s := range m.Train.Batch(n, nil) {
			if _, err := m.Datasets[s.Dataset].Data.Episode(ctx, s.Episode); err != nil {
				t.Fatalf("batch %d: %v", n, err)
			}
		}
		for _, r := range m.ShardRefs(m.Train.Shards(n, nil)) {
			if _, err := format.FetcherOf(r.Dataset).ShardCached(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	var all []format.ShardRef
	for d := range m.Datasets {
		all = append(all, m.ShardRefs(m.Train.DatasetShards(d))...)
	}
	if len(all) != 3+2+2 || all[0].Dataset != m.Datasets[0].Data || all[6].Dataset != m.Datasets[2].Data {
		t.Errorf("every shard: %v", all)
	}
	// Sharded through the options.
	r1, err := openYAML(t, st, threeDatasets, MixOptions{Rank: 1, World: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r1.Train.Batch(5, nil), m.Train.Batch(11, nil)) {
		t.Error("rank 1 of 2, batch 5 is not global batch 11")
	}
	// Every rank lists as many batches, whatever the division leaves: a
	// world that does not divide the epoch, and one larger than it.
	for _, world := range []int{3, int(m.Train.NumBatches()) + 2} {
		if m.Train.NumBatches()%int64(world) == 0 {
			t.Fatalf("world %d divides the epoch's %d batches; the test needs a remainder", world, m.Train.NumBatches())
		}
		want := (m.Train.NumBatches() + int64(world) - 1) / int64(world)
		for _, rank := range []int{0, world - 1} {
			r, err := openYAML(t, st, threeDatasets, MixOptions{Rank: rank, World: world})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Train.NumBatches(); got != want {
				t.Errorf("rank %d of %d lists %d batches, want %d (every rank the same)", rank, world, got, want)
			}
		}
	}
	if _, err := openYAML(t, st, threeDatasets, MixOptions{Rank: 3, World: 3}); err == nil || !strings.Contains(err.Error(), "0..2") {
		t.Errorf("rank 3 of world 3: %v, want an error naming the valid ranks 0..2", err)
	}
}

// stepsOf reads the fixture manifest's episode lengths, by split.
func stepsOf(t *testing.T, dataset string) map[string][]int32 {
	out := make(map[string][]int32)
	for split, steps := range testkit.LoadManifest(t).Datasets[dataset].Steps() {
		for _, n := range steps {
			out[split] = append(out[split], int32(n))
		}
	}
	return out
}

func TestOpenAllPairs(t *testing.T) {
	dir := t.TempDir()
	y := "samples_per_episode: 0\ndatasets:\n  - name: bridge\n    source: " + fixtures + "tiny_bridge/1.0.0\n" +
		"    image_key: steps/observation/image\n    offset: [5, 8]\n    val_split: val\n"
	var last IndexProgress
	calls := 0
	m, err := openYAML(t, newStore(t, dir), y, MixOptions{Progress: func(p IndexProgress) { last = p; calls++ }})
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || last.Done != 30 || last.Total != 30 || last.Dataset != "bridge" {
		t.Errorf("progress: %d calls, last %+v; want 30 of 30 episodes", calls, last)
	}
	steps := stepsOf(t, "tiny_bridge")
	for _, c := range []struct {
		p     *plan.Plan
		split string
	}{{m.Train, "train"}, {m.Val, "val"}} {
		var units, short int64
		for _, L := range steps[c.split] {
			if L >= 6 {
				units += int64(L - 5)
			} else {
				short++
			}
		}
		d := c.p.Info().Datasets[0]
		if d.Units != units || d.TooShort == nil || *d.TooShort != short {
			t.Errorf("%s: %d units, %v too short; the manifest says %d and %d", c.split, d.Units, d.TooShort, units, short)
		}
		for _, s := range c.p.Batch(0, nil) {
			ep, err := m.Datasets[0].Data.Episode(context.Background(), s.Episode)
			if err != nil {
				t.Fatal(err)
			}
			if s.Unit+5 >= ep.Steps() {
				t.Fatalf("t=%d with offset ≥ 5 in an episode of %d steps", s.Unit, ep.Steps())
			}
		}
	}
	// The index persists: a second Open reads no episode.
	calls = 0
	if _, err := openYAML(t, newStore(t, dir), y, MixOptions{Progress: func(IndexProgress) { calls++ }}); err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Errorf("the second Open indexed again (%d progress calls)", calls)
	}
	if _, err := os.Stat(filepath.Join(dir, "index")); err != nil {
		t.Errorf("no index in the cache directory: %v", err)
	}
}

// TestOpenErrors checks the errors that need dataset metadata: each names
// the line, the dataset, the field and what is valid.
func TestOpenErrors(t *testing.T) {
	st := newStore(t, t.TempDir())
	bridge := "datasets:\n  - name: bridge\n    source: " + fixtures + "tiny_bridge/1.0.0\n"
	img := "    image_key: steps/observation/image\n"
	for _, c := range []struct {
		name string
		yaml string
		want []string
	}{
		{"empty split", bridge + img + "    split: train[:1%]\n", []string{"line 5", `dataset "bridge"`, "split:", `"train[:1%]" selects no episodes (train has 24)`}},
		{"unknown split", bridge + img + "    split: training\n", []string{"split:", "training", "valid: train, val"}},
		{"unknown val split", bridge + img + "    val_split: validation\n", []string{"val_split:", "valid: train, val"}},
		{"missing image key", bridge + "    image_key: steps/observation/img\n",
			[]string{"line 4", `dataset "bridge"`, `image_key: no image feature "steps/observation/img"`, "valid: steps/observation/image, steps/observation/wrist_image"}},
		{"image key required", bridge, []string{`dataset "bridge"`, "image_key: required: the dataset has 2 image features", "steps/observation/image, steps/observation/wrist_image"}},
		{"image key not an image", bridge + "    image_key: steps/observation/state\n", []string{"image_key:", "not a per-step image", "valid: steps/observation/image"}},
		{"language key", bridge + img + "    language_key: steps/observation/natural_language_instruction\n",
			[]string{"line 5", "language_key: no feature", "closest", "steps/language_instruction", "oxefs inspect"}},
		{"action key not numeric", bridge + img + "    action_keys: [steps/action/world_vector, steps/language_instruction]\n",
			[]string{"action_keys:", `"steps/language_instruction" is a per-step string`, "not numeric per-step tensors"}},
		{"action key unknown", bridge + img + "    action_keys: steps/action\n", []string{"action_keys: no feature \"steps/action\"", "steps/action/world_vector"}},
		{"state key", bridge + img + "    state_key: steps/state\n", []string{"state_key: no feature", "steps/observation/state"}},
		{"episode-level action", "datasets:\n  - name: kuka\n    source: " + fixtures + "tiny_kuka/1.0.0\n    action_keys: [episode_metadata/episode_id]\n",
			[]string{`dataset "kuka"`, "an episode-level int64"}},
		{"missing source", "datasets:\n  - name: gone\n    source: /nonexistent/x/1.0.0\n", []string{"line 3", `dataset "gone"`, "source:", "no such directory"}},
		{"every problem at once", bridge + "    split: nope\n  - name: gone\n    source: /nonexistent/x/1.0.0\n",
			[]string{"3 problems", "split:", "image_key:", "source:"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := openYAML(t, st, c.yaml, MixOptions{})
			if err == nil {
				t.Fatal("opened")
			}
			var ce *config.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%T is not a *ConfigError: %v", err, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
			// Each problem names its dataset once, at its start.
			for line := range strings.Lines(err.Error()) {
				for _, name := range []string{"bridge", "kuka", "gone"} {
					if n := strings.Count(line, "dataset "+name) + strings.Count(line, `dataset "`+name+`"`); n > 1 {
						t.Errorf("the dataset is named %d times: %s", n, line)
					}
				}
			}
		})
	}
}
