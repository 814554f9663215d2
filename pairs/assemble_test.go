package pairs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/config"
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/keyed"
	"github.com/oxefs/oxefs/plan"
	"github.com/oxefs/oxefs/sample"
)

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

type manifestRecord struct {
	Index        int                    `json:"index"`
	NumSteps     int                    `json:"num_steps"`
	Language     string                 `json:"language"`
	LanguageSame *bool                  `json:"language_all_steps_equal"`
	Codepoints   []int64                `json:"instruction_codepoints"`
	Action       map[string][][]float64 `json:"action"`
	State        map[string][][]float64 `json:"state"`
}

func loadManifest(t testing.TB) manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The mix of the three fixtures: the largest action is 7 (bridge's three
// keys, kuka's float64[7]), the largest state 7 (bridge).
const mixActionDim, mixStateDim = 7, 7

func fixtureConfig(dataset string) Config {
	cfg := Config{Height: 48, Width: 80, MaxActionDim: mixActionDim, MaxStateDim: mixStateDim, Robot: dataset + "_robot"}
	switch dataset {
	case "tiny_bridge":
		cfg.ImageKey = "steps/observation/image"
		cfg.ActionKeys = []string{"steps/action/world_vector", "steps/action/rotation_delta", "steps/action/gripper_closedness_action"}
		cfg.StateKey = "steps/observation/state"
		cfg.LanguageKey = "steps/language_instruction"
	case "tiny_table":
		cfg.ImageKey = "steps/observation/rgb"
		cfg.ActionKeys = []string{"steps/action"}
		cfg.StateKey = "steps/observation/effector_translation"
		cfg.LanguageKey = "steps/observation/instruction"
	case "tiny_kuka":
		cfg.ImageKey = "steps/observation/image"
		cfg.ActionKeys = []string{"steps/action"}
		cfg.StateKey = "steps/observation/joint_bytes"
		cfg.LanguageKey = "episode_metadata/language_instruction"
	}
	return cfg
}

var fixtureNames = []string{"tiny_bridge", "tiny_table", "tiny_kuka"}

// TestBuildFixtures builds samples of every episode of every fixture, in
// every frame mode, with fixed and ranged offsets and in both layouts, and
// checks the frames and the metadata against the manifest TensorFlow wrote.
// Under the race detector (which slows decoding tenfold) it takes the
// first two records of each shard.
func TestBuildFixtures(t *testing.T) {
	man := loadManifest(t)
	s := newStore(t)
	frameCases := []struct {
		name string
		f    config.Frames
	}{
		{"endpoints fixed", config.Frames{Mode: config.FramesEndpoints, Offset: config.FixedOffset(2), SamplesPerEpisode: 2}},
		{"endpoints range", config.Frames{Mode: config.FramesEndpoints, Offset: config.Offset{Min: 1, Max: 6}, SamplesPerEpisode: 3}},
		{"endpoints range, every pair", config.Frames{Mode: config.FramesEndpoints, Offset: config.Offset{Min: 4, Max: 6}}},
		{"all", config.Frames{Mode: config.FramesAll, Offset: config.FixedOffset(3), SamplesPerEpisode: 1}},
		{"stride", config.Frames{Mode: config.FramesStride, Offset: config.FixedOffset(6), Stride: 2, SamplesPerEpisode: 1}},
		{"fixed_n", config.Frames{Mode: config.FramesFixedN, Offset: config.Offset{Min: 3, Max: 8}, N: 3, SamplesPerEpisode: 2}},
	}
	for _, choice := range []string{frames.JPEGTurbo, frames.JPEGGo} {
		t.Run(choice, func(t *testing.T) {
			w := testWorker(t, choice)
			ref := testWorker(t, choice) // decodes each frame on its own, for comparison
			refs := map[string][]byte{}  // by episode id and step
			for di, name := range fixtureNames {
				ds := openFixture(t, s, name)
				for _, fc := range frameCases {
					t.Run(name+"/"+fc.name, func(t *testing.T) {
						cfg := fixtureConfig(name)
						cfg.Frames = fc.f
						hwc := mustNew(t, ds, cfg)
						cfg.Layout = BCFHW
						chw := mustNew(t, ds, cfg)
						F, H, W := hwc.FramesPerSample(), cfg.Height, cfg.Width
						a, b := make([]byte, hwc.SampleBytes()), make([]byte, chw.SampleBytes())
						var ma, mb Meta
						built, short := 0, 0
						for split, ms := range man.Datasets[name].Splits {
							for si, shard := range ms.Shards {
								for _, rec := range shard.Records {
									if raceEnabled && rec.Index >= 2 {
										continue
									}
									ep := loadEpisode(t, ds, fixtureKey(t, ds, split, si, rec.Index))
									units := max(fc.f.SamplesPerEpisode, 1)
									if fc.f.SamplesPerEpisode == 0 {
										units = max(fc.f.Offset.ValidStarts(rec.NumSteps), 1)
									}
									for j := range units {
										smp := plan.Sample{Dataset: di, Episode: ep.Key(), Unit: j, Key: keyed.Hash(3, uint64(di), uint64(si), uint64(rec.Index), uint64(j))}
										errA := w.build(hwc, t.Context(), smp, ep, a, &ma)
										errB := w.build(chw, t.Context(), smp, ep, b, &mb)
										if rec.NumSteps < fc.f.Offset.Min+1 {
											var se *sample.ShortEpisodeError
											if !errors.As(errA, &se) || !errors.Is(errB, sample.ErrShortEpisode) || se.Episode != ep.ID() || se.Dataset != name {
												t.Fatalf("%s (%d steps): %v / %v, want a *sample.ShortEpisodeError", ep.ID(), rec.NumSteps, errA, errB)
											}
											short++
											continue
										}
										if errA != nil || errB != nil {
											t.Fatalf("%s: %v / %v", ep.ID(), errA, errB)
										}
										built++
										checkMeta(t, name, ep, rec, fc.f, &ma)
										if !metaEqual(&ma, &mb) {
											t.Fatalf("%s: metadata differs between layouts: %+v vs %+v", ep.ID(), ma, mb)
										}
										for i, step := range ma.FrameIndices {
											key := fmt.Sprint(ep.ID(), "/", step)
											want, ok := refs[key]
											if !ok {
												want = refFrame(t, ref, ep, cfg, step)
												refs[key] = want
											}
											if got := testkit.FrameHWC(a, false, i, F, H, W); !bytes.Equal(got, want) {
												t.Fatalf("%s frame %d (step %d): BFHWC slot differs from the frame decoded alone", ep.ID(), i, step)
											}
											if got := testkit.FrameHWC(b, true, i, F, H, W); !bytes.Equal(got, want) {
												t.Fatalf("%s frame %d (step %d): BCFHW slot is not BFHWC transposed", ep.ID(), i, step)
											}
										}
									}
								}
							}
						}
						if built == 0 {
							t.Fatal("no sample built")
						}
						t.Logf("%d samples built, %d short episodes", built, short)
					})
				}
			}
		})
	}
}

func mustNew(t testing.TB, ds episode.Dataset, cfg Config) *Assembler {
	t.Helper()
	a, err := New(ds.Info(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// refFrame decodes one step's image by itself, through a one-frame slot
// of the config's size, and returns that frame.
func refFrame(t testing.TB, w *testWorkerT, ep episode.Episode, cfg Config, step int) []byte {
	t.Helper()
	v, err := ep.Feature(cfg.ImageKey)
	if err != nil {
		t.Fatal(err)
	}
	src := &frames.Images{Key: cfg.ImageKey, Steps: ep.Steps(), Encoded: v}
	dst := frames.Slot{Buf: make([]byte, cfg.Height*cfg.Width*3), Frames: 1, H: cfg.Height, W: cfg.Width, Resize: frames.ResizeMode(cfg.Resize)}
	if err := src.Decode(t.Context(), w.Decoder(), []int{step}, dst); err != nil {
		t.Fatal(err)
	}
	return dst.Buf
}

func checkMeta(t *testing.T, dataset string, ep episode.Episode, rec manifestRecord, f config.Frames, m *Meta) {
	t.Helper()
	cfg := fixtureConfig(dataset)
	where := ep.ID()
	if m.DatasetName != dataset || m.EpisodeID != ep.ID() || m.Robot != cfg.Robot {
		t.Errorf("%s: dataset %q episode %q robot %q", where, m.DatasetName, m.EpisodeID, m.Robot)
	}
	if !strings.HasPrefix(m.EpisodeID, dataset+"/"+ep.Key().Split+"/") {
		t.Errorf("%s: episode id %q", where, m.EpisodeID)
	}
	tt, off := m.FrameIdx, m.Offset
	if off < f.Offset.Min || off > f.Offset.Max || tt < 0 || tt+off > rec.NumSteps-1 {
		t.Fatalf("%s: t %d offset %d out of range (%d steps, offset %v)", where, tt, off, rec.NumSteps, f.Offset)
	}
	if len(m.FrameIndices) != f.Count() || m.FrameIndices[0] != tt || !slices.IsSorted(m.FrameIndices) ||
		m.FrameIndices[len(m.FrameIndices)-1] > tt+off {
		t.Errorf("%s: frame indices %v for t %d offset %d", where, m.FrameIndices, tt, off)
	}
	if f.Mode != config.FramesStride && m.FrameIndices[len(m.FrameIndices)-1] != tt+off {
		t.Errorf("%s: last frame %v is not t+offset %d", where, m.FrameIndices, tt+off)
	}
	// Action: per-key sums over [t, t+offset), concatenated in config order.
	var want []float64
	for _, k := range cfg.ActionKeys {
		steps := rec.Action[k]
		if len(steps) != rec.NumSteps {
			t.Fatalf("%s: manifest has %d steps of %s", where, len(steps), k)
		}
		for j := range steps[0] {
			var sum float64
			for s := tt; s < tt+off; s++ {
				sum += steps[s][j]
			}
			want = append(want, sum)
		}
	}
	for len(want) < mixActionDim {
		want = append(want, 0)
	}
	if !slices.Equal(m.Action, want) {
		t.Errorf("%s t %d offset %d: action %v, want %v", where, tt, off, m.Action, want)
	}
	state := slices.Clone(rec.State[cfg.StateKey][tt])
	for len(state) < mixStateDim {
		state = append(state, 0)
	}
	if !slices.Equal(m.InitialState, state) {
		t.Errorf("%s t %d: initial_state %v, want %v", where, tt, m.InitialState, state)
	}
	if rec.LanguageSame != nil && !*rec.LanguageSame {
		t.Fatalf("%s: the manifest's language differs between steps; this test assumes it does not", where)
	}
	if m.Language != rec.Language {
		t.Errorf("%s: language %q, want %q", where, m.Language, rec.Language)
	}
}

func metaEqual(a, b *Meta) bool {
	return a.DatasetName == b.DatasetName && a.EpisodeID == b.EpisodeID && a.FrameIdx == b.FrameIdx &&
		slices.Equal(a.FrameIndices, b.FrameIndices) && a.Offset == b.Offset && a.Language == b.Language &&
		slices.Equal(a.Action, b.Action) && slices.Equal(a.InitialState, b.InitialState) && a.Robot == b.Robot
}

// TestBuildConcurrent: one Assembler shared by several workers, each with
// its own Worker, gives every worker the bytes a lone worker gets (run
// with -race).
func TestBuildConcurrent(t *testing.T) {
	s := newStore(t)
	ds := openFixture(t, s, "tiny_kuka")
	cfg := fixtureConfig("tiny_kuka")
	cfg.Frames = config.Frames{Mode: config.FramesFixedN, Offset: config.Offset{Min: 3, Max: 6}, N: 3, SamplesPerEpisode: 4}
	a := mustNew(t, ds, cfg)
	var eps []episode.Episode
	for rec := range 4 {
		eps = append(eps, loadEpisode(t, ds, fixtureKey(t, ds, "train", 0, rec)))
	}
	sample := func(i int) plan.Sample {
		return plan.Sample{Episode: eps[i%len(eps)].Key(), Unit: i / len(eps), Key: keyed.Hash(9, uint64(i))}
	}
	const n = 32
	want := make([][]byte, n)
	w := testWorker(t, frames.JPEGAuto)
	for i := range n {
		want[i] = make([]byte, a.SampleBytes())
		if err := w.build(a, t.Context(), sample(i), eps[i%len(eps)], want[i], nil); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			w, err := newTestWorker(frames.DecoderOptions{JPEG: frames.JPEGAuto})
			if err != nil {
				errs <- err
				return
			}
			defer w.Close()
			slot := make([]byte, a.SampleBytes())
			var m Meta
			for i := g; i < n; i += 2 {
				if err := w.build(a, t.Context(), sample(i), eps[i%len(eps)], slot, &m); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(slot, want[i]) {
					errs <- errors.New("concurrent build differs from a lone one")
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
