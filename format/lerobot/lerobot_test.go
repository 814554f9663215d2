package lerobot

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/storage/local"
)

// fixtures is where testdata/generate_lerobot.py wrote the datasets.
var fixtures = filepath.Join("..", "..", "testdata", "lerobot")

// expectedFrame is one record of expected.json: what lerobot's
// LeRobotDataset[i] returned.
type expectedFrame struct {
	Dataset      string            `json:"dataset"`
	I            int64             `json:"i"`
	EpisodeIndex int64             `json:"episode_index"`
	FrameIndex   int               `json:"frame_index"`
	Index        int64             `json:"index"`
	Timestamp    float64           `json:"timestamp"`
	Task         string            `json:"task"`
	Action       []float64         `json:"action"`
	State        []float64         `json:"observation.state"`
	Cameras      map[string]string `json:"cameras"`
}

func readExpected(t *testing.T) []expectedFrame {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Frames []expectedFrame `json:"frames"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m.Frames
}

func openFixture(t *testing.T, name string) *Dataset {
	t.Helper()
	d, err := Open(context.Background(), name, local.New(filepath.Join(fixtures, name)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestOpen(t *testing.T) {
	d := openFixture(t, "lerobot_av1")
	in := d.Info()
	var got []string
	for _, s := range in.Splits {
		got = append(got, fmt.Sprintf("%s:%d", s.Name, s.Episodes()))
	}
	if want := []string{"train:5", "val:2"}; !slices.Equal(got, want) {
		t.Errorf("splits %v, want %v", got, want)
	}
	if n := len(in.Splits[0].ShardEpisodes); n < 2 {
		t.Errorf("train has %d shards; the fixture spreads it over several data files", n)
	}
	for key, want := range map[string]string{
		"observation.images.top":   "image video/av1 [48 64 3]",
		"observation.images.wrist": "image video/av1 [48 64 3]",
		"observation.images.side":  "image png [48 64 3]",
		"action":                   "tensor float32 [7]",
		"observation.state":        "tensor float32 [6]",
		"timestamp":                "tensor float32 []",
		TaskKey:                    "text string []",
	} {
		f, ok := in.Features.Lookup(key)
		if !ok {
			t.Errorf("no feature %s", key)
			continue
		}
		enc := f.Encoding
		if enc == "" {
			enc = f.DType
		}
		if got := fmt.Sprintf("%s %s %v", f.Kind, enc, f.Shape); got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
	}
	if got := len(d.Tasks()); got != 3 {
		t.Errorf("%d tasks, want 3", got)
	}
}

// TestEpisodesMatchLeRobot checks every value the format reads against
// what lerobot's LeRobotDataset[i] returned for the same frame.
func TestEpisodesMatchLeRobot(t *testing.T) {
	ctx := context.Background()
	sets := map[string]*Dataset{}
	for _, want := range readExpected(t) {
		d := sets[want.Dataset]
		if d == nil {
			d = openFixture(t, want.Dataset)
			sets[want.Dataset] = d
		}
		key, ok := d.Key(want.EpisodeIndex)
		if !ok {
			t.Fatalf("%s: no key for episode %d", want.Dataset, want.EpisodeIndex)
		}
		ep, err := d.Episode(ctx, key)
		if err != nil {
			t.Fatalf("%s episode %d: %v", want.Dataset, want.EpisodeIndex, err)
		}
		s := want.FrameIndex
		where := fmt.Sprintf("%s[%d] (episode %d step %d)", want.Dataset, want.I, want.EpisodeIndex, s)
		vec := func(key string, per int) []float64 {
			v, err := ep.Feature(key)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			all, err := v.Float64s(nil)
			if err != nil || len(all) != per*ep.Steps() {
				t.Fatalf("%s: %s: %d values, %v", where, key, len(all), err)
			}
			return all[s*per : (s+1)*per]
		}
		if got := vec("action", 7); !slices.Equal(got, want.Action) {
			t.Errorf("%s: action %v, lerobot %v", where, got, want.Action)
		}
		if got := vec("observation.state", 6); !slices.Equal(got, want.State) {
			t.Errorf("%s: state %v, lerobot %v", where, got, want.State)
		}
		if got := vec("timestamp", 1)[0]; got != want.Timestamp {
			t.Errorf("%s: timestamp %v, lerobot %v", where, got, want.Timestamp)
		}
		if got := vec("index", 1)[0]; got != float64(want.Index) {
			t.Errorf("%s: index %v, lerobot %v", where, got, want.Index)
		}
		if got := ep.(episode.Numbered).FirstIndex() + int64(s); got != want.Index {
			t.Errorf("%s: FirstIndex()+frame_index %d, lerobot's index %d", where, got, want.Index)
		}
		tv, err := ep.Feature(TaskKey)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(tv.Bytes(s)); got != want.Task {
			t.Errorf("%s: task %q, lerobot %q", where, got, want.Task)
		}
		for cam := range want.Cameras {
			v, err := ep.Feature(cam)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			vid, ok := v.(episode.Video)
			if !ok {
				if len(v.Bytes(s)) == 0 {
					t.Errorf("%s: camera %s has no image bytes", where, cam)
				}
				continue
			}
			j, err := vid.Shown(s)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			_, size, pts, _ := vid.Sample(j)
			span := d.Episodes()[want.EpisodeIndex].Videos[cam]
			if size <= 0 || math.Abs(float64(pts)/d.videoTimescale(t, vid)-(span.FromTimestamp+want.Timestamp)) > Tolerance {
				t.Errorf("%s: camera %s shown by sample %d (pts %d), not at %.4fs", where, cam, j, pts, span.FromTimestamp+want.Timestamp)
			}
		}
	}
}

func (d *Dataset) videoTimescale(t *testing.T, v episode.Video) float64 {
	t.Helper()
	return v.(*videoView).v.timescale
}

func TestSelect(t *testing.T) {
	d := openFixture(t, "lerobot_av1")
	for spec, want := range map[string]string{
		"train":          "[{train 0 5}]",
		"train[:60%]":    "[{train 0 3}]",
		"train[1:3]+val": "[{train 1 3} {val 0 2}]",
		"val[-1:]":       "[{val 1 2}]",
	} {
		got, err := d.Select(spec)
		if err != nil {
			t.Errorf("Select(%q): %v", spec, err)
			continue
		}
		if s := fmt.Sprint(got); s != want {
			t.Errorf("Select(%q) = %s, want %s", spec, s, want)
		}
	}
	if _, err := d.Select("test"); err == nil {
		t.Error(`Select("test") succeeded on a dataset without a test split`)
	}
}
