package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format/lerobot"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/internal/missing"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage/local"
)

// mixedYAML mixes an RLDS fixture with the two LeRobot fixtures (written
// by lerobot itself): AV1 and H.264 cameras, tasks as language. $DATA is
// testdata (absolute).
const mixedYAML = `
seed: 4
batch_size: 6
image_size: [32, 40]
samples_per_episode: 2
datasets:
  - name: bridge
    source: $DATA/datasets/tiny_bridge/1.0.0
    val_split: val
    weight: 0.4
    image_key: steps/observation/image
    offset: [1, 3]
    language_key: steps/language_instruction
    action_keys: [steps/action/world_vector, steps/action/rotation_delta]
    state_key: steps/observation/state
  - name: lr_av1
    source: $DATA/lerobot/lerobot_av1
    val_split: val
    weight: 0.4
    image_key: observation.images.top
    offset: [1, 3]
    language_key: task
    action_keys: [action]
    state_key: observation.state
    robot: synthetic_arm
  - name: lr_h264
    source: $DATA/lerobot/lerobot_h264
    weight: 0.2
    image_key: observation.images.front
    offset: 2
    language_key: task
    action_keys: [action]
    state_key: observation.state
`

// mixedSample is one sample's metadata as Python read it from the mount.
type mixedSample struct {
	Batch        int       `json:"batch"`
	Dataset      string    `json:"dataset_name"`
	EpisodeID    string    `json:"episode_id"`
	FrameIdx     int       `json:"frame_idx"`
	Offset       int       `json:"offset"`
	FrameIndices []int     `json:"frame_indices"`
	Action       []float64 `json:"action"`
	State        []float64 `json:"initial_state"`
	Language     string    `json:"language"`
	Robot        string    `json:"robot"`
}

