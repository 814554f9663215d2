package augment

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestValidate: each field outside its domain is an error naming the
// field and what it may hold; every preset is valid.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  Spec
		field string
		valid string // part of FieldError.Valid
	}{
		{"unknown preset", Spec{Preset: "dino"}, FieldPreset, "diffusion_policy, gr00t, lerobot, octo, openpi, openvla"},
		{"scale above 1", Spec{ResizedCrop: ResizedCrop{Scale: Range{0.8, 1.2}, Ratio: Range{1, 1}}}, FieldScale, "hi ≤ 1"},
		{"scale 0", Spec{ResizedCrop: ResizedCrop{Scale: Range{0, 1}, Ratio: Range{1, 1}}}, FieldScale, "0 < lo"},
		{"scale reversed", Spec{ResizedCrop: ResizedCrop{Scale: Range{0.9, 0.8}, Ratio: Range{1, 1}}}, FieldScale, "lo ≤ hi"},
		{"ratio min above max", Spec{ResizedCrop: ResizedCrop{Scale: Range{0.8, 1}, Ratio: Range{1.1, 0.9}}}, FieldRatio, "lo ≤ hi"},
		{"ratio 0", Spec{ResizedCrop: ResizedCrop{Scale: Range{0.8, 1}, Ratio: Range{0, 1}}}, FieldRatio, "0 < lo"},
		{"two crops", Spec{ResizedCrop: ResizedCrop{Scale: Range{0.8, 1}, Ratio: Range{1, 1}}, Crop: 0.9}, FieldCrop, "one crop"},
		{"crop above 1", Spec{Crop: 1.2}, FieldCrop, "(0, 1]"},
		{"crop negative", Spec{Crop: -0.5}, FieldCrop, "(0, 1]"},
		{"crop NaN", Spec{Crop: math.NaN()}, FieldCrop, "(0, 1]"},
		{"rotate beyond 180", Spec{Rotate: Range{-190, 5}}, FieldRotate, "−180"},
		{"rotate reversed", Spec{Rotate: Range{5, -5}}, FieldRotate, "lo ≤ hi"},
		{"translate 1", Spec{Translate: [2]float64{1, 0}}, FieldTranslate, "[0, 1)"},
		{"translate negative", Spec{Translate: [2]float64{0, -0.1}}, FieldTranslate, "[0, 1)"},
		{"brightness below 0", Spec{Brightness: Range{-0.1, 1.2}}, FieldBrightness, "0 ≤ lo"},
		{"contrast reversed", Spec{Contrast: Range{1.2, 0.8}}, FieldContrast, "lo ≤ hi"},
		{"saturation infinite", Spec{Saturation: Range{0.5, math.Inf(1)}}, FieldSaturation, "0 ≤ lo"},
		{"sharpness below 0", Spec{Sharpness: Range{-1, 1}}, FieldSharpness, "0 ≤ lo"},
		{"hue above 0.5", Spec{Hue: Range{-0.1, 0.6}}, FieldHue, "h ≤ 0.5"},
		{"hue below -0.5", Spec{Hue: Symmetric(0.7)}, FieldHue, "−0.5"},
		{"subset above the ops", Spec{Brightness: Jitter(0.2), Subset: 2}, FieldSubset, "0 (all) to 1"},
		{"subset negative", Spec{Subset: -1}, FieldSubset, "0 (all)"},
		{"dropout 1 drops every camera", Spec{Dropout: 1}, FieldDropout, "1 would drop every camera"},
		{"dropout negative", Spec{Dropout: -0.1}, FieldDropout, "[0, 1)"},
		{"eval crop above 1", Spec{EvalCrop: 2}, FieldEvalCrop, "(0, 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *FieldError for %s", err, tc.field)
			}
			if fe.Field != tc.field || !strings.Contains(fe.Valid, tc.valid) {
				t.Errorf("got field %q valid %q, want field %q valid containing %q", fe.Field, fe.Valid, tc.field, tc.valid)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("%q does not name %s", err, tc.field)
			}
		})
	}
	for _, name := range PresetNames() {
		t.Run("preset "+name, func(t *testing.T) {
			s, err := Preset(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(); err != nil {
				t.Error(err)
			}
			if !s.Enabled() || s.Preset != name {
				t.Errorf("preset %s: enabled %v, Preset %q", name, s.Enabled(), s.Preset)
			}
		})
	}
	if err := (Spec{}).Validate(); err != nil {
		t.Errorf("the zero Spec: %v", err)
	}
	if (Spec{}).Enabled() {
		t.Errorf("the zero Spec is enabled")
	}
}

