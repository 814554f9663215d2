package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/augment"
)

// augMix is stepsMix's sample block with an augment block at the mix
// level (aug) and the wrist slot's own block (wrist, "" for none).
func augMix(aug, wrist string) string {
	w := ""
	if wrist != "" {
		w = ", augment: " + wrist
	}
	return "seed: 0\n" + // line 1
		"sample:\n" + // 2
		"  cameras:\n" + // 3
		"    primary: {size: [64, 64]}\n" + // 4
		"    wrist:   {size: [32, 32]" + w + "}\n" + // 5
		"augment: " + aug + "\n" + // 6
		"datasets:\n" +
		"  - {name: a, source: /data/a}\n"
}

// TestParseAugment: a preset gives its ranges, explicit keys override
// them, numbers stand for torchvision's symmetric ranges, a slot's block
// overrides the mix's and `off` switches a slot off.
func TestParseAugment(t *testing.T) {
	octo, err := augment.Preset("octo")
	if err != nil {
		t.Fatal(err)
	}
	octoRotate := octo
	octoRotate.Rotate = augment.Range{Lo: -7, Hi: 7}
	octoRotate.Hue = augment.Range{Lo: -0.1, Hi: 0.02}
	for _, tc := range []struct {
		name, aug, wrist string
		primary, wristS  *augment.Spec
	}{
		{name: "preset", aug: "{preset: octo}", primary: &octo, wristS: &octo},
		{name: "preset and keys", aug: "{rotate: 7, preset: octo, hue: [-0.1, 0.02]}", primary: &octoRotate, wristS: &octoRotate},
		{name: "keys", aug: "{brightness: 0.2, translate: [0.1, 0.05], random_resized_crop: {scale: [0.5, 1]}, shared: true, dropout: 0.25}",
			primary: &augment.Spec{Brightness: augment.Range{Lo: 0.8, Hi: 1.2}, Translate: [2]float64{0.1, 0.05},
				ResizedCrop: augment.ResizedCrop{Scale: augment.Range{Lo: 0.5, Hi: 1}, Ratio: augment.Range{Lo: 3.0 / 4, Hi: 4.0 / 3}},
				Shared:      true, Dropout: 0.25}},
		{name: "slot off", aug: "{preset: octo}", wrist: "off", primary: &octo, wristS: &augment.Spec{}},
		{name: "slot only", aug: "off", wrist: "{contrast: [0.5, 1.5]}", primary: &augment.Spec{}, wristS: &augment.Spec{Contrast: augment.Range{Lo: 0.5, Hi: 1.5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(augMix(tc.aug, tc.wrist)))
			if err != nil {
				t.Fatal(err)
			}
			if tc.wristS == nil {
				tc.wristS = tc.primary
			}
			for slot, want := range map[string]*augment.Spec{"primary": tc.primary, "wrist": tc.wristS} {
				if got := c.AugmentOf(slot); got == nil || *got != *want {
					t.Errorf("%s: got %+v, want %+v", slot, got, want)
				}
			}
			// info.json writes the block so that it reads back the same.
			b, err := json.Marshal(c.Augment)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse([]byte(augMix(string(b), "")))
			if err != nil {
				t.Fatalf("%s does not read back: %v", b, err)
			}
			if got := back.AugmentOf("primary"); *got != *tc.primary {
				t.Errorf("read back %s: got %+v, want %+v", b, got, tc.primary)
			}
			if w := c.Steps.Cameras[1].Augment; w != nil {
				wb, err := json.Marshal(w)
				if err != nil {
					t.Fatal(err)
				}
				back, err := Parse([]byte(augMix("off", string(wb))))
				if err != nil {
					t.Fatalf("wrist's %s does not read back: %v", wb, err)
				}
				if got := back.AugmentOf("wrist"); *got != *tc.wristS {
					t.Errorf("wrist read back %s: got %+v, want %+v", wb, got, tc.wristS)
				}
			}
		})
	}
}

// TestAugmentNone: without a block, nothing is augmented and info.json's
// config holds no augment key (the golden digests' info.json).
func TestAugmentNone(t *testing.T) {
	c, err := Parse([]byte(stepsMix))
	if err != nil {
		t.Fatal(err)
	}
	if c.AugmentOf("primary") != nil {
		t.Errorf("augment without a block: %+v", c.AugmentOf("primary"))
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "augment") {
		t.Errorf("the config as loaded names augment: %s", b)
	}
}

