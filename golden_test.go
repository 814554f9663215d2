package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/internal/missing"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/batch"
	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/loader"
)

// goldenView is one view of a pipeline opened by openGolden: get returns
// batch n's .npy file (header and array) and its .json file (nil when the
// mix has no metadata); limit is one past the largest index it serves.
type goldenView struct {
	limit int64
	get   func(n int64) (npy, meta []byte, err error)
}

// goldenPipe is what openGolden returns: the train view, the val view (nil
// without one) and the number of episodes substituted so far.
type goldenPipe struct {
	train, val    *goldenView
	substitutions func() int64
}

// openGolden opens the pipeline for a mix config (YAML) in-process, with a
// fixed decoder so the digests do not depend on libjpeg-turbo's presence.
// It is the only code here that names the pipeline's packages: when they
// move, only this function changes.
func openGolden(t *testing.T, yaml string) (*goldenPipe, error) {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		return nil, err
	}
	p, err := loader.Open(context.Background(), loader.Options{
		Config: cfg, CacheDir: t.TempDir(), Mem: 256 << 20, Disk: 1 << 30,
		Workers: 2, Decoder: "go", Version: "golden", Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(p.Close)
	view := func(s *batch.Scheduler) *goldenView {
		if s == nil {
			return nil
		}
		return &goldenView{limit: s.Limit(), get: func(n int64) ([]byte, []byte, error) {
			b, err := s.Get(context.Background(), n)
			if err != nil {
				return nil, nil, err
			}
			defer b.Release()
			return bytes.Join(b.NPY(), nil), bytes.Clone(b.Meta()), nil
		}}
	}
	return &goldenPipe{train: view(p.Train), val: view(p.Val), substitutions: func() int64 {
		var n int64
		subs, _ := p.Builds.Substitutions()
		for _, c := range subs {
			n += c
		}
		return n
	}}, nil
}

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden/batches.json from the batches built now")

const goldenFile = "testdata/golden/batches.json"

// goldenDigest is one batch's digests: SHA-256 of the .npy file and of the
// .json file ("" when the mix has no metadata).
type goldenDigest struct {
	NPY  string `json:"npy"`
	Meta string `json:"meta"`
}

// goldenCase is a small mix whose batches are digested; subs: the case
// must substitute at least one episode.
type goldenCase struct {
	name string
	yaml string
	subs bool
}

// goldenCases are small mixes over the committed fixtures, each covering a
// part of the sample and batch assembly. $DATA is testdata (absolute).
var goldenCases = []goldenCase{
	{name: "single_default", yaml: `
batch_size: 4
image_size: [16, 24]
datasets:
  - source: $DATA/datasets/tiny_bridge/1.0.0
    image_key: steps/observation/image
`},
	{name: "mix3_weighted", yaml: `
seed: 7
batch_size: 6
image_size: [20, 20]
samples_per_episode: 2
datasets:
  - name: bridge
    source: $DATA/datasets/tiny_bridge/1.0.0
    val_split: val
    weight: 0.5
    image_key: steps/observation/image
    offset: [1, 3]
    language_key: steps/language_instruction
    action_keys: [steps/action/world_vector, steps/action/rotation_delta]
    state_key: steps/observation/state
    robot: widowx
  - name: table
    source: $DATA/datasets/tiny_table/1.0.0
    weight: 0.3
    image_key: steps/observation/rgb
    offset: 2
    language_key: steps/observation/instruction
    action_keys: [steps/action]
    state_key: steps/observation/effector_translation
  - name: kuka
    source: $DATA/datasets/tiny_kuka/1.0.0
    val_split: test
    weight: 0.2
    image_key: steps/observation/image
    offset: 2
    language_key: episode_metadata/language_instruction
    action_keys: [steps/action]
    state_key: steps/observation/joint_bytes
`},
	{name: "all_crop_bcfhw", yaml: `
seed: 3
batch_size: 4
image_size: [12, 20]
layout: BCFHW
pair_frames: all
resize: crop
datasets:
  - name: bridge
    source: $DATA/datasets/tiny_bridge/1.0.0
    image_key: steps/observation/image
    offset: 3
    action_keys: [steps/action/world_vector]
  - name: kuka
    source: $DATA/datasets/tiny_kuka/1.0.0
    image_key: steps/observation/image
    offset: 3
    action_keys: [steps/action]
`},
	{name: "stride_pad_bcfhw", yaml: `
seed: 11
batch_size: 4
image_size: [18, 14]
layout: BCFHW
pair_frames: stride
stride: 2
resize: pad
meta: dataset
datasets:
  - source: $DATA/datasets/tiny_table/1.0.0
    image_key: steps/observation/rgb
    offset: 4
`},
	{name: "fixed_n_crop", yaml: `
seed: 5
batch_size: 4
image_size: [16, 16]
pair_frames: fixed_n
num_frames: 3
resize: crop
meta: none
datasets:
  - source: $DATA/datasets/tiny_bridge/1.0.0
    image_key: steps/observation/wrist_image
    offset: [2, 4]
`},
	{name: "every_pair", yaml: `
seed: 2
batch_size: 8
image_size: [8, 12]
samples_per_episode: 0
window_shards: 1
datasets:
  - source: $DATA/datasets/tiny_kuka/1.0.0
    image_key: steps/observation/image
    val_split: test
    offset: [1, 2]
    action_keys: [steps/action]
`},
	{name: "substitute_bad_crc", subs: true, yaml: `
seed: 1
batch_size: 5
image_size: [10, 18]
datasets:
  - name: table
    source: $DATA/corrupt/bad_crc
    image_key: steps/observation/rgb
    offset: 1
`},
}

// goldenBatches are the batches digested per view: the first two and, on
// the train view, a far one of a later epoch; the val view (one pass) adds
// its last.
func goldenBatches(v *goldenView, val bool) []int64 {
	out := []int64{0, 1}
	if val {
		out = append(out, v.limit-1)
	} else {
		out = append(out, 1000)
	}
	return slices.DeleteFunc(slices.Compact(out), func(n int64) bool { return n >= v.limit })
}

// TestGoldenBatches builds a few batches of small fixture mixes and
// compares the digests of their files with testdata/golden/batches.json:
// the bytes served for a config and seed must not change. After an
// intended change, rewrite the file with
//
//	go test -run TestGoldenBatches -update-golden .
func TestGoldenBatches(t *testing.T) {
	checkGolden(t, goldenCases, goldenFile)
}

// goldenLeRobotFile holds the digests of lerobotGoldenCases.
const goldenLeRobotFile = "testdata/golden/lerobot.json"

// lerobotGoldenCases mix the LeRobot fixtures (AV1 and H.264 video, PNG
// images in parquet) with RLDS: the bytes served must not change either.
var lerobotGoldenCases = []goldenCase{
	{name: "lerobot_mixed", yaml: `
seed: 9
batch_size: 6
image_size: [20, 28]
samples_per_episode: 2
datasets:
  - name: bridge
    source: $DATA/datasets/tiny_bridge/1.0.0
    weight: 0.3
    image_key: steps/observation/image
    offset: [1, 3]
    language_key: steps/language_instruction
    action_keys: [steps/action/world_vector]
  - name: top
    source: $DATA/lerobot/lerobot_av1
    val_split: val
    weight: 0.3
    image_key: observation.images.top
    offset: [1, 4]
    language_key: task
    action_keys: [action]
    state_key: observation.state
  - name: side
    source: $DATA/lerobot/lerobot_av1
    weight: 0.2
    image_key: observation.images.side
    offset: 2
    action_keys: [action]
  - name: front
    source: $DATA/lerobot/lerobot_h264
    weight: 0.2
    image_key: observation.images.front
    offset: [2, 5]
    language_key: task
    action_keys: [action]
    state_key: observation.state
`},
	{name: "lerobot_every_pair_bcfhw", yaml: `
seed: 1
batch_size: 5
image_size: [16, 16]
layout: BCFHW
pair_frames: all
resize: crop
samples_per_episode: 0
datasets:
  - source: $DATA/lerobot/lerobot_h264
    image_key: observation.images.front
    offset: 2
    action_keys: [action]
`},
}

// TestGoldenLeRobot is TestGoldenBatches for mixes with LeRobot datasets;
// rewrite its file with
//
//	go test -run TestGoldenLeRobot -update-golden .
func TestGoldenLeRobot(t *testing.T) {
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	checkGolden(t, lerobotGoldenCases, goldenLeRobotFile)
}

// checkGolden builds the cases' golden batches and compares their digests
// with file, or rewrites file with -update-golden.
func checkGolden(t *testing.T, cases []goldenCase, file string) {
	data, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]goldenDigest{}
	if !*updateGolden {
		want = readGolden(t, file)
	}
	got := goldenDigests(t, cases, func(yaml string) string { return strings.ReplaceAll(yaml, "$DATA", data) })
	if *updateGolden {
		b, err := json.MarshalIndent(got, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d digests to %s", len(got), file)
		return
	}
	compareGolden(t, want, got, file)
}

// readGolden reads the digests in file.
func readGolden(t *testing.T, file string) map[string]goldenDigest {
	t.Helper()
	want := map[string]goldenDigest{}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update-golden to write it)", err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return want
}

