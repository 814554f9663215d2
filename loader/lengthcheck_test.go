package loader

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/format"
)

// tiny_table's train split: 10 episodes of 11, 7, 4, 12, 14 | 10, 5, 7, 6,
// 13 steps; tiny_bridge's val split: 14, 11, 5 | 7, 7, 13.

// TestOffsetNoEpisodeSatisfies: an offset that no episode of a selection
// is long enough for is a config error at open, naming the dataset, the
// field, the offset and the longest episode, when the lengths can be known:
// a local source, or samples_per_episode 0.
func TestOffsetNoEpisodeSatisfies(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"range beyond every episode", "datasets:\n  - name: table\n    source: " + fixtures + "tiny_table/1.0.0\n    offset: [30, 40]\n",
			[]string{`line 4: dataset "table": offset:`, `split "train"`, "offset [30, 40]", "at least 31 steps", "longest of its 10 episodes has 14", "at most 13"}},
		{"one short episode", "datasets:\n  - name: table\n    source: " + fixtures + "tiny_table/1.0.0\n    split: train[2:3]\n    offset: 4\n",
			[]string{`split "train[2:3]"`, "offset 4", "longest of its 1 episodes has 4"}},
		{"val split", "datasets:\n  - name: bridge\n    source: " + fixtures + "tiny_bridge/1.0.0\n    split: train[4:5]\n    val_split: val[2:4]\n    image_key: steps/observation/image\n    offset: 12\n",
			[]string{`val_split "val[2:4]"`, "offset 12", "has 7"}},
		{"every pair", "samples_per_episode: 0\ndatasets:\n  - name: table\n    source: " + fixtures + "tiny_table/1.0.0\n    offset: 14\n",
			[]string{`split "train"`, "offset 14", "has 14"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openYAML(t, newStore(t, t.TempDir()), tc.yaml, MixOptions{})
			var ce config.ConfigErrors
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want config.ConfigErrors", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			t.Log(err)
		})
	}
	// One long enough episode is enough.
	if _, err := openYAML(t, newStore(t, t.TempDir()), "datasets:\n  - source: "+fixtures+"tiny_table/1.0.0\n    offset: 13\n", MixOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestEpisodesTooShortKnown: info's episodes_too_short is a count where the
// lengths are known (an index exists) and null where they are not.
func TestEpisodesTooShortKnown(t *testing.T) {
	y := "datasets:\n  - source: " + fixtures + "tiny_table/1.0.0\n    offset: 10\n"
	cacheDir := t.TempDir()
	m, err := openYAML(t, newStore(t, cacheDir), y, MixOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Train.Info().Datasets[0]; d.TooShort != nil || d.Unreadable != nil {
		t.Fatalf("no index: episodes_too_short %v, unreadable %v, want null", d.TooShort, d.Unreadable)
	}
	s := newStore(t, cacheDir)
	ds, err := format.Open(context.Background(), "tiny_table", m.Datasets[0].Data.Backend(), &format.Env{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	li, ok := ds.(format.LengthIndexer)
	if !ok {
		t.Fatalf("%T builds no length index", ds)
	}
	if _, err := li.BuildLengths(context.Background(), []string{"train"}, 1, nil); err != nil {
		t.Fatal(err)
	}
	m, err = openYAML(t, s, y, MixOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 11, 12, 14, 13 are long enough for offset 10; 6 are not.
	if d := m.Train.Info().Datasets[0]; d.TooShort == nil || *d.TooShort != 6 || d.Unreadable == nil || *d.Unreadable != 0 {
		t.Fatalf("with an index: episodes_too_short %v, unreadable %v, want 6 and 0", d.TooShort, d.Unreadable)
	}
}
