package augment

import (
	"slices"
	"strings"
)

// The presets: each policy family's training augmentation, as torchvision
// ranges (see the package doc for what each one is in its own code).
var presets = map[string]Spec{
	"octo": {
		ResizedCrop:     ResizedCrop{Scale: Range{0.8, 1}, Ratio: Range{0.9, 1.1}},
		Brightness:      Jitter(0.1),
		Contrast:        Range{0.9, 1.1},
		Saturation:      Range{0.9, 1.1},
		Hue:             Symmetric(0.05),
		WristColourOnly: true,
		EvalCrop:        1,
	},
	"openvla": {
		ResizedCrop: ResizedCrop{Scale: Range{0.9, 0.9}, Ratio: Range{1, 1}},
		Brightness:  Jitter(0.2),
		Contrast:    Range{0.8, 1.2},
		Saturation:  Range{0.8, 1.2},
		Hue:         Symmetric(0.05),
	},
	"openpi": {
		Crop:            0.95 * 0.95,
		Rotate:          Symmetric(5),
		Brightness:      Jitter(0.3),
		Contrast:        Jitter(0.4),
		Saturation:      Jitter(0.5),
		WristColourOnly: true,
		EvalCrop:        1,
	},
	"lerobot": {
		Rotate:      Symmetric(5),
		Translate:   [2]float64{0.05, 0.05},
		Brightness:  Range{0.8, 1.2},
		Contrast:    Range{0.8, 1.2},
		Saturation:  Range{0.5, 1.5},
		Hue:         Symmetric(0.05),
		Sharpness:   Range{0.5, 1.5},
		Subset:      3,
		RandomOrder: true,
	},
	"gr00t": {
		Crop:        0.95 * 0.95,
		Brightness:  Jitter(0.3),
		Contrast:    Jitter(0.4),
		Saturation:  Jitter(0.5),
		Hue:         Symmetric(0.08),
		RandomOrder: true,
	},
	"diffusion_policy": {
		Crop: 0.9 * 0.9,
	},
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Preset returns the named preset, or a *FieldError naming the valid ones.
func Preset(name string) (Spec, error) {
	s, ok := presets[name]
	if !ok {
		return Spec{}, fieldErr(FieldPreset, name, strings.Join(PresetNames(), ", "))
	}
	s.Preset = name
	return s, nil
}
