package synth

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format"
	"github.com/oxefs/oxefs/format/lerobot"
	"github.com/oxefs/oxefs/internal/testkit"
	"github.com/oxefs/oxefs/storage/local"
)

// fakeEncoder "encodes" a frame as its size and a checksum of its pixels,
// with LeRobot's GOP of 2: enough for the layout, which never decodes.
type fakeEncoder struct {
	n       int64
	pending []format.VideoSample
}

func (f *fakeEncoder) Encode(rgb []byte) error {
	var sum uint32
	for _, b := range rgb {
		sum = sum*31 + uint32(b)
	}
	data := binary.BigEndian.AppendUint32(make([]byte, 0, 64), sum)
	data = append(data, make([]byte, 60)...)
	f.pending = append(f.pending, format.VideoSample{Data: data, PTS: f.n, DTS: f.n, Key: f.n%2 == 0})
	f.n++
	return nil
}
func (f *fakeEncoder) Flush() error { return nil }
func (f *fakeEncoder) Samples() []format.VideoSample {
	s := f.pending
	f.pending = nil
	return s
}
func (f *fakeEncoder) Config() []byte { return []byte{0x81, 0, 0x0c, 0} }
func (f *fakeEncoder) Close()         {}

func fakeOptions(dir string) Options {
	return Options{
		Dir: dir, Datasets: 2, Episodes: 4, Steps: 6, Seed: 3, Workers: 3,
		NewEncoder:    func(w, h, fps int) (format.VideoEncoder, error) { return &fakeEncoder{}, nil },
		DataFileBytes: 1 << 10, VideoFileBytes: 1 << 10,
	}
}

// TestGenerateReadsBack writes two datasets and reads every episode back
// with format/lerobot: lengths, actions, states, tasks, and each step's
// video sample.
func TestGenerateReadsBack(t *testing.T) {
	ctx := context.Background()
	res, err := Generate(ctx, fakeOptions(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Datasets) != 2 || len(res.MixFiles) != 2 {
		t.Fatalf("%d datasets, mixes %v", len(res.Datasets), res.MixFiles)
	}
	for _, dr := range res.Datasets {
		t.Run(dr.Name, func(t *testing.T) {
			checkDataset(t, dr)
		})
	}
}

func checkDataset(t *testing.T, dr DatasetResult) {
	ctx := context.Background()
	b, err := os.ReadFile(filepath.Join(dr.Dir, lerobot.InfoPath))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["synthetic"] != SyntheticNote {
		t.Errorf("info.json synthetic: %v", raw["synthetic"])
	}
	d, err := lerobot.Open(ctx, dr.Name, local.New(dr.Dir), lerobot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(d.Episodes()); got != dr.Train+dr.Val || got != len(dr.Episodes) {
		t.Fatalf("%d episodes, want %d+%d", got, dr.Train, dr.Val)
	}
	files, videos := map[int64]bool{}, map[int64]bool{}
	for _, e := range d.Episodes() {
		files[e.DataFile] = true
		videos[e.Videos[dr.Cameras[0]].File] = true
	}
	if len(files) < 2 || len(videos) < 2 {
		t.Errorf("%d data files and %d video files: want several of each, rolled over", len(files), len(videos))
	}
	for i, want := range dr.Episodes {
		key, ok := d.Key(int64(i))
		if !ok {
			t.Fatalf("episode %d has no key", i)
		}
		if key.Split != want.Split {
			t.Errorf("episode %d: split %s, want %s", i, key.Split, want.Split)
		}
		ep, err := d.Episode(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if ep.Steps() != want.Steps {
			t.Fatalf("episode %d: %d steps, want %d", i, ep.Steps(), want.Steps)
		}
		checkFloats(t, ep, "action", want.Actions)
		if dr.Dataset.State.Key != "" {
			checkFloats(t, ep, "observation.state", want.State)
		}
		v, err := ep.Feature(lerobot.TaskKey)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(v.Bytes(ep.Steps() - 1)); got != dr.Tasks[want.Task] {
			t.Errorf("episode %d: task %q, want %q", i, got, dr.Tasks[want.Task])
		}
		for _, cam := range dr.Cameras {
			v, err := ep.Feature(cam)
			if err != nil {
				t.Fatal(err)
			}
			vid := v.(episode.Video)
			first, _ := vid.Shown(0)
			last, _ := vid.Shown(ep.Steps() - 1)
			if last-first != ep.Steps()-1 {
				t.Errorf("episode %d %s: steps shown by samples %d..%d", i, cam, first, last)
			}
		}
	}
}

func checkFloats(t *testing.T, ep episode.Episode, key string, want [][]float32) {
	t.Helper()
	got := testkit.Floats(t, ep, key)
	var flat []float64
	for _, row := range want {
		for _, x := range row {
			flat = append(flat, float64(x))
		}
	}
	if !reflect.DeepEqual(got, flat) {
		t.Errorf("%s %s: values differ from the generator's", ep.ID(), key)
	}
}

// TestGenerateDeterministic writes twice with different worker counts and
// compares every file.
func TestGenerateDeterministic(t *testing.T) {
	ctx := context.Background()
	a, b := t.TempDir(), t.TempDir()
	oa, ob := fakeOptions(a), fakeOptions(b)
	ob.Workers = 1
	if _, err := Generate(ctx, oa); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(ctx, ob); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := filepath.WalkDir(a, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || filepath.Ext(p) == ".yaml" {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		x, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		y, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil {
			return err
		}
		if string(x) != string(y) {
			t.Errorf("%s differs", rel)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("only %d files compared", n)
	}
}

func TestOptionsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
	}{
		{"no encoder", func(o *Options) { o.NewEncoder = nil }},
		{"bad codec", func(o *Options) { o.Codec = "vp9" }},
		{"one step", func(o *Options) { o.Steps = 1 }},
		{"too many datasets", func(o *Options) { o.Datasets = 1000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := fakeOptions(t.TempDir())
			tc.edit(&o)
			if _, err := Generate(context.Background(), o); err == nil {
				t.Fatal("no error")
			}
		})
	}
}
