package check

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"math"
	"testing"

	"github.com/oxefs/oxefs/episode"
)

// fakeEpisode is an episode built in the test: numeric features by key
// (values step-major, per step) and image features (encoded bytes per
// step).
type fakeEpisode struct {
	id     string
	steps  int
	nums   map[string][]float64
	per    map[string]int
	images map[string][][]byte
}

func (e *fakeEpisode) ID() string                            { return e.id }
func (e *fakeEpisode) Dataset() string                       { return "d" }
func (e *fakeEpisode) Key() episode.Key                      { return episode.Key{} }
func (e *fakeEpisode) Steps() int                            { return e.steps }
func (e *fakeEpisode) Size() int                             { return 0 }
func (e *fakeEpisode) Corrupt(err error) error               { return err }
func (e *fakeEpisode) Rename(dataset string) episode.Episode { return e }
func (e *fakeEpisode) Feature(key string) (episode.View, error) {
	if v, ok := e.nums[key]; ok {
		return fakeView{nums: v, per: e.per[key]}, nil
	}
	if b, ok := e.images[key]; ok {
		return fakeView{images: b, per: 1}, nil
	}
	return nil, &episode.UnknownFeatureError{Key: key}
}

type fakeView struct {
	nums   []float64
	images [][]byte
	per    int
}

func (v fakeView) Spec() episode.Feature { return episode.Feature{} }
func (v fakeView) Per() int              { return v.per }
func (v fakeView) Bytes(step int) []byte { return v.images[step] }
func (v fakeView) Float64s(dst []float64) ([]float64, error) {
	return append(dst, v.nums...), nil
}
func (v fakeView) Int64s(dst []int64) ([]int64, error) { return dst, errors.New("not integers") }

// frame is a PNG of a w×h image filled with c, encoded at level.
func frame(t *testing.T, c uint8, level png.CompressionLevel) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 8, 6))
	for i := range img.Pix {
		img.Pix[i] = c + uint8(i%7)
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: level}
	if err := enc.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// clean is an episode of L steps with smooth actions (2 dims), a state, a
// timestamp at 10 fps and a camera whose frames all differ.
func clean(t *testing.T, id string, L int) *fakeEpisode {
	e := &fakeEpisode{id: id, steps: L, nums: map[string][]float64{}, per: map[string]int{"a": 2, "s": 1, "timestamp": 1}, images: map[string][][]byte{}}
	for s := range L {
		e.nums["a"] = append(e.nums["a"], math.Sin(float64(s)/5), math.Cos(float64(s)/3))
		e.nums["s"] = append(e.nums["s"], float64(s))
		e.nums["timestamp"] = append(e.nums["timestamp"], float64(s)/10)
		e.images["cam"] = append(e.images["cam"], frame(t, uint8(10*s), png.DefaultCompression))
	}
	return e
}

var spec = Spec{ActionKeys: []string{"a"}, StateKey: "s", Cameras: []string{"cam"}, TimestampKey: "timestamp", FPS: 10, MinSteps: 5, MinStepsWhy: "steps of the chunk"}

