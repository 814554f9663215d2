package augment

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/internal/pythontest"
	"github.com/oxefs/oxefs/internal/testkit"
)

// source is one test frame, packed RGB, and its PNG (lossless, so that
// frames decodes exactly these pixels).
type source struct {
	name string
	pix  []byte
	h, w int
	png  []byte
}

func newSource(t *testing.T, name string, pix []byte, h, w int) *source {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range h * w {
		copy(img.Pix[i*4:i*4+3], pix[i*3:i*3+3])
		img.Pix[i*4+3] = 255
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return &source{name: name, pix: pix, h: h, w: w, png: buf.Bytes()}
}

// generated returns varied synthetic frames: noise (every value next to
// every other), smooth shading with texture, and flat blocks of grays,
// primaries and random colours (hue's equal-channel and extreme cases).
func generated(t *testing.T, rng *rand.Rand) []*source {
	var out []*source
	for _, sz := range [][2]int{{61, 97}, {96, 128}} {
		h, w := sz[0], sz[1]
		noise := make([]byte, h*w*3)
		for i := range noise {
			noise[i] = byte(rng.Uint32())
		}
		smooth := make([]byte, h*w*3)
		blocks := make([]byte, h*w*3)
		palette := [][3]byte{{0, 0, 0}, {255, 255, 255}, {128, 128, 128}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 0}, {3, 2, 1}, {254, 255, 253}}
		for range 16 {
			palette = append(palette, [3]byte{byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32())})
		}
		for y := range h {
			for x := range w {
				fx, fy := float64(x), float64(y)
				for c := range 3 {
					v := 30 + 120*(fx/float64(w)+fy/float64(h))/2 + 40*math.Sin(fx/5+float64(c))*math.Cos(fy/7) + 25*float64(c)
					smooth[(y*w+x)*3+c] = uint8(min(max(v, 0), 255))
				}
				col := palette[((y/8)*13+(x/8)*7)%len(palette)]
				copy(blocks[(y*w+x)*3:], col[:])
			}
		}
		out = append(out,
			newSource(t, fmt.Sprintf("noise%dx%d", w, h), noise, h, w),
			newSource(t, fmt.Sprintf("smooth%dx%d", w, h), smooth, h, w),
			newSource(t, fmt.Sprintf("blocks%dx%d", w, h), blocks, h, w))
	}
	return out
}

