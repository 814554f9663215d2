package formats

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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

// lerobotFixtures is where testdata/generate_lerobot.py wrote the LeRobot
// datasets and what lerobot itself decoded from them.
var lerobotFixtures = filepath.Join("..", "..", "testdata", "lerobot")

type lerobotExpected struct {
	Dataset      string            `json:"dataset"`
	I            int64             `json:"i"`
	EpisodeIndex int64             `json:"episode_index"`
	FrameIndex   int               `json:"frame_index"`
	Cameras      map[string]string `json:"cameras"`
}

func readLeRobotExpected(t *testing.T) []lerobotExpected {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(lerobotFixtures, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Frames []lerobotExpected `json:"frames"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m.Frames
}

// requireVideo skips a test when libavcodec cannot be loaded.
func requireVideo(t *testing.T) {
	t.Helper()
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
}

// TestLeRobotFramesMatchLeRobot decodes, through the frame source the
// assembler uses, every camera frame lerobot decoded (its pyav path; for
// the HEVC leading pictures lerobot cannot return, PyAV decoding the whole
// file) and compares the pixels at full size and resized to 32x40 (that
// frame resized by TensorFlow). Video goes through the same decoders
// (libdav1d, FFmpeg's h264 and hevc) and a YUV→RGB conversion that
// reproduces swscale's, so the frames must be equal on amd64 (whose
// swscale path PyAV took) and within mean |Δ| ≤ 0.5 elsewhere; the worst
// case is logged. Parquet PNG frames must be identical.
func TestLeRobotFramesMatchLeRobot(t *testing.T) {
	requireVideo(t)
	ctx := context.Background()
	dec, err := frames.NewDecoder(frames.DecoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	sets := map[string]*lerobot.Dataset{}
	worst := map[string]testkit.DiffStats{}
	for _, want := range readLeRobotExpected(t) {
		d := sets[want.Dataset]
		if d == nil {
			if d, err = lerobot.Open(ctx, want.Dataset, local.New(filepath.Join(lerobotFixtures, want.Dataset)), lerobot.Options{}); err != nil {
				t.Fatal(err)
			}
			sets[want.Dataset] = d
		}
		key, _ := d.Key(want.EpisodeIndex)
		ep, err := d.Episode(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		for _, cam := range slices.Sorted(maps.Keys(want.Cameras)) {
			v, err := ep.Feature(cam)
			if err != nil {
				t.Fatal(err)
			}
			_, isVideo := v.(episode.Video)
			base := strings.TrimSuffix(want.Cameras[cam], ".npy")
			// Full size (lerobot's own decode), then 32x40 (that frame
			// resized by TensorFlow's bilinear rule).
			for _, file := range []string{base + ".npy", base + "_32x40.npy"} {
				shape, pix := testkit.ReadNPY(t, filepath.Join(lerobotFixtures, "expected", file))
				h, w := shape[0], shape[1]
				var src frames.Source
				if s, ok := v.(episode.Video); ok {
					src = &frames.Video{Key: cam, Steps: ep.Steps(), Stream: s, Size: frames.Size{W: 64, H: 48}}
				} else {
					src = &frames.Images{Key: cam, Steps: ep.Steps(), Encoded: v, Size: frames.Size{W: 64, H: 48}}
				}
				got := make([]byte, h*w*3)
				if err := src.Decode(ctx, dec, []int{want.FrameIndex}, frames.Slot{Buf: got, Frames: 1, H: h, W: w}); err != nil {
					t.Fatalf("%s[%d] %s: %v", want.Dataset, want.I, cam, err)
				}
				st := testkit.Diff(pix, got)
				kind := fmt.Sprintf("%s %s %dx%d", want.Dataset, cam, h, w)
				old := worst[kind]
				worst[kind] = testkit.DiffStats{Mean: max(st.Mean, old.Mean), Max: max(st.Max, old.Max), Count: old.Count + 1}
				switch {
				case !isVideo && st.Max != 0:
					t.Errorf("%s[%d] %s %s (PNG): %v, want identical", want.Dataset, want.I, cam, file, st)
				case runtime.GOARCH == "amd64" && st.Max != 0:
					// swscale's x86 path, which PyAV took, is what frames/av
					// reproduces.
					t.Errorf("%s[%d] %s %s: %v against lerobot's decode, want identical on amd64", want.Dataset, want.I, cam, file, st)
				case st.Mean > 0.5:
					t.Errorf("%s[%d] %s %s: %v against lerobot's decode, want mean |Δ| ≤ 0.5", want.Dataset, want.I, cam, file, st)
				}
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(worst)) {
		t.Logf("%s: %d frames against lerobot (pyav): worst mean |Δ| %.3f, max %d", k, worst[k].Count, worst[k].Mean, worst[k].Max)
	}
}
