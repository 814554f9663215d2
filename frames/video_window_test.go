package frames

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format/lerobot/mp4"
	"github.com/oxefs/oxefs/frames/av"
	"github.com/oxefs/oxefs/internal/missing"
)

// windowStream is a Stream over an MP4 file's track that describes only
// the samples [first, end) and shows the samples in shown, one per step: an
// episode's view of a file many episodes share.
type windowStream struct {
	file       *bytes.Reader
	name       string
	track      *mp4.Track
	first, end int
	shown      []int
}

func (w *windowStream) File() string                { return w.name }
func (w *windowStream) Codec() (string, []byte)     { return w.track.Codec, w.track.Config }
func (w *windowStream) Shown(step int) (int, error) { return w.shown[step], nil }
func (w *windowStream) Samples() int                { return w.end }
func (w *windowStream) Start(j int) int             { return episode.DecodeStart(w, j) }
func (w *windowStream) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	return w.file.ReadAt(p, off)
}

func (w *windowStream) Sample(j int) (int64, int, int64, bool) {
	if j < w.first || j >= w.end {
		return 0, 0, 0, false
	}
	s := w.track.Samples[j]
	return s.Offset, int(s.Size), s.PTS, s.Key
}

// TestVideoWindows decodes a track with B-frames (so that the last frame
// of a group of pictures comes out only when the decoder drains) through
// streams that each describe one group of pictures, as LeRobot episodes
// describe only their own samples. One decoder goes through the groups in
// order (draining at the end of each, then continuing into the next
// group of the same file) and in a shuffled order; every frame must equal
// the one a fresh decoder gives from the whole track.
func TestVideoWindows(t *testing.T) {
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	for _, name := range []string{"h264_bframes.mp4", "hevc.mp4", "av1.mp4"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "format", "lerobot", "mp4", "testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			f, err := mp4.Parse(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			tr := &f.Tracks[0]
			n := len(tr.Samples)
			stream := func(first, end int, shown []int) *windowStream {
				return &windowStream{file: bytes.NewReader(b), name: name, track: tr, first: first, end: end, shown: shown}
			}
			// Each sample's frame, from one pass over the whole track, and
			// from a fresh decoder for that frame alone.
			want := trackFrames(t, b, tr)
			for j := range n {
				if got := decodeVideoFrame(t, nil, stream(0, n, []int{j}), tr); !bytes.Equal(got, want[j]) {
					t.Fatalf("sample %d alone: the frame differs from the whole track's", j)
				}
			}
			// The groups of pictures, each shown in presentation order.
			var groups []*windowStream
			for first := 0; first < n; {
				end := first + 1
				for end < n && !tr.Samples[end].Key {
					end++
				}
				shown := make([]int, 0, end-first)
				for j := first; j < end; j++ {
					shown = append(shown, j)
				}
				slices.SortFunc(shown, func(a, b int) int { return int(tr.Samples[a].PTS - tr.Samples[b].PTS) })
				// Described from where its first frame starts decoding: a
				// leading picture of an open group starts in the group
				// before.
				full, from := stream(0, n, nil), first
				for _, j := range shown {
					from = min(from, full.Start(j))
				}
				groups = append(groups, stream(from, end, shown))
				first = end
			}
			if len(groups) < 2 {
				t.Fatalf("%s has %d groups of pictures; the test needs several", name, len(groups))
			}
			dec, err := NewDecoder(DecoderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer dec.Close()
			order := make([]int, len(groups))
			for i := range order {
				order[i] = i
			}
			shuffled := slices.Clone(order)
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			for _, o := range [][]int{order, shuffled} {
				for _, g := range o {
					s := groups[g]
					for step, j := range s.shown {
						got := decodeVideoFrame(t, dec, s, tr, step)
						if !bytes.Equal(got, want[j]) {
							t.Fatalf("group %d (samples %d..%d) step %d, sample %d: the frame differs from the whole track's", g, s.first, s.end, step, j)
						}
					}
				}
			}
		})
	}
}

