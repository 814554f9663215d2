package loader

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/bench"
	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/steps"
)

type episodeKey = episode.Key

// stepConfig parses a pair-mode YAML and makes it a step-mode config:
// the sample block and each dataset's cameras are set in Go (the parser of
// the sample block is package config's).
func stepConfig(t *testing.T, yaml string, s *config.StepSpec, cameras ...map[string]string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	// What config.Parse does for a sample block: deltas left out are t
	// alone, and datasets have no pair offset.
	zero := func(d *config.Deltas) {
		if d.Len() == 0 {
			d.Steps = []int{0}
		}
	}
	for i := range s.Cameras {
		zero(&s.Cameras[i].Deltas)
	}
	zero(&s.State)
	zero(&s.Action)
	cfg.Steps = s
	for i := range cfg.Datasets {
		cfg.Datasets[i].Offset = config.Offset{}
		if i < len(cameras) {
			cfg.Datasets[i].Cameras = cameras[i]
		}
	}
	return cfg
}

func openStepPipeline(t *testing.T, cfg *config.Config, workers int) (*Pipeline, error) {
	t.Helper()
	p, err := Open(context.Background(), Options{
		Config: cfg, CacheDir: t.TempDir(), Mem: 256 << 20, Disk: 1 << 30,
		Workers: workers, Decoder: "go", Version: "test", Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(p.Close)
	return p, nil
}

// npyFile is one parsed .npy file.
type npyFile struct {
	descr string
	shape []int
	data  []byte
}

var npyHeaderDict = regexp.MustCompile(`^\{'descr': '([^']+)', 'fortran_order': False, 'shape': \(([0-9, ]*)\), \} *\n$`)

func parseNPYFile(t *testing.T, name string, b []byte) npyFile {
	t.Helper()
	if len(b) < 10 || string(b[:8]) != "\x93NUMPY\x01\x00" {
		t.Fatalf("%s: not a NumPy 1.0 file", name)
	}
	hl := int(binary.LittleEndian.Uint16(b[8:10]))
	m := npyHeaderDict.FindStringSubmatch(string(b[10 : 10+hl]))
	if m == nil || (10+hl)%64 != 0 {
		t.Fatalf("%s: header %q", name, b[10:10+hl])
	}
	var shape []int
	for _, f := range regexp.MustCompile(`[0-9]+`).FindAllString(m[2], -1) {
		n, _ := strconv.Atoi(f)
		shape = append(shape, n)
	}
	return npyFile{descr: m[1], shape: shape, data: b[10+hl:]}
}

func (f npyFile) f32(i int) []float32 {
	per := len(f.data) / f.shape[0]
	out := make([]float32, per/4)
	for j := range out {
		out[j] = math.Float32frombits(binary.LittleEndian.Uint32(f.data[i*per+4*j:]))
	}
	return out
}

func (f npyFile) bytes(i int) []byte {
	per := len(f.data) / f.shape[0]
	return f.data[i*per : (i+1)*per]
}

func (f npyFile) i64(i int) int64 { return int64(binary.LittleEndian.Uint64(f.data[8*i:])) }

// stepBatch is a step-mode batch read in-process.
type stepBatch struct {
	arrays map[string]npyFile // by array name
	meta   struct {
		DatasetName []string `json:"dataset_name"`
		EpisodeID   []string `json:"episode_id"`
		Task        []string `json:"task"`
		Robot       []string `json:"robot"`
	}
}

func readStepBatch(t *testing.T, p *Pipeline, n int64) stepBatch {
	t.Helper()
	files, err := p.BatchFiles(context.Background(), p.Train, n)
	if err != nil {
		t.Fatal(err)
	}
	b := stepBatch{arrays: map[string]npyFile{}}
	for _, a := range layoutOf(p).Arrays {
		f := parseNPYFile(t, a.File, files["."+a.File])
		if f.descr != a.DType || !slices.Equal(f.shape, a.Shape) {
			t.Fatalf("%s: %s %v, layout %s %v", a.File, f.descr, f.shape, a.DType, a.Shape)
		}
		b.arrays[a.Name] = f
	}
	if err := json.Unmarshal(files[".json"], &b.meta); err != nil {
		t.Fatal(err)
	}
	return b
}

// manifestSteps reads the per-step values TensorFlow read from the RLDS
// fixtures (testdata/manifest.json), by episode id.
func manifestSteps(t *testing.T, dataset string) map[string]struct {
	Action map[string][][]float64 `json:"action"`
	State  map[string][][]float64 `json:"state"`
	Steps  int                    `json:"num_steps"`
} {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testkit.Testdata(t), "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	type rec = struct {
		Action map[string][][]float64 `json:"action"`
		State  map[string][][]float64 `json:"state"`
		Steps  int                    `json:"num_steps"`
	}
	var m struct {
		Datasets map[string]struct {
			Splits map[string]struct {
				Shards []struct {
					File    string `json:"file"`
					Records []rec  `json:"records"`
				} `json:"shards"`
			} `json:"splits"`
		} `json:"datasets"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]rec{}
	shardNo := regexp.MustCompile(`-(\d+)-of-\d+$`)
	for split, sp := range m.Datasets[dataset].Splits {
		for _, sh := range sp.Shards {
			n, _ := strconv.Atoi(shardNo.FindStringSubmatch(sh.File)[1])
			for r, rc := range sh.Records {
				out[fmt.Sprintf("%s/%s/%d/%d", dataset, split, n, r)] = rc
			}
		}
	}
	return out
}

const bridgeActions = "[steps/action/world_vector, steps/action/rotation_delta, steps/action/gripper_closedness_action]"

func bridgeStepYAML(t *testing.T, extra string) string {
	return "batch_size: 8\nsamples_per_episode: 0\nseed: 5\ndatasets:\n  - name: bridge\n    source: " + bridgeSource(t) +
		"\n    action_keys: " + bridgeActions + "\n    state_key: steps/observation/state\n    language_key: steps/language_instruction\n" + extra
}

var bridgeCams = map[string]string{"primary": "steps/observation/image", "wrist": "steps/observation/wrist_image"}

func twoSlots(slot []int) []config.CameraSlot {
	return []config.CameraSlot{
		{Name: "primary", Size: [2]int{48, 64}, Deltas: config.Deltas{Steps: slot}},
		{Name: "wrist", Size: [2]int{32, 32}, Deltas: config.Deltas{Steps: slot}},
		{Name: "third", Size: [2]int{16, 16}},
	}
}

// TestStepsRLDS builds every step sample of tiny_bridge (samples_per_episode
// 0) and checks each against TensorFlow's read of the record: the state
// history and action chunk at clamped deltas, their _is_pad, the masks,
// the indices, and an unmapped slot.
func TestStepsRLDS(t *testing.T) {
	spec := &config.StepSpec{
		Cameras: twoSlots([]int{-1, 0}),
		State:   config.Deltas{Steps: []int{-2, 0}},
		Action:  config.Deltas{Steps: []int{-1, 0, 1, 2, 3, 4, 5, 6, 7, 8}},
	}
	cfg := stepConfig(t, bridgeStepYAML(t, ""), spec, bridgeCams)
	p, err := openStepPipeline(t, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	man := manifestSteps(t, "tiny_bridge")
	seen := map[string]bool{}
	frames := 0 // distinct frames of each batch: (episode, camera, step)
	for n := range p.Train.Len() {
		b := readStepBatch(t, p, n)
		distinct := map[string]bool{}
		for i, id := range b.meta.EpisodeID {
			tt := int(b.arrays["frame_index"].i64(i))
			for _, d := range []int{-1, 0} {
				x := min(max(tt+d, 0), man["tiny_bridge"+strings.TrimPrefix(id, "bridge")].Steps-1)
				distinct[fmt.Sprint(id, "primary", x)] = true
				distinct[fmt.Sprint(id, "wrist", x)] = true
			}
		}
		frames += len(distinct)
		for i, id := range b.meta.EpisodeID {
			rec, ok := man["tiny_bridge"+strings.TrimPrefix(id, "bridge")]
			if !ok {
				t.Fatalf("episode %s not in the manifest", id)
			}
			tt := int(b.arrays["frame_index"].i64(i))
			L := rec.Steps
			seen[fmt.Sprintf("%s@%d", id, tt)] = true
			if d := b.arrays["dataset_index"].i64(i); d != 0 {
				t.Fatalf("dataset_index %d", d)
			}
			st, spad := b.arrays["observation.state"].f32(i), b.arrays["observation.state_is_pad"].bytes(i)
			for j, d := range spec.State.Steps {
				x := min(max(tt+d, 0), L-1)
				for k, v := range rec.State["steps/observation/state"][x] {
					if st[j*7+k] != float32(v) {
						t.Fatalf("%s t=%d state delta %d [%d]: %v, want %v", id, tt, d, k, st[j*7+k], float32(v))
					}
				}
				if want := tt+d < 0 || tt+d >= L; (spad[j] == 1) != want {
					t.Fatalf("%s t=%d state delta %d: is_pad %d", id, tt, d, spad[j])
				}
			}
			act, apad := b.arrays["action"].f32(i), b.arrays["action_is_pad"].bytes(i)
			for j, d := range spec.Action.Steps {
				x := min(max(tt+d, 0), L-1)
				var want []float64
				for _, k := range []string{"steps/action/world_vector", "steps/action/rotation_delta", "steps/action/gripper_closedness_action"} {
					want = append(want, rec.Action[k][x]...)
				}
				for k, v := range want {
					if act[j*7+k] != float32(v) {
						t.Fatalf("%s t=%d action delta %d [%d]: %v, want %v", id, tt, d, k, act[j*7+k], float32(v))
					}
				}
				if w := tt+d < 0 || tt+d >= L; (apad[j] == 1) != w {
					t.Fatalf("%s t=%d action delta %d: is_pad %d", id, tt, d, apad[j])
				}
			}
			if m := b.arrays["image_mask"].bytes(i); !bytes.Equal(m, []byte{1, 1, 0}) {
				t.Fatalf("image_mask %v", m)
			}
			if f := b.arrays["observation.images.third"].bytes(i); bytes.ContainsFunc(f, func(r rune) bool { return r != 0 }) {
				t.Fatal("the unmapped slot has pixels")
			}
			if f := b.arrays["observation.images.primary"].bytes(i); !bytes.ContainsFunc(f, func(r rune) bool { return r != 0 }) {
				t.Fatal("the primary slot is black")
			}
		}
	}
	total := 0
	for id, r := range man {
		if strings.HasPrefix(id, "tiny_bridge/train/") {
			total += r.Steps
		}
	}
	if want := min(total, int(p.Train.Len())*8); len(seen) != want {
		t.Fatalf("%d distinct (episode, t) served, want %d", len(seen), want)
	}
	// Decode once: each batch decoded each of its distinct frames once,
	// not once per position (2 slots × 2 deltas per sample).
	var st struct {
		FramesDecoded *int64 `json:"frames_decoded"`
	}
	if err := json.Unmarshal(p.Stats(), &st); err != nil {
		t.Fatal(err)
	}
	if st.FramesDecoded == nil || *st.FramesDecoded != int64(frames) {
		t.Fatalf("stats.json frames_decoded %v, want the batches' %d distinct frames (of %d positions)", st.FramesDecoded, frames, 4*p.Train.Len()*8)
	}
	t.Logf("%d frames decoded for %d positions", frames, 4*p.Train.Len()*8)
	var info struct {
		Sample struct {
			Mode   string `json:"mode"`
			Arrays []struct {
				Name  string `json:"name"`
				File  string `json:"file"`
				DType string `json:"dtype"`
				Shape []int  `json:"shape"`
			} `json:"arrays"`
		} `json:"sample"`
		Datasets map[string]struct {
			DatasetIndex *int              `json:"dataset_index"`
			Cameras      map[string]string `json:"cameras"`
			Deltas       struct {
				Action []int `json:"action"`
			} `json:"deltas"`
		} `json:"datasets"`
		Frames *struct{} `json:"frames"`
	}
	if err := json.Unmarshal(p.Info(), &info); err != nil {
		t.Fatal(err)
	}
	if info.Sample.Mode != "steps" || len(info.Sample.Arrays) != len(layoutOf(p).Arrays) || info.Sample.Arrays[0].File != "observation.images.primary.npy" ||
		!slices.Equal(info.Sample.Arrays[len(info.Sample.Arrays)-1].Shape, []int{8}) || info.Frames != nil {
		t.Fatalf("info.json sample section: %s", p.Info())
	}
	if d := info.Datasets["bridge"]; d.DatasetIndex == nil || *d.DatasetIndex != 0 || d.Cameras["wrist"] != bridgeCams["wrist"] || !slices.Equal(d.Deltas.Action, spec.Action.Steps) {
		t.Fatalf("info.json datasets.bridge: %+v", d)
	}
}

// TestStepsDeterministic: the same bytes whatever the number of workers
// and the order batches are read in.
func TestStepsDeterministic(t *testing.T) {
	spec := &config.StepSpec{
		Cameras:  twoSlots([]int{-2, -1, 0}),
		State:    config.Deltas{Steps: []int{-1, 0}},
		Action:   config.Deltas{Steps: []int{0, 1, 2, 3}},
		DropLast: 2,
	}
	yaml := "batch_size: 8\nsamples_per_episode: 2\nseed: 9\nlayout: BCFHW\ndatasets:\n  - name: bridge\n    source: " + bridgeSource(t) +
		"\n    action_keys: " + bridgeActions + "\n    state_key: steps/observation/state\n  - name: kuka\n    source: " +
		filepath.Join(testkit.Testdata(t), "datasets/tiny_kuka/1.0.0") + "\n    action_keys: [steps/action]\n"
	digest := func(workers int, reverse bool) [][]byte {
		cfg := stepConfig(t, yaml, spec, bridgeCams, nil)
		p, err := openStepPipeline(t, cfg, workers)
		if err != nil {
			t.Fatal(err)
		}
		return trainBatches(t, p, reverse)
	}
	one := digest(1, false)
	four := digest(4, true)
	if len(one) < 2 {
		t.Fatalf("%d batches", len(one))
	}
	for n := range one {
		if !bytes.Equal(one[n], four[n]) {
			t.Fatalf("batch %d differs between 1 worker in order and 4 workers in reverse", n)
		}
	}
}

// TestStepsMixRLDSAndLeRobot mixes tiny_bridge (RLDS, fps from the
// config) and lerobot_av1 (fps 10 from its metadata, AV1 video) with deltas
// in seconds, each resolved through its own fps, and checks LeRobot's
// actions against what lerobot itself returned (testdata/lerobot/expected.json).
func TestStepsMixRLDSAndLeRobot(t *testing.T) {
	requireVideo(t)
	spec := &config.StepSpec{
		Cameras: []config.CameraSlot{
			{Name: "primary", Size: [2]int{48, 64}, Deltas: config.Deltas{Seconds: []float64{-0.2, 0}}},
			{Name: "wrist", Size: [2]int{32, 32}},
		},
		State:  config.Deltas{Steps: []int{0}},
		Action: config.Deltas{Seconds: []float64{-0.2, 0, 0.2, 0.4}},
	}
	yaml := "batch_size: 16\nsamples_per_episode: 0\nseed: 3\ndatasets:\n  - name: bridge\n    source: " + bridgeSource(t) +
		"\n    action_keys: " + bridgeActions + "\n    state_key: steps/observation/state\n  - name: skipped\n    source: " + bridgeSource(t) +
		"\n    weight: 0\n  - name: av1\n    source: " + filepath.Join(lerobotFixtures, "lerobot_av1") +
		"\n    action_keys: [action]\n    state_key: observation.state\n    language_key: task\n"
	cfg := stepConfig(t, yaml, spec, bridgeCams, nil, map[string]string{"primary": "observation.images.top", "wrist": "observation.images.wrist"})
	cfg.Datasets[0].FPS = 5
	p, err := openStepPipeline(t, cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	// bridge at 5 fps: [-1, 0, 1, 2]; av1 at 10 fps: [-2, 0, 2, 4].
	var info struct {
		Datasets map[string]struct {
			DatasetIndex int     `json:"dataset_index"`
			FPS          float64 `json:"fps"`
			Deltas       struct {
				Slots  map[string][]int `json:"slots"`
				Action []int            `json:"action"`
			} `json:"deltas"`
		} `json:"datasets"`
	}
	if err := json.Unmarshal(p.Info(), &info); err != nil {
		t.Fatal(err)
	}
	if b, a := info.Datasets["bridge"], info.Datasets["av1"]; !slices.Equal(b.Deltas.Action, []int{-1, 0, 1, 2}) || !slices.Equal(a.Deltas.Action, []int{-2, 0, 2, 4}) ||
		!slices.Equal(a.Deltas.Slots["primary"], []int{-2, 0}) || a.FPS != 10 || b.FPS != 5 || a.DatasetIndex != 2 || b.DatasetIndex != 0 {
		t.Fatalf("info.json datasets: %+v", info.Datasets)
	}

	raw, err := os.ReadFile(filepath.Join(lerobotFixtures, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Frames []struct {
			Dataset string    `json:"dataset"`
			Episode int       `json:"episode_index"`
			Frame   int       `json:"frame_index"`
			Task    string    `json:"task"`
			Action  []float64 `json:"action"`
		} `json:"frames"`
	}
	if err := json.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	type at struct{ ep, frame int }
	want := map[at][]float64{}
	for _, f := range exp.Frames {
		if f.Dataset == "lerobot_av1" {
			want[at{f.Episode, f.Frame}] = f.Action
		}
	}
	checked, datasets := 0, map[int64]bool{}
	epNo := regexp.MustCompile(`^av1/train/episode_(\d+)$`)
	for n := range p.Train.Len() {
		b := readStepBatch(t, p, n)
		for i, name := range b.meta.DatasetName {
			di := b.arrays["dataset_index"].i64(i)
			datasets[di] = true
			if name == "bridge" {
				if di != 0 {
					t.Fatalf("bridge sample with dataset_index %d", di)
				}
				continue
			}
			if name != "av1" || di != 2 {
				t.Fatalf("sample of %s with dataset_index %d", name, di)
			}
			m := epNo.FindStringSubmatch(b.meta.EpisodeID[i])
			if m == nil {
				t.Fatalf("episode id %q", b.meta.EpisodeID[i])
			}
			ep, _ := strconv.Atoi(m[1])
			tt := int(b.arrays["frame_index"].i64(i))
			act := b.arrays["action"].f32(i)
			apad := b.arrays["action_is_pad"].bytes(i)
			for j, d := range []int{-2, 0, 2, 4} {
				// Pads hold the edge value: expected.json has each
				// episode's first frame, so the clamped low end is checked.
				x := max(tt+d, 0)
				w, ok := want[at{ep, x}]
				if !ok || tt+d >= 12 && ep == 0 {
					continue
				}
				for k, v := range w {
					if act[j*7+k] != float32(v) {
						t.Fatalf("av1 episode %d t=%d delta %d [%d]: %v, lerobot says %v", ep, tt, d, k, act[j*7+k], float32(v))
					}
				}
				if (apad[j] == 1) != (tt+d < 0) {
					t.Fatalf("av1 episode %d t=%d delta %d: is_pad %d", ep, tt, d, apad[j])
				}
				checked++
			}
			if m := b.arrays["image_mask"].bytes(i); !bytes.Equal(m, []byte{1, 1}) {
				t.Fatalf("av1 image_mask %v", m)
			}
		}
	}
	if checked < 10 || !datasets[0] || !datasets[2] {
		t.Fatalf("%d LeRobot chunk positions checked against lerobot, datasets %v", checked, datasets)
	}
}

// TestStepsConfigErrors: what a step config can get wrong about a dataset
// is an error naming the field and the valid choices.
func TestStepsConfigErrors(t *testing.T) {
	base := func() *config.StepSpec {
		return &config.StepSpec{Cameras: twoSlots([]int{0}), State: config.Deltas{Steps: []int{0}}, Action: config.Deltas{Steps: []int{0, 1}}}
	}
	for _, c := range []struct {
		name    string
		edit    func(s *config.StepSpec, d *config.DatasetConfig)
		cameras map[string]string
		want    []string
	}{
		{"slot not in the mix", nil, map[string]string{"left": "steps/observation/image"}, []string{"cameras", `"left"`, "primary, wrist, third"}},
		{"image key missing", nil, map[string]string{"primary": "steps/observation/rgb"}, []string{"cameras", "steps/observation/rgb", "steps/observation/image, steps/observation/wrist_image"}},
		{"two images, no cameras", nil, nil, []string{"cameras", "steps/observation/image", "steps/observation/wrist_image", "primary"}},
		{"seconds without fps", func(s *config.StepSpec, _ *config.DatasetConfig) {
			s.Action = config.Deltas{Seconds: []float64{0, 0.1}}
		}, bridgeCams, []string{"fps", "bridge", "sample.action"}},
		{"chunk longer than every episode", func(s *config.StepSpec, _ *config.DatasetConfig) { s.Action = config.Deltas{Steps: []int{0, 60}} }, bridgeCams, []string{"sample.action", "61 steps", "longest", "bridge/train/"}},
		{"drop_last past every episode", func(s *config.StepSpec, _ *config.DatasetConfig) { s.DropLast = 500 }, bridgeCams, []string{"sample.drop_last", "drop_last 500", "at most"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := base()
			cfg := stepConfig(t, bridgeStepYAML(t, ""), s, c.cameras)
			if c.edit != nil {
				c.edit(s, &cfg.Datasets[0])
			}
			_, err := openStepPipeline(t, cfg, 1)
			t.Log(err)
			var ce config.ConfigErrors
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want ConfigErrors", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestStepsChunkTooLong: a chunk longer than every episode of the mix
// (here 100 steps over tiny_bridge's train and val splits) is one error
// that names the field, the chunk as the config writes it, its span, and
// the longest episode with its length, each once, rather than a message
// per split that lists every delta.
func TestStepsChunkTooLong(t *testing.T) {
	steps := make([]int, 100)
	for i := range steps {
		steps[i] = i
	}
	spec := &config.StepSpec{Cameras: twoSlots([]int{0}), Action: config.Deltas{Steps: steps}}
	cfg := stepConfig(t, bridgeStepYAML(t, "    val_split: val\n"), spec, bridgeCams)
	_, err := openStepPipeline(t, cfg, 1)
	var ce config.ConfigErrors
	if !errors.As(err, &ce) {
		t.Fatalf("error %v, want ConfigErrors", err)
	}
	re := regexp.MustCompile(`^mix config: (line \d+: )?sample\.action: the action chunk spans 100 steps \(steps "0:100"\), ` +
		`longer than every episode of the mix: the longest, (bridge/\S+) \(dataset "bridge", (split "train"|val_split "val")\), has (\d+) steps; ` +
		`shorten the chunk to at most (\d+) steps$`)
	m := re.FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("error:\n%v\nwant one line matching\n%s", err, re)
	}
	if m[4] != m[5] || m[4] == "100" {
		t.Errorf("the longest episode has %s steps, the advice says at most %s: %v", m[4], m[5], err)
	}
}

// TestStepsNormalised: with normalize, each step of the state history and
// action chunk is normalised with the dataset's per-step statistics, and
// the dimensions a dataset does not have stay 0 (tiny_table's action has
// 2 of the mix's 7; its only camera goes to the first slot).
func TestStepsNormalised(t *testing.T) {
	spec := &config.StepSpec{
		Cameras: twoSlots([]int{0}),
		State:   config.Deltas{Steps: []int{-1, 0}},
		Action:  config.Deltas{Steps: []int{-1, 0, 1, 10}},
	}
	yaml := bridgeStepYAML(t, "  - name: table\n    source: "+filepath.Join(testkit.Testdata(t), "datasets/tiny_table/1.0.0")+
		"\n    action_keys: [steps/action]\n    state_key: steps/observation/effector_translation\n") + "normalize: {action: mean_std, state: mean_std}\n"
	cfg := stepConfig(t, yaml, spec, bridgeCams)
	p, err := openStepPipeline(t, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]int{}
	for n := range min(p.Train.Len(), 6) {
		b := readStepBatch(t, p, n)
		for i, name := range b.meta.DatasetName {
			var d *Dataset
			for _, x := range p.Mix.Datasets {
				if x.Config.Name == name {
					d = x
				}
			}
			own := d.ActionDim
			act, mask := b.arrays["action"].f32(i), b.arrays["action_mask"].bytes(i)
			for j := range 4 {
				for k := range 7 {
					if k >= own && act[j*7+k] != 0 {
						t.Fatalf("%s: padded action dim %d = %v", name, k, act[j*7+k])
					}
				}
			}
			for k := range 7 {
				if (mask[k] == 1) != (k < own) {
					t.Fatalf("%s: action_mask %v for %d dims", name, mask, own)
				}
			}
			if name == "table" {
				if m := b.arrays["image_mask"].bytes(i); !bytes.Equal(m, []byte{1, 0, 0}) {
					t.Fatalf("table's only camera: image_mask %v, want the first slot", m)
				}
			}
			// The chunk at delta 0 against the raw value read from the
			// episode, normalised by hand.
			ep, err := d.Episodes.Episode(context.Background(), keyOf(t, d, b.meta.EpisodeID[i]))
			if err != nil {
				t.Fatal(err)
			}
			tt := int(b.arrays["frame_index"].i64(i))
			var raw []float64
			for _, key := range d.Config.ActionKeys {
				v, err := ep.Feature(key)
				if err != nil {
					t.Fatal(err)
				}
				vals, err := v.Float64s(nil)
				if err != nil {
					t.Fatal(err)
				}
				per := len(vals) / ep.Steps()
				raw = append(raw, vals[tt*per:(tt+1)*per]...)
			}
			s := d.Norm.Action
			for k, x := range raw {
				want := float32((x - s.Mean[k]) / s.Std[k])
				if s.Std[k] == 0 {
					want = float32(x - s.Mean[k])
				}
				if got := act[1*7+k]; math.Abs(float64(got-want)) > 1e-5*max(1, math.Abs(float64(want))) {
					t.Fatalf("%s t=%d action[%d] = %v, want (%v − %v)/%v = %v", name, tt, k, got, x, s.Mean[k], s.Std[k], want)
				}
			}
			checked[name]++
		}
	}
	if checked["bridge"] == 0 || checked["table"] == 0 {
		t.Fatalf("samples checked: %v", checked)
	}
}

// keyOf turns an RLDS episode id (dataset/split/shard/record) back into
// its key.
func keyOf(t *testing.T, d *Dataset, id string) episodeKey {
	t.Helper()
	f := strings.Split(id, "/")
	shard, _ := strconv.Atoi(f[2])
	rec, _ := strconv.Atoi(f[3])
	return episodeKey{Split: f[1], Shard: shard, Record: rec}
}

// TestStepsSubstitution: with drop_last 12 only four episodes of
// tiny_bridge have a t; every other is replaced, deterministically
// whatever the read order, and counted.
func TestStepsSubstitution(t *testing.T) {
	spec := &config.StepSpec{Cameras: twoSlots([]int{0}), Action: config.Deltas{Steps: []int{0, 1}}, DropLast: 12}
	yaml := "batch_size: 8\nwindow_shards: 1\nsamples_per_episode: 1\ndatasets:\n  - name: bridge\n    source: " + bridgeSource(t) + "\n    action_keys: [steps/action/world_vector]\n"
	open := func() *Pipeline {
		p, err := openStepPipeline(t, stepConfig(t, yaml, spec, bridgeCams), 3)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	fw, bw := open(), open()
	n := fw.Train.Len()
	got := make([]map[string][]byte, n)
	for i := range n {
		files, err := fw.BatchFiles(context.Background(), fw.Train, i)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = files
	}
	long := "bridge/train/0/1 bridge/train/0/4 bridge/train/0/6 bridge/train/2/2"
	for i := n - 1; i >= 0; i-- {
		files, err := bw.BatchFiles(context.Background(), bw.Train, i)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range got[i] {
			if !bytes.Equal(v, files[k]) {
				t.Fatalf("batch %d %s differs when batches are read in another order", i, k)
			}
		}
		var meta struct {
			EpisodeID []string `json:"episode_id"`
		}
		if err := json.Unmarshal(files[".json"], &meta); err != nil {
			t.Fatal(err)
		}
		for _, id := range meta.EpisodeID {
			if !strings.Contains(long, id) {
				t.Fatalf("a sample of %s, which has no t for drop_last 12", id)
			}
		}
	}
	var stats struct {
		Substitutions map[string]int64 `json:"substitutions"`
	}
	if err := json.Unmarshal(fw.Stats(), &stats); err != nil {
		t.Fatal(err)
	}
	if stats.Substitutions["short_episode"] < 20 {
		t.Fatalf("substitutions %v, want at least 20 short episodes", stats.Substitutions)
	}
}

// TestStepsBenchInProcess: `oxefs bench --config` reads a step mix
// in-process (bench.InProcess over the pipeline).
func TestStepsBenchInProcess(t *testing.T) {
	spec := &config.StepSpec{Cameras: twoSlots([]int{-1, 0}), Action: config.Deltas{Steps: []int{0, 1, 2}}}
	p, err := openStepPipeline(t, stepConfig(t, bridgeStepYAML(t, ""), spec, bridgeCams), 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := bench.Run(context.Background(), bench.InProcess{P: p, Desc: "steps"}, bench.Options{Readers: 2, Warmup: 1, Batches: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 5 || res.Records[0].Bytes < layoutOf(p).Total {
		t.Fatalf("bench records %+v, want 5 of at least %d bytes", res.Records, layoutOf(p).Total)
	}
}

// TestStepsValView: the val view serves step batches too, from val_split.
func TestStepsValView(t *testing.T) {
	spec := &config.StepSpec{Cameras: twoSlots([]int{0}), Action: config.Deltas{Steps: []int{0, 1}}}
	p, err := openStepPipeline(t, stepConfig(t, bridgeStepYAML(t, "    val_split: val\n"), spec, bridgeCams), 2)
	if err != nil {
		t.Fatal(err)
	}
	if p.Val == nil || p.Val.Len() == 0 {
		t.Fatal("no val view")
	}
	files, err := p.BatchFiles(context.Background(), p.Val, p.Val.Len()-1)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		EpisodeID []string `json:"episode_id"`
	}
	if err := json.Unmarshal(files[".json"], &meta); err != nil {
		t.Fatal(err)
	}
	for _, id := range meta.EpisodeID {
		if !strings.HasPrefix(id, "bridge/val/") {
			t.Fatalf("val batch holds %s", id)
		}
	}
	for _, a := range layoutOf(p).Arrays {
		parseNPYFile(t, a.File, files["."+a.File])
	}
}

// TestStepsCorruptEpisode: tiny_table with one record's image gone
// (testdata/corrupt/missing_image): its samples fail after claiming frames
// that other samples of the batch wait for; those decode for themselves or
// are replaced, and every batch is the same bytes with 1 worker in order
// and 4 in reverse, the substitutions counted.
func TestStepsCorruptEpisode(t *testing.T) {
	spec := &config.StepSpec{
		Cameras: []config.CameraSlot{{Name: "primary", Size: [2]int{24, 32}, Deltas: config.Deltas{Steps: []int{-2, -1, 0}}}},
		Action:  config.Deltas{Steps: []int{0, 1}},
	}
	yaml := "batch_size: 8\nwindow_shards: 1\nsamples_per_episode: 3\nseed: 4\ndatasets:\n  - name: table\n    source: " +
		filepath.Join(testkit.Testdata(t), "corrupt/missing_image") + "\n    action_keys: [steps/action]\n"
	read := func(workers int, reverse bool) ([][]byte, map[string]int64) {
		p, err := openStepPipeline(t, stepConfig(t, yaml, spec), workers)
		if err != nil {
			t.Fatal(err)
		}
		out := trainBatches(t, p, reverse)
		var st struct {
			Substitutions map[string]int64 `json:"substitutions"`
		}
		if err := json.Unmarshal(p.Stats(), &st); err != nil {
			t.Fatal(err)
		}
		return out, st.Substitutions
	}
	one, subs := read(1, false)
	four, _ := read(4, true)
	for n := range one {
		if !bytes.Equal(one[n], four[n]) {
			t.Fatalf("batch %d differs between 1 worker in order and 4 in reverse", n)
		}
	}
	if subs["corrupt"] == 0 {
		t.Fatalf("substitutions %v: the record without its image was not replaced", subs)
	}
}

// TestCheckChunk: a chunk longer than every episode of one split pads its
// samples (a warning), and is an error only when no split of the mix whose
// lengths are known holds it.
func TestCheckChunk(t *testing.T) {
	short := func(ds string) lengthFit {
		return lengthFit{known: true, short: &shortChunk{dataset: ds, field: "split", split: "train", span: 50, deltas: []int{0, 49}, longestID: ds + "/train/0/0", longest: len(ds)}}
	}
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	if errs := checkChunk([]lengthFit{short("kuka"), {known: true}, {}}, log); errs != nil {
		t.Fatalf("a chunk another dataset holds: %v", errs)
	}
	if !strings.Contains(logged.String(), "kuka") || !strings.Contains(logged.String(), "action_is_pad") {
		t.Fatalf("no warning naming the dataset: %q", logged.String())
	}
	errs := checkChunk([]lengthFit{short("kuka"), short("bridge"), {}}, log)
	if len(errs) != 1 || !strings.Contains(errs.Error(), "longer than every episode of the mix") || !strings.Contains(errs.Error(), "bridge/train/0/0") {
		t.Fatalf("a chunk no episode holds: %v, want one error naming bridge's longest episode (6 steps, kuka's 4)", errs)
	}
	if errs := checkChunk([]lengthFit{{}, {}}, log); errs != nil {
		t.Fatalf("lengths unknown: %v", errs)
	}
}

// trainBatches builds every train batch of p, in order or in reverse, and
// returns each as its arrays' files then its .json, concatenated.
func trainBatches(t *testing.T, p *Pipeline, reverse bool) [][]byte {
	t.Helper()
	n := p.Train.Len()
	out := make([][]byte, n)
	for k := range n {
		if reverse {
			k = n - 1 - k
		}
		files, err := p.BatchFiles(context.Background(), p.Train, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range layoutOf(p).Arrays {
			out[k] = append(out[k], files["."+a.File]...)
		}
		out[k] = append(out[k], files[".json"]...)
	}
	return out
}

// layoutOf is the layout of a step-sample pipeline's batches.
func layoutOf(p *Pipeline) *steps.Layout { return p.kind.(*steps.Kind).Layout() }