// TestMountMixesRLDSAndLeRobot mounts a mix of RLDS and LeRobot datasets
// and reads it with numpy.load and a torch DataLoader of 4 workers. Every
// LeRobot sample's metadata is checked against the dataset read directly
// (action summed over [t, t+offset), initial_state, the task as language,
// robot), and its frames against the same frames decoded here.
func TestMountMixesRLDSAndLeRobot(t *testing.T) {
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	py := findPython(t, "numpy", "torch")
	data, _ := filepath.Abs("testdata")
	cfg := writeMixText(t, strings.ReplaceAll(mixedYAML, "$DATA", data))
	dir := t.TempDir()
	startMount(t, dir, nil, "--config", cfg, "--cache-dir", t.TempDir())
	script := `
import json, os, sys
import numpy as np
sys.path.insert(0, sys.argv[2])
from oxefs import Batches
import torch
from torch.utils.data import DataLoader
mnt = sys.argv[1]
info = json.load(open(os.path.join(mnt, "info.json")))
B, F, H, W, C = info["frames"]["shape"]
ds = Batches(mnt)
n = len(ds)
for i in range(n):
    a = np.load(f"{mnt}/batches/{i:06d}.npy")
    assert a.dtype == np.uint8 and a.shape == (B, F, H, W, C), (a.dtype, a.shape)
    m = ds[i]
    for j in range(B):
        print(json.dumps({"batch": i, "dataset_name": m["dataset_name"][j], "episode_id": m["episode_id"][j],
            "frame_idx": int(m["frame_idx"][j]), "offset": int(m["offset"][j]),
            "frame_indices": [int(x) for x in m["frame_indices"][j]],
            "action": [float(x) for x in m["action"][j]], "initial_state": [float(x) for x in m["initial_state"][j]],
            "language": m["language"][j], "robot": m["robot"][j]}))
seen, names = 0, set()
for batch in DataLoader(Batches(mnt, torch=True), batch_size=None, num_workers=4):
    assert tuple(batch["frames"].shape) == (B, F, H, W, C)
    assert batch["action"].shape == (B, info["action_dim"])
    names |= set(batch["dataset_name"])
    seen += 1
assert seen == n, (seen, n)
assert names == {"bridge", "lr_av1", "lr_h264"}, names
print("ok", n)
`
	out, err := exec.Command(py, "-c", script, dir, "python").CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^ok \d+$`).Match(out) {
		t.Fatalf("python consumers: %v\n%s", err, out)
	}
	var samples []mixedSample
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "{") {
			var s mixedSample
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatal(err)
			}
			samples = append(samples, s)
		}
	}
	counts := map[string]int{}
	ctx := context.Background()
	dec, err := frames.NewDecoder(frames.DecoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	sets := map[string]*lerobot.Dataset{}
	var batch []byte
	lastBatch := -1
	for k, s := range samples {
		counts[s.Dataset]++
		src, ok := map[string]string{"lr_av1": "lerobot_av1", "lr_h264": "lerobot_h264"}[s.Dataset]
		if !ok {
			continue
		}
		d := sets[src]
		if d == nil {
			if d, err = lerobot.Open(ctx, s.Dataset, local.New(filepath.Join(data, "lerobot", src)), lerobot.Options{}); err != nil {
				t.Fatal(err)
			}
			sets[src] = d
		}
		where := fmt.Sprintf("batch %d sample %s t=%d", s.Batch, s.EpisodeID, s.FrameIdx)
		i, err := strconv.ParseInt(s.EpisodeID[strings.LastIndex(s.EpisodeID, "_")+1:], 10, 64)
		if err != nil {
			t.Fatalf("%s: episode id: %v", where, err)
		}
		key, _ := d.Key(i)
		ep, err := d.Episode(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%s/%s/episode_%06d", s.Dataset, key.Split, i); s.EpisodeID != want {
			t.Errorf("%s: episode id %q, want %q", where, s.EpisodeID, want)
		}
		t0 := s.FrameIdx
		if len(s.FrameIndices) != 2 || s.FrameIndices[0] != t0 || s.FrameIndices[1] != t0+s.Offset {
			t.Errorf("%s: frame_indices %v for offset %d", where, s.FrameIndices, s.Offset)
		}
		acts := testkit.Floats(t, ep, "action")
		for j := range 7 {
			var sum float64
			for st := t0; st < t0+s.Offset; st++ {
				sum += acts[st*7+j]
			}
			if math.Abs(float64(float32(sum))-s.Action[j]) > 1e-6 {
				t.Errorf("%s: action[%d] = %v, want the sum over [%d, %d): %v", where, j, s.Action[j], t0, t0+s.Offset, sum)
			}
		}
		states := testkit.Floats(t, ep, "observation.state")
		for j := range 6 {
			if float64(float32(states[t0*6+j])) != s.State[j] {
				t.Errorf("%s: initial_state[%d] = %v, want %v", where, j, s.State[j], states[t0*6+j])
			}
		}
		tv, _ := ep.Feature(lerobot.TaskKey)
		if string(tv.Bytes(t0)) != s.Language || s.Language == "" {
			t.Errorf("%s: language %q, want %q", where, s.Language, tv.Bytes(t0))
		}
		if want := map[string]string{"lr_av1": "synthetic_arm"}[s.Dataset]; s.Robot != want {
			t.Errorf("%s: robot %q, want %q", where, s.Robot, want)
		}
		// The frames: what the pipeline decoded, as decoding them here gives.
		if s.Batch != lastBatch {
			_, batch = testkit.ReadNPY(t, filepath.Join(dir, "batches", fmt.Sprintf("%06d.npy", s.Batch)))
			lastBatch = s.Batch
		}
		slot := 2 * 32 * 40 * 3
		got := batch[(k%6)*slot : (k%6+1)*slot]
		cam := map[string]string{"lr_av1": "observation.images.top", "lr_h264": "observation.images.front"}[s.Dataset]
		v, err := ep.Feature(cam)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, slot)
		vs := &frames.Video{Key: cam, Steps: ep.Steps(), Stream: v.(episode.Video), Size: frames.Size{W: 64, H: 48}}
		if err := vs.Decode(ctx, dec, s.FrameIndices, frames.Slot{Buf: want, Frames: 2, H: 32, W: 40}); err != nil {
			t.Fatal(err)
		}
		if st := testkit.Diff(want, got); st.Max != 0 {
			t.Errorf("%s: frames differ from a direct decode: %v", where, st)
		}
	}
	if counts["lr_av1"] == 0 || counts["lr_h264"] == 0 || counts["bridge"] == 0 {
		t.Errorf("samples per dataset %v: every dataset should appear", counts)
	}
	t.Logf("samples per dataset: %v", counts)
}

// TestMountMemoryBoundLeRobot: a mount of LeRobot-shaped synth datasets
// (H.264 video, quick to write; frames decoded on demand by a libavcodec
// decoder per worker, as for AV1) stays within --mem 512MiB + 256 MiB of
// peak RSS while 4 readers read 40 batches of 64 frame pairs at 256×256,
// and samples every dataset.
func TestMountMemoryBoundLeRobot(t *testing.T) {
	testkit.RequireFUSE(t)
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	data := t.TempDir()
	if _, stderr, code := runOxefs(t, nil, "synth", "--format", "lerobot", "--codec", "h264", "--datasets", "6", "--episodes", "2", "--steps", "20", data); code != 0 {
		t.Fatalf("synth: exit %d\n%s", code, stderr)
	}
	dir := t.TempDir()
	startMount(t, dir, nil, "--config", filepath.Join(data, "mix.yaml"), "--cache-dir", t.TempDir(), "--mem", "512MiB")
	hashBatches(t, dir, "batches", 40, 4, 5)
	var stats struct {
		Memory struct {
			Peak   int64 `json:"peak_rss_bytes"`
			Budget int64 `json:"budget_bytes"`
		} `json:"memory"`
		Samples    map[string]int64 `json:"samples_per_dataset"`
		VideoIndex struct {
			Budget int64 `json:"budget_bytes"`
			Held   int64 `json:"held_bytes"`
			Files  int   `json:"files"`
			Parses int64 `json:"parses"`
		} `json:"video_index"`
	}
	readJSON(t, filepath.Join(dir, "stats.json"), &stats)
	// The video files' sample tables have a 32nd of --mem; every dataset's
	// video file was parsed, and what is kept is within the bound.
	if vi := stats.VideoIndex; vi.Budget != 16<<20 || vi.Held > vi.Budget || vi.Parses < 6 || vi.Files < 1 {
		t.Errorf("stats.json video_index %+v; want a budget of 16 MiB, held within it, at least 6 files parsed", vi)
	}
	t.Logf("peak RSS %.0f MiB with --mem %.0f MiB", float64(stats.Memory.Peak)/(1<<20), float64(stats.Memory.Budget)/(1<<20))
	if stats.Memory.Budget != 512<<20 {
		t.Fatalf("budget %d, want 512 MiB", stats.Memory.Budget)
	}
	if stats.Memory.Peak <= 0 || stats.Memory.Peak > 768<<20 {
		t.Fatalf("peak RSS %d bytes, bound 768 MiB", stats.Memory.Peak)
	}
	if len(stats.Samples) != 6 {
		t.Errorf("samples from %d datasets, want all 6: %v", len(stats.Samples), stats.Samples)
	}
}