// TestValidateOp: an op name a config uses is one of OpNames, else an
// error listing them.
func TestValidateOp(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"random_resized_crop", true}, {"hue", true}, {"sharpness", true}, {"blur", false}, {"Hue", false}, {"", false}} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateOp(tc.name)
			var fe *FieldError
			switch {
			case tc.ok && err != nil:
				t.Errorf("unexpected %v", err)
			case !tc.ok && (!errors.As(err, &fe) || fe.Field != "op" || !strings.Contains(fe.Valid, "random_resized_crop, crop, rotate")):
				t.Errorf("got %v, want an op error listing the ops", err)
			}
		})
	}
}

// TestValidateSlots: dropout_keep names a slot; dropout needs two.
func TestValidateSlots(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  Spec
		slots []string
		field string // empty: valid
	}{
		{"keep names a slot", Spec{Dropout: 0.5, DropoutKeep: "primary"}, []string{"primary", "wrist"}, ""},
		{"keep unknown", Spec{Dropout: 0.5, DropoutKeep: "side"}, []string{"primary", "wrist"}, FieldDropoutKeep},
		{"dropout over one camera", Spec{Dropout: 0.3}, []string{"primary"}, FieldDropout},
		{"no dropout, one camera", Spec{Brightness: Jitter(0.2)}, []string{"primary"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.ValidateSlots(tc.slots)
			var fe *FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("unexpected %v", err)
			case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
				t.Errorf("got %v, want an error for %s", err, tc.field)
			case tc.field != "" && !strings.Contains(err.Error(), "primary"):
				t.Errorf("%q does not name the slots", err)
			}
		})
	}
}

// TestPresetValues pins the presets to the ranges, in
// torchvision's form.
func TestPresetValues(t *testing.T) {
	get := func(n string) Spec {
		s, err := Preset(n)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	rng := func(r Range, lo, hi float64) bool { return near(r.Lo, lo) && near(r.Hi, hi) }
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"octo crop", rng(get("octo").ResizedCrop.Scale, 0.8, 1) && rng(get("octo").ResizedCrop.Ratio, 0.9, 1.1)},
		{"octo colour", rng(get("octo").Brightness, 0.9, 1.1) && rng(get("octo").Contrast, 0.9, 1.1) && rng(get("octo").Saturation, 0.9, 1.1) && rng(get("octo").Hue, -0.05, 0.05)},
		{"octo wrist", get("octo").WristColourOnly && !get("octo").RandomOrder},
		{"openvla crop", rng(get("openvla").ResizedCrop.Scale, 0.9, 0.9) && rng(get("openvla").ResizedCrop.Ratio, 1, 1)},
		{"openvla colour", rng(get("openvla").Brightness, 0.8, 1.2) && rng(get("openvla").Contrast, 0.8, 1.2) && rng(get("openvla").Saturation, 0.8, 1.2) && rng(get("openvla").Hue, -0.05, 0.05)},
		{"openpi geometry", near(get("openpi").Crop, 0.9025) && rng(get("openpi").Rotate, -5, 5) && get("openpi").WristColourOnly},
		{"openpi colour", rng(get("openpi").Brightness, 0.7, 1.3) && rng(get("openpi").Contrast, 0.6, 1.4) && rng(get("openpi").Saturation, 0.5, 1.5) && !get("openpi").Hue.on()},
		{"lerobot", rng(get("lerobot").Brightness, 0.8, 1.2) && rng(get("lerobot").Contrast, 0.8, 1.2) && rng(get("lerobot").Saturation, 0.5, 1.5) && rng(get("lerobot").Hue, -0.05, 0.05) && rng(get("lerobot").Sharpness, 0.5, 1.5)},
		{"lerobot affine", rng(get("lerobot").Rotate, -5, 5) && get("lerobot").Translate == [2]float64{0.05, 0.05} && get("lerobot").Subset == 3 && get("lerobot").RandomOrder},
		{"gr00t", near(get("gr00t").Crop, 0.9025) && rng(get("gr00t").Brightness, 0.7, 1.3) && rng(get("gr00t").Contrast, 0.6, 1.4) && rng(get("gr00t").Saturation, 0.5, 1.5) && rng(get("gr00t").Hue, -0.08, 0.08)},
		{"diffusion policy", near(get("diffusion_policy").Crop, 0.81) && !get("diffusion_policy").Brightness.on()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Errorf("preset values differ from the contract")
			}
		})
	}
	if _, err := Preset("nope"); err == nil || !strings.Contains(err.Error(), "octo") {
		t.Errorf("unknown preset: %v", err)
	}
}
