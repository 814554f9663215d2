package synth

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"strings"

	"github.com/oxefs/oxefs/format/rlds/example"
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

func (k episodeKey) rng(parts ...uint64) *rng {
	return newRNG(append([]uint64{k.seed, hashString(k.dataset), hashString(k.split), uint64(k.index)}, parts...)...)
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
		err = jpeg.Encode(&e.buf, img, &jpeg.Options{Quality: jpegQuality})
	}
	if err != nil {
		return nil, err
	}
	return bytes.Clone(e.buf.Bytes()), nil
}

// episode renders and serializes one episode as the tf.train.Example TFDS
// writes for an RLDS episode. It returns the record and its camera frames.
func (d *Dataset) episode(k episodeKey, enc *encoder) ([]byte, int, error) {
	n := k.steps
	m := newMotion(k.rng(0), n)
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

	for ci, c := range d.Cameras {
		cam := newCamera(k.rng(1, uint64(ci)), c.Height, c.Width, c.Wrist)
		img := enc.frame(c.Height, c.Width)
		encoded := make([][]byte, n)
		for s := range n {
			cam.render(img, m, s)
			data, err := enc.encode(img, d.PNG)
			if err != nil {
				return nil, 0, fmt.Errorf("%s step %d: %w", c.Key, s, err)
			}
			encoded[s] = data
		}
		frames += n
		b.AddBytes(c.Key, encoded...)
	}

	// Actions: every part is cut from one plan vector (translation,
	// rotation, gripper, joints), so that world_vector, rotation_delta and
	// the gripper agree with each other and with what the frames show.
	var full [maxActionDim]float32
	acts := make([][]float32, len(d.Actions))
	for s := range n {
		m.action(s, full[:])
		for i, a := range d.Actions {
			acts[i] = append(acts[i], actionPart(a, full[:])...)
		}
	}
	for i, a := range d.Actions {
		b.AddFloats(a.Key, acts[i]...)
	}
	if d.State.Key != "" {
		state := make([]float32, n*d.State.Dim)
		for s := range n {
			m.state(s, state[s*d.State.Dim:(s+1)*d.State.Dim])
		}
		b.AddFloats(d.State.Key, state...)
	}

	text := instruction(m, k.rng(2))
	if d.Language.Codepoints > 0 {
		cps := make([]int64, n*d.Language.Codepoints)
		runes := []rune(text)
		for s := range n {
			for i, r := range runes[:min(len(runes), d.Language.Codepoints)] {
				cps[s*d.Language.Codepoints+i] = int64(r)
			}
		}
		b.AddInt64s(d.Language.Key, cps...)
	} else {
		texts := make([][]byte, n)
		for s := range texts {
			texts[s] = []byte(text)
		}
		b.AddBytes(d.Language.Key, texts...)
	}

	b.AddInt64s("episode_metadata/episode_id", k.id)
	b.AddBytes("episode_metadata/file_path", fmt.Appendf(nil, "synthetic://%s/%s/episode_%06d", k.dataset, k.split, k.index))
	return b.Marshal(), frames, nil
}

// maxActionDim is the widest action the plan vector provides.
const maxActionDim = 30

// actionPart picks an action feature's values out of the plan vector by
// what its key means.
func actionPart(a Tensor, full []float32) []float32 {
	switch {
	case strings.HasSuffix(a.Key, "/world_vector"):
		return full[0:3]
	case strings.HasSuffix(a.Key, "/rotation_delta"):
		return full[3:6]
	case strings.HasSuffix(a.Key, "/gripper_closedness_action"):
		return full[6:7]
	case strings.HasSuffix(a.Key, "/open_gripper"):
		return []float32{1 - full[6]}
	}
	return full[:a.Dim]
}

// colourNames name an object's colour in its instruction.
var colourNames = []struct {
	name string
	rgb  [3]float64
}{
	{"red", [3]float64{220, 40, 40}}, {"green", [3]float64{40, 200, 60}}, {"blue", [3]float64{40, 80, 220}},
	{"yellow", [3]float64{230, 220, 50}}, {"orange", [3]float64{240, 140, 30}}, {"purple", [3]float64{150, 50, 200}},
	{"pink", [3]float64{240, 130, 190}}, {"cyan", [3]float64{40, 210, 220}}, {"white", [3]float64{235, 235, 235}},
	{"grey", [3]float64{128, 128, 128}}, {"brown", [3]float64{130, 80, 40}}, {"black", [3]float64{30, 30, 30}},
}

func colourName(c [3]float64) string {
	best, dist := "", math.Inf(1)
	for _, n := range colourNames {
		d := 0.0
		for i := range c {
			d += (c[i] - n.rgb[i]) * (c[i] - n.rgb[i])
		}
		if d < dist {
			best, dist = n.name, d
		}
	}
	return best
}

// instruction describes what the episode's arm does, in the words of the
// OXE datasets' annotations.
func instruction(m *motion, r *rng) string {
	o := m.objects[m.carried]
	shape := "block"
	if o.round {
		shape = []string{"ball", "can", "cup", "sponge"}[r.intn(4)]
	}
	obj := colourName(o.col) + " " + shape
	other := m.objects[(m.carried+1)%len(m.objects)]
	dest := colourName(other.col) + " " + []string{"bowl", "plate", "box", "cloth"}[r.intn(4)]
	switch r.intn(5) {
	case 0:
		return "pick up the " + obj + " and put it in the " + dest
	case 1:
		return "move the " + obj + " next to the " + dest
	case 2:
		return "put " + obj + " on " + dest
	case 3:
		return "place the " + obj + " to the " + []string{"left", "right", "front", "back"}[r.intn(4)] + " of the " + dest
	default:
		return "push the " + obj + " towards the " + dest
	}
}