// TestAugmentErrors: each mistake is reported on its line, naming the
// field and what it may hold.
func TestAugmentErrors(t *testing.T) {
	for _, tc := range []struct {
		name, aug, wrist string
		line             int
		field            string
		msg              []string
	}{
		{name: "unknown preset", aug: "{preset: octopus}", line: 6, field: "augment.preset", msg: []string{"octopus", "diffusion_policy, gr00t, lerobot, octo, openpi, openvla"}},
		{name: "unknown op", aug: "{rotat: 5}", line: 6, msg: []string{`unknown key "rotat"`, "did you mean rotate", "sharpness"}},
		{name: "scale above 1", aug: "{random_resized_crop: {scale: [0.5, 1.2]}}", line: 6, field: "augment.random_resized_crop.scale", msg: []string{"[0.5, 1.2]", "hi ≤ 1"}},
		{name: "hue above 0.5", aug: "{hue: 0.6}", line: 6, field: "augment.hue", msg: []string{"[-0.6, 0.6]", "0.5"}},
		{name: "dropout of every camera", aug: "{dropout: 1}", line: 6, field: "augment.dropout", msg: []string{"[0, 1)"}},
		{name: "keep no slot", aug: "{dropout: 0.5, dropout_keep: head}", line: 6, field: "augment.dropout_keep", msg: []string{"head", "primary, wrist"}},
		{name: "not a mapping", aug: "[1, 2]", line: 6, field: "augment", msg: []string{"`off` or a mapping"}},
		{name: "range of three", aug: "{rotate: [1, 2, 3]}", line: 6, field: "augment.rotate", msg: []string{"[lo, hi]"}},
		{name: "slot dropout", aug: "off", wrist: "{dropout: 0.5}", line: 5, field: "sample.cameras.wrist.augment.dropout", msg: []string{"only the mix-level"}},
		{name: "slot hue", aug: "off", wrist: "{hue: [0.2, 0.1]}", line: 5, field: "sample.cameras.wrist.augment.hue", msg: []string{"[0.2, 0.1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(augMix(tc.aug, tc.wrist)))
			var errs ConfigErrors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("got %v, want a config error", err)
			}
			e := errs[0]
			if e.Line != tc.line || e.Field != tc.field {
				t.Errorf("got line %d field %q (%v), want line %d field %q", e.Line, e.Field, e, tc.line, tc.field)
			}
			for _, m := range tc.msg {
				if !strings.Contains(e.Error(), m) {
					t.Errorf("%q does not say %q", e.Error(), m)
				}
			}
		})
	}
}

// TestAugmentPairDropout: pair mode has one camera, which dropout would
// drop.
func TestAugmentPairDropout(t *testing.T) {
	_, err := Parse([]byte("augment: {dropout: 0.1}\ndatasets:\n  - {name: a, source: /data/a}\n"))
	if err == nil || !strings.Contains(err.Error(), "augment.dropout") {
		t.Errorf("got %v, want augment.dropout refused", err)
	}
}

// TestAugmentDataset: a dataset entry's block replaces the mix's and the
// slots' for its samples; its mistakes name the dataset.
func TestAugmentDataset(t *testing.T) {
	text := "seed: 0\naugment: {rotate: 5}\ndatasets:\n  - {name: a, source: /data/a, augment: {brightness: 0.5}}\n  - {name: b, source: /data/b}\n"
	c, err := Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []augment.Spec{{Brightness: augment.Range{Lo: 0.5, Hi: 1.5}}, {Rotate: augment.Range{Lo: -5, Hi: 5}}} {
		if got := c.AugmentFor(&c.Datasets[i], ""); got == nil || *got != want {
			t.Errorf("dataset %d: %+v, want %+v", i, got, want)
		}
	}
	if off := c.WithoutAugment(); off.AugmentFor(&off.Datasets[0], "") != nil || c.Datasets[0].Augment == nil {
		t.Errorf("WithoutAugment left dataset a's block or changed the original")
	}
	for _, tc := range []struct{ name, block, field string }{
		{"unknown preset", "{preset: octo2}", "augment.preset"},
		{"dropout", "{dropout: 0.5}", "augment.dropout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte("datasets:\n  - name: a\n    source: /data/a\n    augment: " + tc.block + "\n"))
			var errs ConfigErrors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("got %v, want a config error", err)
			}
			if e := errs[0]; e.Dataset != "a" || e.Field != tc.field || e.Line != 4 {
				t.Errorf("got %v (dataset %q field %q line %d), want dataset a field %s line 4", e, e.Dataset, e.Field, e.Line, tc.field)
			}
		})
	}
}
