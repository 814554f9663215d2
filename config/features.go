package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/oxefs/oxefs/episode"
)

// Feature describes one feature of a dataset, as much as the rules of the
// feature keys need. Whatever reads a dataset format fills it from its own
// feature model.
type Feature struct {
	// Key is the flattened key a config names, "steps/observation/image".
	Key  string
	Kind episode.Kind
	// DType is the element type: bool, int8 … int64, uint8 … uint64,
	// float16, float32, float64, string.
	DType string
	// Shape is the shape of one value: one step's for a PerStep feature,
	// the episode's otherwise. -1 marks an unknown dimension. Images are
	// [height, width, channels].
	Shape []int
	// PerStep: one value per step (an RLDS `steps` feature); else one value
	// per episode.
	PerStep bool
	// Ragged: the values are nested in two or more sequence levels, so a
	// step has no fixed shape.
	Ragged bool
}

// scope says whether a feature is per step or per episode, for messages.
func (f Feature) scope() string {
	if f.PerStep {
		return "a per-step"
	}
	return "an episode-level"
}

// IsCamera is the rule of image_key: the feature is an image per step.
func IsCamera(f Feature) bool {
	return f.Kind == episode.KindImage && f.PerStep && !f.Ragged
}

// numericDTypes are the element types of a tensor of numbers, each of
// which an episode reader turns into float64.
var numericDTypes = []string{"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16", "float32", "float64"}

// IsVector is the rule of action_keys and state_key: the feature is a
// tensor of numbers per step, of a fixed shape (actions and states are
// padded to the mix's widest). A class label names a category rather than
// a quantity to sum, and a string is no number: neither is a vector.
func IsVector(f Feature) bool {
	return f.Kind == episode.KindTensor && slices.Contains(numericDTypes, f.DType) && f.PerStep && !f.Ragged && knownShape(f.Shape)
}

func knownShape(shape []int) bool {
	for _, d := range shape {
		if d < 0 {
			return false
		}
	}
	return true
}