// goldenDigests builds the cases' golden batches, each case's YAML
// rewritten by sources (which places $DATA), and returns their digests by
// case/view/batch.
func goldenDigests(t *testing.T, cases []goldenCase, sources func(yaml string) string) map[string]goldenDigest {
	t.Helper()
	got := map[string]goldenDigest{}
	for _, tc := range cases {
		p, err := openGolden(t, sources(tc.yaml))
		if err != nil {
			t.Fatalf("case %s: %v", tc.name, err)
		}
		maps.Copy(got, caseDigests(t, tc, p))
		if tc.subs && p.substitutions() == 0 {
			t.Errorf("case %s: no episode substituted; the case no longer covers substitution", tc.name)
		}
	}
	return got
}

// compareGolden reports each digest of got that differs from want's, and
// each batch in one but not the other.
func compareGolden(t *testing.T, want, got map[string]goldenDigest, file string) {
	t.Helper()
	keys := make([]string, 0, len(want)+len(got))
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inGot:
			t.Errorf("%s (case/view/batch): in %s but not built now", k, file)
		case !inWant:
			t.Errorf("%s (case/view/batch): built now but not in %s", k, file)
		default:
			if w.NPY != g.NPY {
				t.Errorf("%s (case/view/batch): .npy bytes changed: sha256 %s, want %s", k, g.NPY, w.NPY)
			}
			if w.Meta != g.Meta {
				t.Errorf("%s (case/view/batch): .json bytes changed: sha256 %s, want %s", k, g.Meta, w.Meta)
			}
		}
	}
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
