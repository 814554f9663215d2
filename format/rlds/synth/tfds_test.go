package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"testing"

	"github.com/oxefs/oxefs/internal/pythontest"
)

// tfdsReport is what testdata/tfds_read.py prints: per dataset and split,
// the episodes TFDS iterated, their steps, and the dtype and shape of every
// decoded feature.
type tfdsReport map[string]map[string]struct {
	Episodes       int                `json:"episodes"`
	Steps          []int              `json:"steps"`
	Features       map[string]decoded `json:"features"`
	FirstLanguage  string             `json:"first_language"`
	FirstEpisodeID int64              `json:"first_episode_id"`
}

// TestTensorFlowDatasetsReads has tensorflow_datasets itself read a small
// synthetic mix: tfds.builder_from_directory(dir).as_dataset(split) must
// iterate every episode of every split and decode every feature to the
// declared dtype and shape. CI has no TensorFlow, so the test is skipped
// there; run it where `python3 -c "import tensorflow_datasets"` works.
func TestTensorFlowDatasetsReads(t *testing.T) {
	// Without TensorFlow the synthetic datasets are NOT verified against
	// TFDS here: install tensorflow-cpu and tensorflow-datasets to run it.
	py := pythontest.Find(t, "tensorflow_datasets")
	o := Options{Datasets: 4, Episodes: 2, Steps: 4}
	res := generate(t, o)
	args := []string{"testdata/tfds_read.py"}
	for _, d := range res.Datasets {
		args = append(args, d.Dir)
	}
	cmd := exec.Command(py, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tensorflow_datasets could not read the datasets: %v\n%s", err, stderr.Bytes())
	}
	var rep tfdsReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, d := range res.Datasets {
		got, ok := rep[d.Name]
		if !ok {
			t.Errorf("%s: not in the TFDS report", d.Name)
			continue
		}
		want := map[string]decoded{
			"steps/is_first":              {"bool", []int{}},
			"steps/is_last":               {"bool", []int{}},
			"steps/is_terminal":           {"bool", []int{}},
			"steps/reward":                {"float32", []int{}},
			"steps/discount":              {"float32", []int{}},
			"episode_metadata/episode_id": {"int64", []int{}},
			"episode_metadata/file_path":  {"string", []int{}},
		}
		for _, c := range d.Cameras {
			want[c.Key] = decoded{"uint8", []int{c.Height, c.Width, 3}}
		}
		for _, a := range d.Actions {
			want[a.Key] = decoded{"float32", []int{a.Dim}}
		}
		if d.State.Key != "" {
			want[d.State.Key] = decoded{"float32", []int{d.State.Dim}}
		}
		if d.Language.Codepoints > 0 {
			want[d.Language.Key] = decoded{"int32", []int{d.Language.Codepoints}}
		} else {
			want[d.Language.Key] = decoded{"string", []int{}}
		}
		for _, split := range []string{"train", "val"} {
			s := got[split]
			if s.Episodes != d.SplitEpisodes[split] {
				t.Errorf("%s %s: TFDS read %d episodes, want %d", d.Name, split, s.Episodes, d.SplitEpisodes[split])
			}
			if slices.ContainsFunc(s.Steps, func(n int) bool { return n != o.Steps }) {
				t.Errorf("%s %s: TFDS read episodes of %v steps, want %d", d.Name, split, s.Steps, o.Steps)
			}
			if s.FirstLanguage == "" {
				t.Errorf("%s %s: no language", d.Name, split)
			}
			if len(s.Features) != len(want) {
				t.Errorf("%s %s: TFDS decoded %d features, want %d", d.Name, split, len(s.Features), len(want))
			}
			for key, w := range want {
				if f, ok := s.Features[key]; !ok || f.DType != w.DType || !slices.Equal(f.Shape, w.Shape) {
					t.Errorf("%s %s %s: TFDS decoded %v (present %v), want %v", d.Name, split, key, f, ok, w)
				}
			}
		}
	}
}

// decoded is one feature as TFDS decoded it: dtype and the shape of one
// step's value. The script prints it as [dtype, shape].
type decoded struct {
	DType string
	Shape []int
}

func (f *decoded) UnmarshalJSON(b []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil {
		return err
	}
	if len(pair) != 2 {
		return fmt.Errorf("feature %s: want [dtype, shape]", b)
	}
	if err := json.Unmarshal(pair[0], &f.DType); err != nil {
		return err
	}
	return json.Unmarshal(pair[1], &f.Shape)
}