// decodeVideoFrame decodes step (default 0) of s at full size with dec, or
// with a decoder of its own when dec is nil.
func decodeVideoFrame(t *testing.T, dec *Decoder, s *windowStream, tr *mp4.Track, step ...int) []byte {
	t.Helper()
	if dec == nil {
		d, err := NewDecoder(DecoderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		dec = d
	}
	st := 0
	if len(step) > 0 {
		st = step[0]
	}
	w, h := tr.Width, tr.Height
	out := make([]byte, w*h*3)
	src := &Video{Key: "camera", Steps: len(s.shown), Stream: s}
	if err := src.Decode(context.Background(), dec, []int{st}, Slot{Buf: out, Frames: 1, H: h, W: w}); err != nil {
		t.Fatalf("samples %d..%d step %d: %v", s.first, s.end, st, err)
	}
	return out
}

// trackFrames decodes the whole track in one pass, sending every sample in
// decode order and draining at the end, and returns each sample's frame
// as RGB: the frames a decoder shows when nothing is skipped.
func trackFrames(t *testing.T, file []byte, tr *mp4.Track) [][]byte {
	t.Helper()
	dec, err := av.NewDecoder(tr.Codec, tr.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	byPTS := map[int64]int{}
	for j, s := range tr.Samples {
		byPTS[s.PTS] = j
	}
	out := make([][]byte, len(tr.Samples))
	receive := func() {
		for {
			f, err := dec.Receive()
			if err != nil {
				t.Fatal(err)
			}
			if f == nil {
				return
			}
			j, ok := byPTS[f.PTS]
			if !ok {
				t.Fatalf("decoded a frame at pts %d, which no sample has", f.PTS)
			}
			out[j] = make([]byte, f.Width*f.Height*3)
			if err := f.RGB(out[j]); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range tr.Samples {
		if err := dec.SendPTS(file[s.Offset:s.Offset+int64(s.Size)], s.PTS); err != nil {
			t.Fatal(err)
		}
		receive()
	}
	if err := dec.Send(nil); err != nil {
		t.Fatal(err)
	}
	receive()
	for j := range out {
		if out[j] == nil {
			t.Fatalf("sample %d (pts %d) gave no frame", j, tr.Samples[j].PTS)
		}
	}
	return out
}

// TestAugmentThroughVideo: a Video source applies the slot's Augment as
// Images does: its frames equal the frame decoded at full size, then
// augmented; a dropped camera is zeros.
func TestAugmentThroughVideo(t *testing.T) {
	if err := av.Available(); err != nil {
		missing.Skip(t, missing.AVCodec, err)
	}
	b, err := os.ReadFile(filepath.Join("..", "format", "lerobot", "mp4", "testdata", "h264_bframes.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := mp4.Parse(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	tr := &f.Tracks[0]
	n := len(tr.Samples)
	shown := []int{0, n / 2, n - 1}
	stream := &windowStream{file: bytes.NewReader(b), name: "h264_bframes.mp4", track: tr, first: 0, end: n, shown: shown}
	d := testDecoder(t, JPEGAuto)
	a := Augment{Crop: CropBox{W: 0.85, H: 0.9, X: 0.7, Y: 0.1}, Affine: Affine{Angle: -4, TY: 0.03}, Colour: []Colour{{Hue, 0.1}, {Sharpness, 1.5}}}
	const H, W = 24, 32
	slot := Slot{Buf: make([]byte, 3*H*W*3), Frames: 3, H: H, W: W, Augment: a}
	src := &Video{Key: "camera", Steps: len(shown), Stream: stream}
	if err := src.Decode(context.Background(), d, []int{0, 1, 2}, slot); err != nil {
		t.Fatal(err)
	}
	for k := range shown {
		full := rgbImage{Pix: decodeVideoFrame(t, nil, stream, tr, k), W: tr.Width, H: tr.Height, Stride: 3 * tr.Width}
		var rz resizer
		var c colourer
		want := make([]byte, H*W*3)
		rz.writeAugmented(newFrameDst(want, BFHWC, 0, 1, H, W), Squash, full, &a)
		c.apply(newFrameDst(want, BFHWC, 0, 1, H, W), a.Colour)
		if !bytes.Equal(slot.Buf[k*H*W*3:(k+1)*H*W*3], want) {
			t.Errorf("frame %d is not the augmented frame", k)
		}
	}
	drop := Slot{Buf: bytes.Repeat([]byte{7}, H*W*3), Frames: 1, H: H, W: W, Augment: Augment{Drop: true}}
	if err := src.Decode(context.Background(), d, []int{1}, drop); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(drop.Buf, make([]byte, H*W*3)) {
		t.Errorf("a dropped camera's video frame is not zeros")
	}
}
