package augment

import (
	"math"
	"slices"
	"testing"

	"github.com/oxefs/oxefs/frames"
)

func preset(t *testing.T, name string) Spec {
	t.Helper()
	s, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDrawKeyed: Draw is a pure function of (spec, seed, batch, sample,
// slot): the same key gives the same Params, a change of any part of it
// other ones; Shared gives every camera of a sample the same draws.
func TestDrawKeyed(t *testing.T) {
	s := preset(t, "lerobot")
	cam := Camera{Slot: 1}
	p := Draw(s, 7, 3, 5, cam)
	if q := Draw(s, 7, 3, 5, cam); q != p {
		t.Fatalf("the same key drew %+v then %+v", p, q)
	}
	for _, tc := range []struct {
		name string
		q    Params
	}{
		{"seed", Draw(s, 8, 3, 5, cam)},
		{"batch", Draw(s, 7, 4, 5, cam)},
		{"sample", Draw(s, 7, 3, 6, cam)},
		{"slot", Draw(s, 7, 3, 5, Camera{Slot: 2})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.q == p {
				t.Errorf("another %s drew the same Params", tc.name)
			}
		})
	}
	s.Shared = true
	if a, b := Draw(s, 7, 3, 5, Camera{Slot: 0}), Draw(s, 7, 3, 5, Camera{Slot: 2}); a != b {
		t.Errorf("shared: cameras drew %+v and %+v", a, b)
	}
}

// TestDrawRanges: over many samples every parameter stays in its range,
// covers it, and the crop boxes keep their area and ratio.
func TestDrawRanges(t *testing.T) {
	const n = 4000
	in := func(v float32, lo, hi float64) bool { return float64(v) >= lo-1e-6 && float64(v) <= hi+1e-6 }
	for _, name := range PresetNames() {
		t.Run(name, func(t *testing.T) {
			s := preset(t, name)
			ranges := [NumColour]Range{s.Brightness, s.Contrast, s.Saturation, s.Hue, s.Sharpness}
			lo, hi := [NumColour]float64{9, 9, 9, 9, 9}, [NumColour]float64{-9, -9, -9, -9, -9}
			for i := range n {
				p := Draw(s, 1, int64(i/64), i%64, Camera{Slot: i % 3})
				for c, r := range ranges {
					if p.Place[c] == 0 {
						continue
					}
					if !in(p.Factor[c], r.Lo, r.Hi) {
						t.Fatalf("%s factor %v outside %v", columns[7+c].Name, p.Factor[c], r)
					}
					lo[c], hi[c] = min(lo[c], float64(p.Factor[c])), max(hi[c], float64(p.Factor[c]))
				}
				if !in(p.Affine.Angle, s.Rotate.Lo, s.Rotate.Hi) || !in(p.Affine.TX, -s.Translate[0], s.Translate[0]) || !in(p.Affine.TY, -s.Translate[1], s.Translate[1]) {
					t.Fatalf("affine %+v outside rotate %v translate %v", p.Affine, s.Rotate, s.Translate)
				}
				c := p.Crop
				if !in(c.X, 0, 1) || !in(c.Y, 0, 1) {
					t.Fatalf("crop place %+v", c)
				}
				area := float64(c.W) * float64(c.H)
				switch {
				case s.ResizedCrop.on() && c.W < 1 && c.H < 1:
					ratio := float64(c.W) / float64(c.H)
					if !in(float32(area), s.ResizedCrop.Scale.Lo, s.ResizedCrop.Scale.Hi) || !in(float32(ratio), s.ResizedCrop.Ratio.Lo, s.ResizedCrop.Ratio.Hi) {
						t.Fatalf("resized crop %+v: area %v ratio %v", c, area, ratio)
					}
				case s.Crop > 0 && (c.W != 1 || c.H != 1):
					if math.Abs(area-s.Crop) > 1e-6 || c.W != c.H {
						t.Fatalf("crop %+v: area %v, want %v", c, area, s.Crop)
					}
				}
			}
			for c, r := range ranges {
				if r.on() && r.Hi > r.Lo && (lo[c]-r.Lo > 0.02*(r.Hi-r.Lo) || r.Hi-hi[c] > 0.02*(r.Hi-r.Lo)) {
					t.Errorf("%s drew [%v, %v] of %v", columns[7+c].Name, lo[c], hi[c], r)
				}
			}
		})
	}
}

// TestDrawSubsetAndOrder: LeRobot's preset applies 3 of its 6 ops per
// camera, each subset and each colour order turning up; Octo's runs its
// four colour ops in the fixed order.
func TestDrawSubsetAndOrder(t *testing.T) {
	s := preset(t, "lerobot")
	subsets := map[[6]bool]int{}
	orders := map[[NumColour]uint8]bool{}
	for i := range 3000 {
		p := Draw(s, 2, int64(i), 0, Camera{})
		var set [6]bool
		n := 0
		for c, o := range p.Place {
			if o > 0 {
				set[c], n = true, n+1
			}
		}
		if !p.Affine.Identity() {
			set[5], n = true, n+1
		}
		if n != 3 {
			t.Fatalf("%d ops applied, want 3: %+v", n, p)
		}
		subsets[set]++
		orders[p.Place] = true
	}
	if len(subsets) != 20 { // 6 choose 3
		t.Errorf("%d distinct subsets of 3 among 6, want 20", len(subsets))
	}
	if len(orders) < 60 {
		t.Errorf("%d distinct colour orders", len(orders))
	}
	o := preset(t, "octo")
	for i := range 100 {
		p := Draw(o, 2, int64(i), 0, Camera{})
		if p.Place != [NumColour]uint8{1, 2, 3, 4, 0} {
			t.Fatalf("octo order %v", p.Place)
		}
	}
}

// TestDrawWrist: wrist cameras under Octo's and openpi's presets get
// colour, never geometry; other cameras get both.
func TestDrawWrist(t *testing.T) {
	for _, name := range []string{"octo", "openpi"} {
		t.Run(name, func(t *testing.T) {
			s := preset(t, name)
			moved := 0
			for i := range 200 {
				w := Draw(s, 3, int64(i), 0, Camera{Slot: 1, Wrist: true})
				if !w.Crop.Identity() || !w.Affine.Identity() || w.Place[ColourBrightness] == 0 {
					t.Fatalf("wrist camera: %+v", w)
				}
				if p := Draw(s, 3, int64(i), 0, Camera{Slot: 0}); !p.Crop.Identity() {
					moved++
				}
			}
			if moved == 0 {
				t.Errorf("no primary camera was cropped")
			}
		})
	}
}

// TestDrawSampleDropout: every sample keeps at least one present camera,
// never drops DropoutKeep, never keeps an absent camera in its stead, and
// drops about p of the cameras.
func TestDrawSampleDropout(t *testing.T) {
	s := Spec{Dropout: 0.5, Brightness: Jitter(0.2)}
	cams := []Camera{{Slot: 0, Name: "primary"}, {Slot: 1, Name: "wrist", Wrist: true}, {Slot: 2, Name: "side", Absent: true}}
	dropped := 0
	var ps []Params
	for i := range 2000 {
		ps = DrawSample(ps[:0], s, 4, int64(i), 0, cams)
		if ps[0].Drop && ps[1].Drop {
			t.Fatalf("sample %d dropped every present camera", i)
		}
		if ps[2].Drop {
			t.Fatalf("sample %d: the absent camera is marked dropped", i)
		}
		for _, p := range ps[:2] {
			if p.Drop {
				dropped++
			}
		}
		if ps[1].Factor != Draw(s, 4, int64(i), 0, cams[1]).Factor {
			t.Fatalf("DrawSample's draws differ from Draw's")
		}
	}
	// Each drops with p = 0.5, but both dropping (1/4) keeps one: 3/8.
	if frac := float64(dropped) / 4000; math.Abs(frac-0.375) > 0.03 {
		t.Errorf("dropped %.3f of the cameras, want about 0.375", frac)
	}
	s.DropoutKeep = "primary"
	for i := range 500 {
		ps = DrawSample(ps[:0], s, 4, int64(i), 0, cams)
		if ps[0].Drop {
			t.Fatalf("sample %d dropped the kept camera", i)
		}
	}
}

// TestEval: val frames get the centre twin of the configured crop and
// nothing else.
func TestEval(t *testing.T) {
	for _, tc := range []struct {
		name string
		side float64 // 1: no crop
	}{
		{"octo", 1},
		{"openvla", math.Sqrt(0.9)},
		{"openpi", 1},
		{"lerobot", 1},
		{"gr00t", 0.95},
		{"diffusion_policy", 0.9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Eval(preset(t, tc.name), Camera{})
			want := Identity()
			want.Crop.W, want.Crop.H = float32(tc.side), float32(tc.side)
			if p != want {
				t.Errorf("got %+v, want %+v", p, want)
			}
		})
	}
	if x, y, w, h := Eval(preset(t, "diffusion_policy"), Camera{}).Crop.Box(320, 240); x != 16 || y != 12 || w != 288 || h != 216 {
		t.Errorf("diffusion policy's val crop of 320x240: %d,%d %dx%d, want 16,12 288x216", x, y, w, h)
	}
	if p := Eval(Spec{ResizedCrop: ResizedCrop{Scale: Range{0.8, 1}, Ratio: Range{0.9, 1.1}}}, Camera{}); math.Abs(float64(p.Crop.W)*float64(p.Crop.H)-0.9) > 1e-6 {
		t.Errorf("resized crop's twin: %+v, want area 0.9", p.Crop)
	}
}