// realFrames returns camera frames of the fixtures: the JPEG fixtures of
// package frames decoded by frames, and frames of the RLDS fixture
// datasets as TensorFlow decoded them.
func realFrames(t *testing.T, d *frames.Decoder) []*source {
	var out []*source
	for _, name := range []string{"jpeg420.jpg", "jpeg444.jpg", "jpeg422blocks.jpg"} {
		b, err := os.ReadFile(filepath.Join("..", "frames", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		slot := frames.Slot{Buf: make([]byte, cfg.Width*cfg.Height*3), Frames: 1, H: cfg.Height, W: cfg.Width}
		if err := (&frames.Images{Key: name, Steps: 1, Encoded: steps{b}}).Decode(context.Background(), d, []int{0}, slot); err != nil {
			t.Fatal(err)
		}
		out = append(out, newSource(t, strings.TrimSuffix(name, ".jpg"), slot.Buf, cfg.Height, cfg.Width))
	}
	dir := filepath.Join("..", "testdata", "expected_frames")
	for _, name := range []string{"tiny_bridge_train_shard0_rec1_step0_image.npy", "tiny_bridge_train_shard2_rec3_step2_wrist_image.npy"} {
		shape, data := testkit.ReadNPY(t, filepath.Join(dir, name))
		out = append(out, newSource(t, strings.TrimSuffix(name, ".npy"), data, shape[0], shape[1]))
	}
	return out
}

type steps [][]byte

func (s steps) Bytes(i int) []byte { return s[i] }

// parityCase is one op on one frame: cases.json's entry.
type parityCase struct {
	Name  string `json:"name"`
	Op    string `json:"op"`
	Input string `json:"input"`
	Out   [2]int `json:"out"`

	params Params
	got    []byte
	kind   string // the op, for the summary
}

// TestTorchvisionParity is the acceptance test of the ops: parameters
// drawn by Draw and recorded as Vector rows, applied by frames through a
// Slot, against torchvision.transforms.functional replaying the recorded
// rows on the same uint8 frames (testdata/torchvision_ops.py): resized_crop
// (bilinear, antialias off) on the source, rotate and affine (nearest) on
// the resized crop, each colour op alone and the presets' colour chains.
// Each op must be within one level of torchvision for at least 99.9% of
// the values (the affine's fill area, where torchvision's output is the
// fill, excluded and reported apart).
func TestTorchvisionParity(t *testing.T) {
	py := pythontest.Find(t, "numpy", "torch", "torchvision")
	d, err := frames.NewDecoder(frames.DecoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(2026, 4))
	sources := append(generated(t, rng), realFrames(t, d)...)
	dir := t.TempDir()

	apply := func(src *source, h, w int, p Params) []byte {
		t.Helper()
		slot := frames.Slot{Buf: make([]byte, h*w*3), Frames: 1, H: h, W: w, Augment: p.Augment()}
		if err := (&frames.Images{Key: src.name, Steps: 1, Encoded: steps{src.png}}).Decode(context.Background(), d, []int{0}, slot); err != nil {
			t.Fatal(err)
		}
		return slot.Buf
	}
	writeInput := func(name string, pix []byte, h, w int) string {
		file := name + ".in.npy"
		testkit.WriteNPY(t, filepath.Join(dir, file), "|u1", []int{h, w, 3}, pix)
		return file
	}

	wide := Spec{
		Rotate: Symmetric(180), Translate: [2]float64{0.25, 0.25},
		Brightness: Range{0, 2}, Contrast: Range{0, 2}, Saturation: Range{0, 2}, Hue: Symmetric(0.5), Sharpness: Range{0, 2},
	}
	crops := []Spec{preset(t, "octo"), preset(t, "openvla"), preset(t, "openpi"), preset(t, "diffusion_policy"),
		{ResizedCrop: ResizedCrop{Scale: Range{0.1, 1}, Ratio: Range{0.5, 2}}}}
	chains := []Spec{preset(t, "octo"), preset(t, "openvla"), preset(t, "openpi"), preset(t, "lerobot"), preset(t, "gr00t")}
	outSizes := [][2]int{{64, 64}, {48, 80}, {37, 53}}

	var cases []*parityCase
	add := func(c *parityCase) { cases = append(cases, c) }
	for si, src := range sources {
		srcIn := writeInput(src.name, src.pix, src.h, src.w)
		for j := range 6 {
			key := si*100 + j
			out := outSizes[(si+j)%len(outSizes)]
			crop := Identity()
			crop.Crop = Draw(crops[j%len(crops)], 1, int64(key), 0, Camera{}).Crop
			name := fmt.Sprintf("%s-crop%d", src.name, j)
			add(&parityCase{Name: name, Op: "resized_crop", Input: srcIn, Out: out, params: crop, kind: "resized_crop"})

			// The affine moves the resized crop: torchvision gets that
			// frame (TF-exact, as the first case checks) as its input.
			resizedIn := writeInput(name, apply(src, out[0], out[1], crop), out[0], out[1])
			aff := crop
			drawn := Draw(wide, 2, int64(key), 0, Camera{})
			aff.Affine = drawn.Affine
			op := "affine"
			if j%2 == 0 {
				aff.Affine.TX, aff.Affine.TY = 0, 0
				op = "rotate"
			}
			if j == 5 {
				aff.Affine = Draw(preset(t, "lerobot"), 2, int64(key), 0, Camera{}).Affine // ±5°, 5%, or none
			}
			add(&parityCase{Name: fmt.Sprintf("%s-%s%d", src.name, op, j), Op: op, Input: resizedIn, Out: out, params: aff, kind: op})
		}
		// Colour: every op alone over the whole range, then the presets'
		// chains, on the frame at its own size.
		own := [2]int{src.h, src.w}
		for c := range NumColour {
			for j := range 2 {
				p := Identity()
				p.Factor[c] = Draw(wide, 3, int64(si*100+j), c, Camera{}).Factor[c]
				p.Place[c] = 1
				n := columns[7+c].Name
				add(&parityCase{Name: fmt.Sprintf("%s-%s%d", src.name, n, j), Op: "colour", Input: srcIn, Out: own, params: p, kind: n})
			}
		}
		for j, s := range chains {
			p := Draw(s, 4, int64(si), j, Camera{})
			p.Crop, p.Affine = Identity().Crop, frames.Affine{}
			add(&parityCase{Name: fmt.Sprintf("%s-chain%d", src.name, j), Op: "colour", Input: srcIn, Out: own, params: p, kind: "chain " + s.Preset})
		}
	}

	rows := make([]byte, 0, len(cases)*NumColumns*4)
	for _, c := range cases {
		src := sourceOf(sources, c.Name)
		c.got = apply(src, c.Out[0], c.Out[1], c.params)
		for _, v := range c.params.Vector() {
			rows = binary.LittleEndian.AppendUint32(rows, math.Float32bits(v))
		}
	}
	testkit.WriteNPY(t, filepath.Join(dir, "params.npy"), "<f4", []int{len(cases), NumColumns}, rows)
	js, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cases.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, filepath.Join("testdata", "torchvision_ops.py"), dir)
	outp, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("torchvision_ops.py: %v\n%s", err, outp)
	}
	t.Logf("%s", bytes.TrimSpace(outp))

	type tally struct {
		values, within, exact, fill, fillWithin int
		max                                     int
		worst                                   string
		worstFrac                               float64
	}
	sum := map[string]*tally{}
	for _, c := range cases {
		_, ref := testkit.ReadNPY(t, filepath.Join(dir, c.Name+".ref.npy"))
		if len(ref) != len(c.got) {
			t.Fatalf("%s: torchvision gave %d values, oxefs %d", c.Name, len(ref), len(c.got))
		}
		var mask []byte
		if c.Op == "rotate" || c.Op == "affine" {
			_, mask = testkit.ReadNPY(t, filepath.Join(dir, c.Name+".mask.npy"))
		}
		s := sum[c.kind]
		if s == nil {
			s = &tally{worstFrac: 1}
			sum[c.kind] = s
		}
		in, n := 0, 0
		for i, v := range c.got {
			diff := int(v) - int(ref[i])
			diff = max(diff, -diff)
			ok := diff <= 1
			if mask != nil && mask[i/3] == 1 {
				s.fill++
				if ok {
					s.fillWithin++
				}
				continue
			}
			n++
			if ok {
				in++
			}
			if diff == 0 {
				s.exact++
			}
			if diff > s.max {
				s.max = diff
			}
		}
		s.values += n
		s.within += in
		if n > 0 && in < n && float64(in)/float64(n) < s.worstFrac {
			s.worstFrac, s.worst = float64(in)/float64(n), c.Name
		}
	}
	kinds := make([]string, 0, len(sum))
	for k := range sum {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		s := sum[k]
		frac := float64(s.within) / float64(s.values)
		line := fmt.Sprintf("%-22s %8d values: %.5f within 1 level (%.5f equal), max diff %d", k, s.values, frac, float64(s.exact)/float64(s.values), s.max)
		if s.worst != "" {
			line += fmt.Sprintf("; worst case %s (%.4f within 1)", s.worst, s.worstFrac)
		}
		if s.fill > 0 {
			line += fmt.Sprintf("; fill area %d values, %.4f within 1", s.fill, float64(s.fillWithin)/float64(s.fill))
		}
		t.Log(line)
		if frac < 0.999 {
			t.Errorf("%s: %.5f of the values within one level of torchvision, want ≥ 0.999", k, frac)
		}
	}
}

// sourceOf returns the source a case's name starts with.
func sourceOf(sources []*source, name string) *source {
	for _, s := range sources {
		if strings.HasPrefix(name, s.name+"-") {
			return s
		}
	}
	panic("no source for " + name)
}
