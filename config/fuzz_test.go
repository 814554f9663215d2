package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// threeDatasets is a mix of three datasets, one of them dropped.
const threeDatasets = `
datasets:
  - name: bridge
    source: testdata/datasets/tiny_bridge/1.0.0
    val_split: val
    weight: 0.5
    image_key: steps/observation/wrist_image
    language_key: steps/language_instruction
    action_keys: [steps/action/world_vector, steps/action/rotation_delta]
    state_key: steps/observation/state
  - name: kuka
    source: testdata/datasets/tiny_kuka/1.0.0
    weight: 0.25
    action_keys: [steps/action]
    language_key: episode_metadata/language_instruction
  - name: off
    source: /nonexistent/dataset/1.0.0
    weight: 0
  - name: table
    source: testdata/datasets/tiny_table/1.0.0
    weight: 0.25
    language_key: steps/observation/instruction
    action_keys: steps/action
`

// FuzzParse: Parse never panics, answers the same way twice, returns only
// ConfigErrors, and a config it accepts survives the JSON round trip that
// info.json takes (JSON is YAML), sample block included.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		threeDatasets,
		"layout: BCFHW\nmeta: dataset\npair_frames: all\nresize: pad\ndatasets:\n  - {name: a, source: /x, offset: 3}\n",
		"datasets:\n  - {name: a, source: /x}\n",
		"seed: 3\nbatch_size: 32\nimage_size: [128, 160]\nlayout: BCFHW\nmeta: none\nsamples_per_episode: 0\n" +
			"pair_frames: fixed_n\nnum_frames: 3\nresize: crop\ndecode: fast\nwindow_shards: 2\nnum_batches: 10\n" +
			"datasets:\n  - name: a\n    source: gs://b/p/a/1.0.0\n    anonymous: true\n    split: train[:90%]\n" +
			"    val_split: train[90%:]\n    weight: 0.54\n    image_key: steps/observation/image\n    offset: [3, 7]\n" +
			"    language_key: steps/language_instruction\n    action_keys: [steps/action]\n    state_key: steps/observation/state\n    robot: widowx\n" +
			"  - {name: b, source: /y, weight: proportionate, offset: 4}\n",
		"pair_frames: stride\nstride: 2\ndatasets:\n  - {source: /d/bridge/0.1.0, offset: 4}\n",
		"normalize: {action: q01_q99, state: mean_std}\ndatasets:\n  - {source: /x, action_keys: [a]}\n",
		"normalize:\n  action: none\n  state: q01_q99\n  state: none\ndatasets: [{source: /x}]\n",
		"x: &a [1, 2]\ny: *a\n",
		"datasets: [{name: a, source: /x, weight: 1/3}, {name: b, source: /x, weight: 1e-5}]",
		"datasets:\n  - &d {name: a, source: /x}\n  - *d\n",
		"{\"seed\": 1, \"datasets\": [{\"name\": \"a\", \"source\": \"/x\", \"weight\": 0.5}]}",
		"batch_size: 0x40\ndatasets:\n- name: a\n  source: /x\n  offset: [1, 0o7]\n",
		"",
		"---\n---\n",
		"datasets:\n  - name: a\n    source: /x\n    weight: -1\n  - name: b\n    source: /x\n",
		// Step samples.
		stepsMix,
		"sample: {}\ndatasets: [{name: a, source: /x, cameras: {}}]\n",
		"sample:\n  drop_last: 3\n  cameras:\n    p: {seconds: [-0.1, 0]}\n    w: {size: [64, 48], steps: \"-4:1:2\"}\n  state: {steps: -1}\n  action: {seconds: [0, 0.1, 0.2]}\n" +
			"datasets:\n  - {name: a, source: /x, fps: 10, cameras: {w: wrist}}\n  - {name: b, source: /y}\n",
		`{"sample": {"cameras": [{"name": "p", "size": [8, 8], "deltas": {"steps": [0]}}], "state": {"seconds": [1e-07]}, "action": {"steps": [0, 1]}, "drop_last": 0}, "datasets": [{"name": "a", "source": "/x", "cameras": {"p": "img"}}]}`,
		"sample:\n  cameras: {p: {steps: \"5:0:-1\", seconds: [0]}}\n  action: {steps: \"0:99999\"}\ndatasets: [{name: a, source: /x, offset: 2, image_key: k}]\n",
		"pair_frames: all\nsample:\n  cameras: [{name: a}, {name: a}]\ndatasets: [{name: a, source: /x, cameras: {b: c}, fps: -1}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		c2, err2 := Parse(b)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("Parse answered %v then %v", err, err2)
		}
		if err != nil {
			var es ConfigErrors
			if !errors.As(err, &es) || len(es) == 0 || err.Error() != err2.Error() {
				t.Fatalf("error %T %q then %q", err, err, err2)
			}
			return
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("two parses differ:\n%+v\n%+v", c, c2)
		}
		js, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		c3, err := Parse(js)
		if err != nil {
			t.Fatalf("the config as loaded does not parse back: %v\n%s", err, js)
		}
		js3, _ := json.Marshal(c3)
		if string(js) != string(js3) {
			t.Fatalf("round trip changed the config:\n%s\n%s", js, js3)
		}
	})
}

// FuzzParseSteps: a slice string either fails or gives exactly Python's
// range(start, stop, step), 1 to 4096 steps, each within ±1048576.
func FuzzParseSteps(f *testing.F) {
	for _, s := range []string{"0:50", "-1:1", "0:16:4", "5:0:-1", "0:1:", " -2 : 3 ", "0:0", "0:10:0", "a:b", "0", "1:2:3:4", "-1048576:-1048570:2", "0:4097"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSteps(s)
		if err != nil {
			if got != nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", s)) {
				t.Fatalf("%q: %v, error %v does not name the slice", s, got, err)
			}
			return
		}
		parts := strings.Split(s, ":")
		start, _ := strconv.Atoi(strings.TrimSpace(parts[0]))
		stop, _ := strconv.Atoi(strings.TrimSpace(parts[1]))
		step := 1
		if len(parts) == 3 && strings.TrimSpace(parts[2]) != "" {
			step, _ = strconv.Atoi(strings.TrimSpace(parts[2]))
		}
		var want []int
		for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
			want = append(want, i)
			if len(want) > maxDeltas {
				t.Fatalf("%q: accepted, but range gives more than %d steps", s, maxDeltas)
			}
		}
		if !slices.Equal(got, want) || len(got) == 0 || slices.Min(got) < -maxSmall || slices.Max(got) > maxSmall {
			t.Fatalf("%q: %v, range gives %v", s, got, want)
		}
	})
}
