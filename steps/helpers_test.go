package steps

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	_ "github.com/oxefs/oxefs/format/formats" // registers the formats format.Open probes
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
	"github.com/oxefs/oxefs/storage/local"
	"github.com/oxefs/oxefs/store"
)

// The fixtures, written by tensorflow_datasets itself (testdata/generate.py).
const fixtureDir = "../testdata"

func openFixture(t testing.TB, dataset string) format.Dataset {
	t.Helper()
	s, err := store.NewStore(store.Options{IndexDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	dir := filepath.Join(fixtureDir, "datasets", dataset, "1.0.0")
	ds, err := format.Open(context.Background(), "", local.New(dir), &format.Env{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func loadEpisode(t testing.TB, ds episode.Dataset, key episode.Key) episode.Episode {
	t.Helper()
	ep, err := ds.Episode(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// testWorkerT is a decode worker as the builder's pool makes one: the
// kind's scratch and the frame stage's worker.
type testWorkerT struct {
	*Worker
	fw *sample.FrameWorker
}

func testWorker(t testing.TB) *testWorkerT {
	t.Helper()
	cpu, err := sample.NewCPU(frames.DecoderOptions{JPEG: frames.JPEGGo})
	if err != nil {
		t.Fatal(err)
	}
	fw := sample.NewFrameWorker(cpu)
	t.Cleanup(fw.Close)
	return &testWorkerT{Worker: NewWorker(), fw: fw}
}

// Decoded is the frames the worker has decoded.
func (w *testWorkerT) Decoded() int64 { return w.fw.Decoded() }

// testBatch is a batch being built with its frame stage, as the builder
// gives one to every batch.
type testBatch struct {
	*Batch
	stage *sample.Stage
}

func newTestBatch(l *Layout, buf []byte) *testBatch {
	st := sample.NewStage()
	st.Reset(0, make([]plan.Sample, l.Arrays[0].Shape[0]), sample.Identity{})
	return &testBatch{Batch: NewBatch(l, buf), stage: st}
}

// build builds sample i of b from s and ep with a.
func (w *testWorkerT) build(a *Assembler, ctx context.Context, s plan.Sample, ep episode.Episode, b *testBatch, i int, m *Meta) error {
	return a.Build(ctx, w.Worker, b.stage.For(w.fw, i), s, ep, b.Batch, i, m)
}

// manifestRecord is what the fixture generator wrote of one record, read
// by TensorFlow.
type manifestRecord struct {
	NumSteps int                    `json:"num_steps"`
	Language string                 `json:"language"`
	Action   map[string][][]float64 `json:"action"`
	State    map[string][][]float64 `json:"state"`
}

type manifest struct {
	Datasets map[string]struct {
		Splits map[string]struct {
			Shards []struct {
				File    string           `json:"file"`
				Records []manifestRecord `json:"records"`
			} `json:"shards"`
		} `json:"splits"`
	} `json:"datasets"`
}

var shardNumber = regexp.MustCompile(`-(\d+)-of-\d+$`)

// record returns the manifest's record of an episode.
func record(t testing.TB, dataset string, key episode.Key) manifestRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, sh := range m.Datasets[dataset].Splits[key.Split].Shards {
		n, _ := strconv.Atoi(shardNumber.FindStringSubmatch(sh.File)[1])
		if n == key.Shard {
			return sh.Records[key.Record]
		}
	}
	t.Fatalf("manifest has no %s %v", dataset, key)
	return manifestRecord{}
}

// npyArray is one .npy file parsed by the test's own reader.
type npyArray struct {
	descr string
	shape []int
	data  []byte
}

var npyDict = regexp.MustCompile(`^\{'descr': '([^']+)', 'fortran_order': False, 'shape': \(([0-9, ]*)\), \} *\n$`)

// parseNPY parses a NumPy 1.0 file, checking that its data starts at a
// multiple of 64 bytes.
func parseNPY(t testing.TB, b []byte) npyArray {
	t.Helper()
	if len(b) < 10 || string(b[:8]) != "\x93NUMPY\x01\x00" {
		t.Fatalf("not a NumPy 1.0 file: % x", b[:min(len(b), 10)])
	}
	hl := int(binary.LittleEndian.Uint16(b[8:10]))
	if (10+hl)%64 != 0 {
		t.Fatalf("header of %d bytes: data not at a multiple of 64", 10+hl)
	}
	m := npyDict.FindStringSubmatch(string(b[10 : 10+hl]))
	if m == nil {
		t.Fatalf("header dict %q", b[10:10+hl])
	}
	var shape []int
	for _, f := range regexp.MustCompile(`[0-9]+`).FindAllString(m[2], -1) {
		n, _ := strconv.Atoi(f)
		shape = append(shape, n)
	}
	return npyArray{descr: m[1], shape: shape, data: b[10+hl:]}
}

// f32 returns sample i's float32 values of a [B,…] array.
func f32(t testing.TB, b *testBatch, name string, i int) []float32 {
	raw := b.Layout.sample(b.Buf, indexOf(b.Layout, name), i)
	out := make([]float32, len(raw)/4)
	for j := range out {
		out[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
	}
	return out
}

func sampleBytes(t testing.TB, b *testBatch, name string, i int) []byte {
	t.Helper()
	return b.Layout.sample(b.Buf, indexOf(b.Layout, name), i)
}

func indexOf(l *Layout, name string) int {
	for k := range l.Arrays {
		if l.Arrays[k].Name == name {
			return k
		}
	}
	panic("no array " + name)
}

// bridgeSpec is tiny_bridge with its two cameras in slots primary
// (48x64) and wrist (32x32), a third slot it does not map, and the given
// deltas.
func bridgeSpec(batch int, layout config.Layout, slot, state, action []int) Spec {
	return Spec{
		BatchSize: batch,
		Slots: []SlotSpec{
			{Name: "primary", H: 48, W: 64, Steps: len(slot)},
			{Name: "wrist", H: 32, W: 32, Steps: len(slot)},
			{Name: "left", H: 16, W: 16, Steps: 1},
		},
		StateSteps: len(state), ActionSteps: len(action),
		MaxStateDim: 9, MaxActionDim: 8,
		Layout: layout,
	}
}

func bridgeConfig(slot, state, action []int) Config {
	return Config{
		Index:       3,
		Cameras:     map[string]string{"primary": "steps/observation/image", "wrist": "steps/observation/wrist_image"},
		Deltas:      Deltas{Slots: [][]int{slot, slot, {0}}, State: state, Action: action},
		ActionKeys:  []string{"steps/action/world_vector", "steps/action/rotation_delta", "steps/action/gripper_closedness_action"},
		StateKey:    "steps/observation/state",
		LanguageKey: "steps/language_instruction",
		Robot:       "widowx",
	}
}

// decodeOne decodes step of slot k's camera alone, in the slot's size and
// the batch's layout, with w's decoder.
func decodeOne(t testing.TB, a *Assembler, w *testWorkerT, ep episode.Episode, k, step int) []byte {
	t.Helper()
	sl, c := a.spec.Slots[k], a.cams[k]
	var cam sample.Camera
	src, err := cam.Open(ep, c.key, c.declared)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, sl.H*sl.W*3)
	dst := frames.Slot{
		Buf: buf, Frames: 1, H: sl.H, W: sl.W,
		Layout: frames.Layout(a.spec.Layout), Resize: frames.ResizeMode(a.spec.Resize), Decode: frames.DecodeMode(a.spec.Decode),
	}
	if err := w.fw.Decoder().Decode(context.Background(), src, []int{step}, dst, nil); err != nil {
		t.Fatal(err)
	}
	return buf
}