// TestVectorReplay: Vector and FromVector round-trip every drawn Params
// exactly; the columns are named; the identity row is the documented one;
// bad rows are refused.
func TestVectorReplay(t *testing.T) {
	if len(Columns()) != NumColumns || len(ColumnDoc()) != NumColumns || slices.Contains(Columns(), "") {
		t.Fatalf("columns %v", Columns())
	}
	for _, name := range PresetNames() {
		s := preset(t, name)
		s.Dropout = 0.3
		var ps []Params
		for i := range 200 {
			ps = DrawSample(ps[:0], s, 9, int64(i), 1, []Camera{{Slot: 0}, {Slot: 1}})
			for _, p := range ps {
				q, err := FromVector(p.Vector())
				if err != nil || q != p {
					t.Fatalf("%s: %+v replayed as %+v (%v)", name, p, q, err)
				}
			}
		}
	}
	id := Identity().Vector()
	if want := [NumColumns]float32{1, 1, 0.5, 0.5, 0, 0, 0, 1, 1, 1, 0, 1, -1, -1, -1, -1, -1, 0}; id != want {
		t.Errorf("identity row %v, want %v", id, want)
	}
	if a := Identity().Augment(); !a.Identity() {
		t.Errorf("the identity Params augment: %+v", a)
	}
	if a := (Params{}).Augment(); !a.Identity() {
		t.Errorf("the zero Params augment: %+v", a)
	}
	for _, tc := range []struct {
		name string
		edit func(v *[NumColumns]float32)
	}{
		{"order repeated", func(v *[NumColumns]float32) { v[12], v[13] = 0, 0 }},
		{"order gap", func(v *[NumColumns]float32) { v[12] = 1 }},
		{"order fraction", func(v *[NumColumns]float32) { v[12] = 0.5 }},
		{"drop 2", func(v *[NumColumns]float32) { v[17] = 2 }},
		{"hue 0.7", func(v *[NumColumns]float32) { v[10], v[15] = 0.7, 0 }},
		{"crop width 2", func(v *[NumColumns]float32) { v[0] = 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Identity().Vector()
			tc.edit(&v)
			if _, err := FromVector(v); err == nil {
				t.Errorf("%v accepted", v)
			}
		})
	}
}