// size is the number of values in one value of a feature of known shape.
func size(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Language says how a language_key feature stores the instruction.
type Language uint8

const (
	// LanguageNone: the feature cannot be read as language.
	LanguageNone Language = iota
	// LanguageText: UTF-8 text, per step or per episode: a Text feature
	// (of an episode-level sequence of Text, the first is read) or a
	// string tensor of shape [].
	LanguageText
	// LanguageCodes: an integer tensor of shape [n], n ≥ 1, per step or
	// per episode: one instruction as code points (or UTF-8 bytes), padded
	// with zeros (language_table).
	LanguageCodes
)

// LanguageOf is the rule of language_key: how the feature stores an
// instruction, LanguageNone when it cannot be read as one.
func LanguageOf(f Feature) Language {
	switch {
	case f.Ragged:
		return LanguageNone
	case f.Kind == episode.KindText, f.Kind == episode.KindTensor && f.DType == "string" && len(f.Shape) == 0:
		return LanguageText
	case f.Kind == episode.KindTensor && (strings.HasPrefix(f.DType, "int") || strings.HasPrefix(f.DType, "uint")) &&
		slices.Contains(numericDTypes, f.DType) && len(f.Shape) == 1 && f.Shape[0] > 0:
		return LanguageCodes
	}
	return LanguageNone
}

func isLanguage(f Feature) bool { return LanguageOf(f) != LanguageNone }

// FeatureUse is what the feature keys of a dataset resolve to.
type FeatureUse struct {
	// ImageKey is image_key, or the dataset's only camera when the config
	// leaves it out. Pair mode only.
	ImageKey string
	// Cameras is the dataset's image key per camera slot (SlotKeys): its
	// cameras, or its only image in the first slot. Step mode only.
	Cameras map[string]string
	// ActionDim is the number of values per step of the action keys
	// together; StateDim that of state_key (0 without one).
	ActionDim, StateDim int
	// Language is how language_key stores the instruction (LanguageNone
	// without one).
	Language Language
}

// CheckFeatures checks the dataset's feature keys against its features,
// each with its rule: image_key with IsCamera (in step mode, each slot's
// key of cameras instead), action_keys and state_key with IsVector,
// language_key with LanguageOf. Each problem is a
// *ConfigError on the key's line (the entry's when the key is absent)
// that lists the keys that would do.
func (d *DatasetConfig) CheckFeatures(features []Feature) (FeatureUse, ConfigErrors) {
	var p problems
	add := func(key, format string, args ...any) { p.add(d.Line(key), d.Name, key, format, args...) }
	byKey := make(map[string]Feature, len(features))
	for _, f := range features {
		byKey[f.Key] = f
	}
	inspect := fmt.Sprintf("`oxefs inspect %s` lists every feature", d.Source)
	use := FeatureUse{ImageKey: d.ImageKey}

	// image_key
	var images []string
	for _, f := range features {
		if IsCamera(f) {
			images = append(images, f.Key)
		}
	}
	d.rules().CheckImages(d, images, byKey, p.add, &use, inspect)

	// language_key, action_keys, state_key
	check := func(field, key string, ok func(Feature) bool, want string) (Feature, bool) {
		f, found := byKey[key]
		var valid []string
		for _, x := range features {
			if ok(x) {
				valid = append(valid, x.Key)
			}
		}
		closeOnes := strings.Join(nearest(key, valid, 5), ", ")
		switch {
		case !found:
			add(field, "no feature %q (closest %s: %s; %s)", key, want, closeOnes, inspect)
		case !ok(f):
			add(field, "%q is %s %s %v %s feature, not %s (closest: %s)%s", key, f.scope(), f.DType, f.Shape, f.Kind, want, closeOnes, whyNot(field, f))
		default:
			return f, true
		}
		return f, false
	}
	if d.LanguageKey != "" {
		if f, ok := check("language_key", d.LanguageKey, isLanguage, "text or code-point features"); ok {
			use.Language = LanguageOf(f)
		}
	}
	for _, k := range d.ActionKeys {
		if f, ok := check("action_keys", k, IsVector, "numeric per-step tensors"); ok {
			use.ActionDim += size(f.Shape)
		}
	}
	if d.StateKey != "" {
		if f, ok := check("state_key", d.StateKey, IsVector, "numeric per-step tensors"); ok {
			use.StateDim = size(f.Shape)
		}
	}
	return use, p.errs
}

// checkCameras is the rule of cameras in step mode: each slot's key is a
// per-step image (IsCamera), and a dataset with several images says which
// goes to which slot. It returns the dataset's image key per slot.
func (d *DatasetConfig) checkCameras(images []string, byKey map[string]Feature, add AddFunc) map[string]string {
	var slots []string
	for _, s := range d.steps.Cameras {
		slots = append(slots, s.Name)
	}
	keys, err := d.SlotKeys(d.steps, images)
	if err != nil {
		add(d.Line("cameras"), d.Name, "cameras", "required: the dataset has %d image features (%s); map them to the slots (%s) with cameras: {<slot>: <image key>}",
			len(images), strings.Join(images, ", "), strings.Join(slots, ", "))
		return nil
	}
	valid := listOr(images, "none: the dataset has no per-step image feature")
	for _, slot := range slots {
		key, ok := keys[slot]
		if !ok || slices.Contains(images, key) {
			continue
		}
		line := d.Line("cameras." + slot)
		if f, ok := byKey[key]; ok {
			add(line, d.Name, "cameras", "slot %s: %q is a %s feature, not a per-step image (valid: %s)", slot, key, f.Kind, valid)
		} else {
			add(line, d.Name, "cameras", "slot %s: no image feature %q (valid: %s)", slot, key, valid)
		}
	}
	return keys
}

// whyNot explains, where the kind, dtype and shape alone do not, why a
// feature breaks its field's rule.
func whyNot(field string, f Feature) string {
	switch field {
	case "action_keys", "state_key":
		switch {
		case f.Kind == episode.KindClassLabel:
			return "; a class label names a category, not a quantity to sum or pad"
		case !knownShape(f.Shape) && IsVector(Feature{Kind: f.Kind, DType: f.DType, PerStep: f.PerStep, Ragged: f.Ragged}):
			return fmt.Sprintf("; shape %v has an unknown dimension, and oxefs needs a fixed size to pad actions and states", f.Shape)
		}
	case "language_key":
		switch {
		case f.Ragged:
		case f.Kind == episode.KindTensor && f.DType == "string":
			return "; a string tensor must hold one string per step or per episode (shape [])"
		case f.Kind == episode.KindTensor && (strings.HasPrefix(f.DType, "int") || strings.HasPrefix(f.DType, "uint")):
			return "; code points must be an integer tensor of shape [n], one instruction per step or per episode"
		}
	}
	return ""
}
