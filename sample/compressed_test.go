package sample

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/plan"
)

// A compressed slot's frames in these tests: 8×8, room for 192 bytes.
const jpegH, jpegW = 8, 8

// fakeJPEG is the smallest byte string the stage hands over as a JPEG: a
// start of image, a frame header declaring w×h and comps components, a
// payload that names the step, the end of image.
func fakeJPEG(step, w, h, comps, payload int) []byte {
	b := []byte{0xFF, 0xD8, 0xFF, 0xC0}
	b = binary.BigEndian.AppendUint16(b, uint16(8+3*comps))
	b = append(b, 8)
	b = binary.BigEndian.AppendUint16(b, uint16(h))
	b = binary.BigEndian.AppendUint16(b, uint16(w))
	b = append(b, byte(comps))
	for c := range comps {
		b = append(b, byte(c+1), 0x11, 0)
	}
	b = append(b, 0xFF, 0xDA)
	b = append(b, bytes.Repeat([]byte{byte(step + 1)}, payload)...)
	return append(b, 0xFF, 0xD9)
}

// jpegView is a camera whose steps are JPEG images, but for the steps
// listed in odd: there, what the test case wants instead.
type jpegView struct {
	fakeView
	odd map[int][]byte
}

func (v *jpegView) Bytes(step int) []byte {
	if b, ok := v.odd[step]; ok {
		return b
	}
	return fakeJPEG(step, 32, 24, 3, 10+step)
}

// jpegEpisode is a fakeEpisode whose camera "j" is view.
type jpegEpisode struct {
	fakeEpisode
	view *jpegView
}

func (e jpegEpisode) Feature(key string) (episode.View, error) {
	if key == "j" {
		return e.view, nil
	}
	return e.fakeEpisode.Feature(key)
}

// dropParams are Params that drop the camera.
type dropParams struct{}

func (dropParams) Dropped() bool { return true }