// TestAugmentChain: Params.Augment lists the colour ops in their order.
func TestAugmentChain(t *testing.T) {
	p := Identity()
	p.Factor = [NumColour]float32{1.1, 0.9, 1.2, 0.03, 1}
	p.Place = [NumColour]uint8{3, 0, 1, 2, 0}
	got := p.Augment().Colour
	want := []frames.Colour{{Op: frames.Saturation, Factor: 1.2}, {Op: frames.Hue, Factor: 0.03}, {Op: frames.Brightness, Factor: 1.1}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestSetAugmentAllocs: drawing allocates nothing, and a frame stage that
// keeps its Augment allocates nothing per frame.
func TestSetAugmentAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("SKIPPED under -race: the race detector's instrumentation allocates; scripts/test.sh runs the Allocs tests again without it")
	}
	s := preset(t, "lerobot")
	s.Dropout = 0.4
	cams := []Camera{{Slot: 0}, {Slot: 1}}
	ps := make([]Params, 0, 2)
	if n := testing.AllocsPerRun(10, func() { ps = DrawSample(ps[:0], s, 1, 2, 3, cams) }); n != 0 {
		t.Errorf("DrawSample: %v allocations", n)
	}
	p := Draw(s, 1, 2, 3, Camera{})
	a := frames.Augment{Colour: make([]frames.Colour, 0, NumColour)}
	if n := testing.AllocsPerRun(10, func() { p.SetAugment(&a) }); n != 0 {
		t.Errorf("SetAugment: %v allocations per frame", n)
	}
	if want := p.Augment(); !slices.Equal(a.Colour, want.Colour) || a.Crop != want.Crop || a.Affine != want.Affine {
		t.Errorf("SetAugment wrote %+v, Augment returns %+v", a, want)
	}
}

// TestDrawStable pins Draw: a batch is a function of (config, seed,
// index) on every machine and in every version, so a change to a stream
// or a formula shows here.
func TestDrawStable(t *testing.T) {
	for _, tc := range []struct {
		preset string
		want   [NumColumns]float32
	}{
		{"octo", [NumColumns]float32{1, 0.91515464, 0.11300249, 0.6875833, 0, 0, 0, 0.9736759, 1.0476388, 1.0851223, 0.028767604, 1, 0, 1, 2, 3, -1, 0}},
		{"lerobot", [NumColumns]float32{1, 1, 0.5, 0.5, -1.5796205, 0.016956331, -0.013040017, 1, 1.0952775, 1, 0.028767604, 1, -1, 0, -1, 1, -1, 0}},
		{"gr00t", [NumColumns]float32{0.95, 0.95, 0.11300249, 0.6875833, 0, 0, 0, 0.9210277, 1.1905552, 1.4256117, 0.046028167, 1, 0, 2, 1, 3, -1, 0}},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			if got := Draw(preset(t, tc.preset), 1, 2, 3, Camera{Slot: 1}).Vector(); got != tc.want {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}