func TestDefects(t *testing.T) {
	tests := []struct {
		name   string
		damage func(e *fakeEpisode)
		want   string // the kind found, "" for none
	}{
		{"clean", func(e *fakeEpisode) {}, ""},
		{"NaN action", func(e *fakeEpisode) { e.nums["a"][7] = math.NaN() }, NonFinite},
		{"infinite state", func(e *fakeEpisode) { e.nums["s"][3] = math.Inf(-1) }, NonFinite},
		{"timestamps swapped", func(e *fakeEpisode) {
			ts := e.nums["timestamp"]
			ts[4], ts[5] = ts[5], ts[4]
		}, Timestamp},
		{"a timestamp off 1/fps", func(e *fakeEpisode) { e.nums["timestamp"][6] += 0.03 }, Timestamp},
		{"frozen camera, same bytes", func(e *fakeEpisode) {
			e.images["cam"][3], e.images["cam"][4] = e.images["cam"][2], e.images["cam"][2]
		}, Frozen},
		{"frozen camera, same pixels in other bytes", func(e *fakeEpisode) {
			e.images["cam"][3] = frame(t, 20, png.NoCompression)
			e.images["cam"][4] = frame(t, 20, png.BestCompression)
		}, Frozen},
		{"two identical frames are not frozen", func(e *fakeEpisode) { e.images["cam"][3] = e.images["cam"][2] }, ""},
		{"short", func(e *fakeEpisode) {
			e.steps = 4
			e.nums["a"], e.nums["s"], e.nums["timestamp"] = e.nums["a"][:8], e.nums["s"][:4], e.nums["timestamp"][:4]
			e.images["cam"] = e.images["cam"][:4]
		}, Short},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := clean(t, "d/train/0/1", 12)
			tc.damage(e)
			c := New("d", "train", spec)
			if err := c.Add(e); err != nil {
				t.Fatal(err)
			}
			rep := c.Report()
			switch {
			case tc.want == "" && len(rep.Defects) > 0:
				t.Errorf("defects on a clean episode: %+v", rep.Defects)
			case tc.want != "" && (len(rep.Defects) != 1 || rep.Defects[0].Kind != tc.want || rep.Defects[0].Episode != "d/train/0/1"):
				t.Errorf("defects %+v, want one %s", rep.Defects, tc.want)
			}
		})
	}
}

func TestRefused(t *testing.T) {
	c := New("d", "train", spec)
	c.Refused("d/train/0/6", &episode.CorruptError{Dataset: "d", Err: errors.New("step 9: its timestamp lies outside its video")})
	c.Refused("d/train/0/2", &episode.CorruptError{Dataset: "d", Err: errors.New("bad crc")})
	rep := c.Report()
	if len(rep.Defects) != 2 || rep.Defects[0].Episode != "d/train/0/2" || rep.Defects[0].Kind != Unreadable || rep.Defects[1].Kind != FrameCount {
		t.Errorf("defects %+v: want the unreadable episode 2, then the frame count of 6, in episode order", rep.Defects)
	}
}

// TestFound: a defect of a whole file comes after the episodes', as it
// was given.
func TestFound(t *testing.T) {
	c := New("d", "train", spec)
	orphan := Defect{Kind: Orphan, File: "data/chunk-000/file-000.parquet", Detail: "1 row 37 carry episode_index 99"}
	c.Found(orphan)
	c.Refused("d/train/0/2", &episode.CorruptError{Dataset: "d", Err: errors.New("bad crc")})
	rep := c.Report()
	if len(rep.Defects) != 2 || rep.Defects[0].Kind != Unreadable || rep.Defects[1] != orphan {
		t.Errorf("defects %+v: want the unreadable episode 2, then %+v", rep.Defects, orphan)
	}
}

// TestAutocorrelation compares the pooled autocorrelation with the
// formula computed here directly, episode by episode, and checks the
// chunk it suggests.
func TestAutocorrelation(t *testing.T) {
	c := New("d", "train", Spec{ActionKeys: []string{"a"}, MaxLag: 10})
	var eps []*fakeEpisode
	for i, L := range []int{30, 45} {
		e := clean(t, "d/train/0/"+string(rune('0'+i)), L)
		eps = append(eps, e)
		if err := c.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	rep := c.Report()
	for k := 0; k <= 10; k++ {
		var mean float64
		for d := range 2 {
			var num, den float64
			for _, e := range eps {
				x := make([]float64, e.steps)
				m := 0.0
				for s := range x {
					x[s] = e.nums["a"][2*s+d]
					m += x[s] / float64(e.steps)
				}
				for s := range x {
					den += (x[s] - m) * (x[s] - m)
					if s+k < len(x) {
						num += (x[s] - m) * (x[s+k] - m)
					}
				}
			}
			mean += num / den / 2
		}
		if math.Abs(rep.ActionAutocorrelation[k]-mean) > 1e-12 {
			t.Errorf("lag %d: %v, want %v", k, rep.ActionAutocorrelation[k], mean)
		}
	}
	want := 1
	for k := 1; k <= 10 && rep.ActionAutocorrelation[k] >= 0.5; k++ {
		want = k + 1
	}
	if rep.SuggestedChunk != want || want < 2 {
		t.Errorf("suggested chunk %d, want %d (>1 for these smooth actions)", rep.SuggestedChunk, want)
	}
}