// TestStageServesCompressedFrames: a request with Compressed gets each
// JPEG frame's bytes in the frame's place (zeros after) and its size;
// frames that are not a whole JPEG of the declared size within the room,
// and every frame of a dropped camera, are decoded with size 0. Samples
// that share a frame, and repeats, copy the bytes and the size.
func TestStageServesCompressedFrames(t *testing.T) {
	room := jpegH * jpegW * 3
	odd := map[int][]byte{
		2: fakeJPEG(2, 32, 24, 3, room),           // too large for its place
		3: []byte("\x89PNG\r\n\x1a\n not a jpeg"), // another format
		4: fakeJPEG(4, 32, 24, 4, 5),              // CMYK
		5: fakeJPEG(5, 32, 24, 3, 5)[:20],         // cut short: no end of image
		6: fakeJPEG(6, 16, 24, 3, 5),              // not the declared size
		7: {},                                     // empty
	}
	ep := jpegEpisode{fakeEpisode{key: episode.Key{Record: 1}, steps: 10}, &jpegView{fakeView{"j"}, odd}}
	declared := frames.Size{W: 32, H: 24}
	for _, tc := range []struct {
		name    string
		samples [][]int // each sample's steps
		params  Params
		decoded int // distinct frames decoded
	}{
		{"each frame its own", [][]int{{0, 1}, {8, 9}}, nil, 0},
		{"shared and repeated", [][]int{{0, 0, 1}, {1, 0}, {1, 1}}, nil, 0},
		{"odd frames decoded", [][]int{{1, 2, 3}, {4, 5, 6, 7}, {2, 8}}, nil, 6},
		{"dropped camera decoded", [][]int{{0, 1}, {1}}, dropParams{}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := newFakeDecoder()
			st := NewStage()
			st.Reset(0, make([]plan.Sample, len(tc.samples)), Identity{})
			bufs := make([][]byte, len(tc.samples))
			sizes := make([][]int32, len(tc.samples))
			errs := make([]error, len(tc.samples))
			var wg sync.WaitGroup
			for i, steps := range tc.samples {
				bufs[i] = bytes.Repeat([]byte{0xAA}, len(steps)*room) // old data
				sizes[i] = make([]int32, len(steps))
				for j := range sizes[i] {
					sizes[i][j] = -1
				}
				wg.Go(func() {
					req := []Request{{Image: "j", Declared: declared, Params: tc.params, Steps: steps, Compressed: sizes[i],
						Dst: frames.Slot{Buf: bufs[i], Frames: len(steps), H: jpegH, W: jpegW, Layout: frames.BFHWC}}}
					errs[i] = st.For(NewFrameWorker(dec), i).Place(t.Context(), 0, ep, req)
				})
			}
			wg.Wait()
			for i, steps := range tc.samples {
				if errs[i] != nil {
					t.Fatalf("sample %d: %v", i, errs[i])
				}
				for j, step := range steps {
					frame := bufs[i][j*room : (j+1)*room]
					_, isOdd := odd[step]
					if isOdd || tc.params != nil {
						if sizes[i][j] != 0 {
							t.Errorf("sample %d step %d: size %d, want 0 (decoded)", i, step, sizes[i][j])
						}
						if want := bytes.Repeat([]byte{pixel("j", step, tc.params)}, room); !bytes.Equal(frame, want) {
							t.Errorf("sample %d step %d: not the decoded frame", i, step)
						}
						continue
					}
					jpeg := ep.view.Bytes(step)
					if int(sizes[i][j]) != len(jpeg) {
						t.Errorf("sample %d step %d: size %d, want %d", i, step, sizes[i][j], len(jpeg))
					}
					want := append(append([]byte{}, jpeg...), make([]byte, room-len(jpeg))...)
					if !bytes.Equal(frame, want) {
						t.Errorf("sample %d step %d: frame is not the JPEG then zeros:\n%x", i, step, frame[:len(jpeg)+4])
					}
				}
			}
			if n := dec.total(); n != tc.decoded {
				t.Errorf("%d frames decoded, want %d", n, tc.decoded)
			}
		})
	}
}

// TestStageCompressedIsItsOwnFrame: the same frame asked for compressed
// and as pixels in one batch is two frames, each served as asked.
func TestStageCompressedIsItsOwnFrame(t *testing.T) {
	room := jpegH * jpegW * 3
	ep := jpegEpisode{fakeEpisode{key: episode.Key{Record: 1}, steps: 4}, &jpegView{fakeView{"j"}, nil}}
	dec := newFakeDecoder()
	st := NewStage()
	st.Reset(0, make([]plan.Sample, 2), Identity{})
	bufs := [][]byte{make([]byte, room), make([]byte, room)}
	sizes := []int32{-1}
	for i, c := range [][]int32{sizes, nil} {
		req := []Request{{Image: "j", Steps: []int{1}, Compressed: c,
			Dst: frames.Slot{Buf: bufs[i], Frames: 1, H: jpegH, W: jpegW, Layout: frames.BFHWC}}}
		if err := st.For(NewFrameWorker(dec), i).Place(t.Context(), 0, ep, req); err != nil {
			t.Fatal(err)
		}
	}
	jpeg := ep.view.Bytes(1)
	if int(sizes[0]) != len(jpeg) || !bytes.Equal(bufs[0][:len(jpeg)], jpeg) {
		t.Errorf("compressed request: size %d, bytes %x; want the JPEG (%d bytes)", sizes[0], bufs[0][:8], len(jpeg))
	}
	if want := bytes.Repeat([]byte{pixel("j", 1, nil)}, room); !bytes.Equal(bufs[1], want) {
		t.Errorf("pixel request: %s", fmt.Sprintf("%x", bufs[1][:8]))
	}
	if n := dec.total(); n != 1 {
		t.Errorf("%d frames decoded, want 1 (the pixel request's)", n)
	}
}
