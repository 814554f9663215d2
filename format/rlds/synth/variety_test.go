package synth

import (
	"math"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format/rlds/tfds"
	"github.com/oxefs/oxefs/format/synthetic"
)

// TestMixVariety checks, from the features.json of all 29 datasets as the
// cache parses them, that the mix spans what the real OXE mix spans.
func TestMixVariety(t *testing.T) {
	all := synthetic.Datasets()
	if len(all) != 29 {
		t.Fatalf("%d datasets, want 29", len(all))
	}
	names := map[string]bool{}
	sizes := map[[2]int]bool{}
	minPx, maxPx := math.MaxInt, 0
	cams := map[int]bool{}
	pngDatasets, codepoints := 0, 0
	minAct, maxAct, minState, maxState := math.MaxInt, 0, math.MaxInt, 0
	minSteps, maxSteps := math.MaxInt, 0
	for _, d := range all {
		if !strings.HasPrefix(d.Name, "synth_") || names[d.Name] {
			t.Errorf("dataset name %q: not synth_* or not unique", d.Name)
		}
		names[d.Name] = true
		b, err := featuresJSON(d)
		if err != nil {
			t.Fatal(err)
		}
		feats, err := tfds.ParseFeatures(b)
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		images := feats.Images()
		cams[len(images)] = true
		if len(images) != len(d.Cameras) {
			t.Errorf("%s: %d image features, %d cameras", d.Name, len(images), len(d.Cameras))
		}
		png := 0
		for _, img := range images {
			h, w := img.Shape[0], img.Shape[1]
			sizes[[2]int{h, w}] = true
			minPx, maxPx = min(minPx, h*w), max(maxPx, h*w)
			if img.Encoding == "png" {
				png++
			} else if img.Encoding != "jpeg" {
				t.Errorf("%s: %s encoded as %q", d.Name, img.Key, img.Encoding)
			}
		}
		if png > 0 {
			pngDatasets++
		}
		act := 0
		for _, a := range d.Actions {
			f, ok := feats.Lookup(a.Key)
			if !ok || f.Kind != episode.KindTensor || !f.PerStep {
				t.Errorf("%s: action %s missing or not a per-step tensor", d.Name, a.Key)
			}
			act += shapeElems(f.Shape)
		}
		minAct, maxAct = min(minAct, act), max(maxAct, act)
		state := 0
		if d.State.Key != "" {
			f, _ := feats.Lookup(d.State.Key)
			state = shapeElems(f.Shape)
		}
		minState, maxState = min(minState, state), max(maxState, state)
		lang, ok := feats.Lookup(d.Language.Key)
		switch {
		case !ok:
			t.Errorf("%s: no language feature %s", d.Name, d.Language.Key)
		case lang.Kind == episode.KindTensor && lang.DType == "int32" && len(lang.Shape) == 1 && lang.Shape[0] == 512:
			codepoints++
		case lang.Kind != episode.KindText:
			t.Errorf("%s: language %s is %v", d.Name, lang.Key, lang.Kind)
		}
		if d.MinSteps < 20 || d.MaxSteps > 120 || d.MinSteps > d.MaxSteps {
			t.Errorf("%s: steps %d..%d", d.Name, d.MinSteps, d.MaxSteps)
		}
		minSteps, maxSteps = min(minSteps, d.MinSteps), max(maxSteps, d.MaxSteps)
		if d.Offset < 1 || d.Offset >= d.MinSteps {
			t.Errorf("%s: offset %d for episodes of %d+ steps", d.Name, d.Offset, d.MinSteps)
		}
	}
	for _, s := range [][2]int{{128, 128}, {480, 640}, {360, 640}} {
		if !sizes[s] {
			t.Errorf("no %dx%d (HxW) camera", s[0], s[1])
		}
	}
	if minPx != 128*128 || maxPx != 480*640 {
		t.Errorf("frames span %d..%d pixels, want 128x128..480x640", minPx, maxPx)
	}
	if !cams[1] || !cams[2] || !cams[3] || len(cams) != 3 {
		t.Errorf("camera counts %v, want 1, 2 and 3", cams)
	}
	if pngDatasets != 1 {
		t.Errorf("%d PNG datasets, want 1", pngDatasets)
	}
	if codepoints != 1 {
		t.Errorf("%d code-point language datasets, want 1", codepoints)
	}
	if minAct != 2 || maxAct != 30 {
		t.Errorf("action dims %d..%d, want 2..30", minAct, maxAct)
	}
	if minState != 0 || maxState != 15 {
		t.Errorf("state dims %d..%d, want 0..15", minState, maxState)
	}
	if minSteps != 20 || maxSteps != 120 {
		t.Errorf("episode lengths %d..%d, want 20..120", minSteps, maxSteps)
	}
}

func shapeElems(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// TestDefaultPlan checks the layout of a default run without writing it:
// every dataset has train and val, episodes are 20..120 steps, shards are
// not empty, and the mix holds several thousand frames per dataset on
// average.
func TestDefaultPlan(t *testing.T) {
	o := Options{Dir: t.TempDir()}
	if err := o.normalise(); err != nil {
		t.Fatal(err)
	}
	plans := plan(o)
	if len(plans) != 29 {
		t.Fatalf("%d datasets planned", len(plans))
	}
	var pixels, frames int64
	for _, p := range plans {
		if len(p.splits) != 2 || p.splits[0].name != "train" || p.splits[1].name != "val" {
			t.Fatalf("%s: splits %v", p.Name, p.splits)
		}
		for _, s := range p.splits {
			if len(s.steps) < 2 {
				t.Errorf("%s %s: %d episodes", p.Name, s.name, len(s.steps))
			}
			next := 0
			for _, r := range s.shards {
				if r.start != next || r.end <= r.start {
					t.Errorf("%s %s: shards %v", p.Name, s.name, s.shards)
				}
				next = r.end
			}
			if next != len(s.steps) {
				t.Errorf("%s %s: shards cover %d of %d episodes", p.Name, s.name, next, len(s.steps))
			}
			for _, n := range s.steps {
				if n < p.MinSteps || n > p.MaxSteps {
					t.Errorf("%s %s: episode of %d steps", p.Name, s.name, n)
				}
				for _, c := range p.Cameras {
					pixels += int64(n * c.Height * c.Width)
					frames += int64(n)
				}
			}
		}
	}
	// At about 2.5 bits per pixel, the size the README announces.
	gb := float64(pixels) * 2.5 / 8 / 1e9
	t.Logf("default run: %d frames, %.0f Mpx, about %.1f GB of JPEG", frames, float64(pixels)/1e6, gb)
	if gb < 1 || gb > 3 {
		t.Errorf("default run is about %.1f GB, want 1..3", gb)
	}
}

// TestJPEGLooksLikeCamera checks real-size frames against what real OXE
// JPEGs measure: 2–3 bits per pixel (the test allows 1.5–3.5), content
// that is not flat, and consecutive frames that differ by a little.
