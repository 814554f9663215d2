package synth

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"

	"github.com/oxefs/oxefs/format/rlds/example"
	"github.com/oxefs/oxefs/format/synthetic"
)

// episodeKey identifies one episode, whose bytes are a pure function of
// it: neither the shard layout, nor the number of episodes or datasets,
// nor the scheduling changes them.
type episodeKey struct {
	seed    uint64
	dataset string
	split   string
	index   int // within the split
	id      int64
	steps   int
}

// encoder holds one worker's reusable buffers: a frame per image size and
// an output buffer for the codec.
type encoder struct {
	frames map[[2]int]*image.RGBA
	buf    bytes.Buffer
	png    png.Encoder
}

func newEncoder() *encoder {
	return &encoder{frames: map[[2]int]*image.RGBA{}, png: png.Encoder{CompressionLevel: png.DefaultCompression}}
}

func (e *encoder) frame(h, w int) *image.RGBA {
	img, ok := e.frames[[2]int{h, w}]
	if !ok {
		img = image.NewRGBA(image.Rect(0, 0, w, h))
		e.frames[[2]int{h, w}] = img
	}
	return img
}

// encode compresses img as the dataset stores its frames and returns a
// copy of the bytes sized to fit.
func (e *encoder) encode(img *image.RGBA, asPNG bool) ([]byte, error) {
	e.buf.Reset()
	var err error
	if asPNG {
		err = e.png.Encode(&e.buf, img)
	} else {
		err = jpeg.Encode(&e.buf, img, &jpeg.Options{Quality: synthetic.JPEGQuality})
	}
	if err != nil {
		return nil, err
	}
	return bytes.Clone(e.buf.Bytes()), nil
}

// record renders and serializes one episode of d as the
// tf.train.Example TFDS writes for an RLDS episode. It returns the record
// and its camera frames.
func record(d synthetic.Dataset, k episodeKey, enc *encoder) ([]byte, int, error) {
	n := k.steps
	c := synthetic.EpisodeContent(d, k.seed, k.split, k.index, n)
	var b example.Builder
	frames := 0

	// RLDS step scalars: one episode, ended by success.
	first, last, terminal := make([]int64, n), make([]int64, n), make([]int64, n)
	reward, discount := make([]float32, n), make([]float32, n)
	first[0], last[n-1], terminal[n-1], reward[n-1] = 1, 1, 1, 1
	for i := range discount {
		discount[i] = 1
	}
	b.AddInt64s("steps/is_first", first...)
	b.AddInt64s("steps/is_last", last...)
	b.AddInt64s("steps/is_terminal", terminal...)
	b.AddFloats("steps/reward", reward...)
	b.AddFloats("steps/discount", discount...)

	for ci, cam := range d.Cameras {
		img := enc.frame(cam.Height, cam.Width)
		encoded := make([][]byte, n)
		for s := range n {
			c.Render(ci, s, img)
			data, err := enc.encode(img, d.PNG)
			if err != nil {
				return nil, 0, fmt.Errorf("%s step %d: %w", cam.Key, s, err)
			}
			encoded[s] = data
		}
		frames += n
		b.AddBytes(cam.Key, encoded...)
	}

	// Actions: each part is its run of the content's concatenated action,
	// in the order of d.Actions.
	off := 0
	for _, a := range d.Actions {
		vals := make([]float32, 0, n*a.Dim)
		for s := range n {
			vals = append(vals, c.Actions[s][off:off+a.Dim]...)
		}
		b.AddFloats(a.Key, vals...)
		off += a.Dim
	}
	if d.State.Key != "" {
		state := make([]float32, 0, n*d.State.Dim)
		for s := range n {
			state = append(state, c.State[s]...)
		}
		b.AddFloats(d.State.Key, state...)
	}

	if d.Language.Codepoints > 0 {
		cps := make([]int64, n*d.Language.Codepoints)
		runes := []rune(c.Instruction)
		for s := range n {
			for i, r := range runes[:min(len(runes), d.Language.Codepoints)] {
				cps[s*d.Language.Codepoints+i] = int64(r)
			}
		}
		b.AddInt64s(d.Language.Key, cps...)
	} else {
		texts := make([][]byte, n)
		for s := range texts {
			texts[s] = []byte(c.Instruction)
		}
		b.AddBytes(d.Language.Key, texts...)
	}

	b.AddInt64s("episode_metadata/episode_id", k.id)
	b.AddBytes("episode_metadata/file_path", fmt.Appendf(nil, "synthetic://%s/%s/episode_%06d", k.dataset, k.split, k.index))
	return b.Marshal(), frames, nil
}
