package config

import (
	"fmt"
	"math/big"
	"strings"
)

// Frames is the frame selection of one dataset's samples: what
// pair_frames, stride, num_frames, samples_per_episode and the dataset's
// offset say together (Config.FramesOf). See FrameMode for the frames each
// mode picks.
type Frames struct {
	Mode   FrameMode
	Offset Offset
	// Stride is k for FramesStride.
	Stride int
	// N is the number of frames for FramesFixedN.
	N int
	// SamplesPerEpisode is the mix's samples_per_episode: 0 means every
	// valid start of every episode is a sample unit.
	SamplesPerEpisode int
}

// Count is F, the number of frames per sample: 2 for endpoints, offset+1
// for all, offset/stride+1 for stride, N for fixed_n. The Frames must be
// valid.
func (f Frames) Count() int {
	switch f.Mode {
	case FramesAll:
		return f.Offset.Min + 1
	case FramesStride:
		return f.Offset.Min/f.Stride + 1
	case FramesFixedN:
		return f.N
	}
	return 2
}

// Validate checks a selection built in code with the rules Parse applies
// to the keys it comes from. The problems come back as ConfigErrors naming
// the field.
func (f Frames) Validate() error {
	var p problems
	report := func(field, format string, args ...any) { p.add(0, "", field, format, args...) }
	f.checkMix(report)
	f.checkOffset(report)
	f.checkMode(report)
	return p.err()
}

// Report is told one problem of a field (of the mix, or of the dataset
// at hand), which it reports on that field's line.
type Report func(field, format string, args ...any)

// checkMix applies the rules of the mix-wide keys: pair_frames,
// samples_per_episode, stride and num_frames.
func (f Frames) checkMix(bad Report) {
	if !f.Mode.Valid() {
		bad("pair_frames", "%s", frameModes.notOneOf(f.Mode.String()))
	}
	if f.SamplesPerEpisode < 0 || f.SamplesPerEpisode > maxSmall {
		bad("samples_per_episode", "must be in 0..%d (0 = every valid pair), got %d", maxSmall, f.SamplesPerEpisode)
	}
	if f.Mode != FramesStride && f.Stride != 0 {
		bad("stride", "is only used with pair_frames: stride (pair_frames is %s)", f.Mode)
	}
	if f.Mode != FramesFixedN && f.N != 0 {
		bad("num_frames", "is only used with pair_frames: fixed_n (pair_frames is %s)", f.Mode)
	}
	switch f.Mode {
	case FramesStride:
		if f.Stride <= 0 || f.Stride > maxSmall {
			bad("stride", "pair_frames: stride needs stride in 1..%d (frames t, t+stride, …, t+offset), got %d", maxSmall, f.Stride)
		}
	case FramesFixedN:
		if f.N < 2 || f.N > maxNumFrames {
			bad("num_frames", "pair_frames: fixed_n needs num_frames in 2..%d (frames evenly spaced over [t, t+offset]), got %d", maxNumFrames, f.N)
		}
	}
}

// checkOffset applies the rules every offset follows, whatever the mode.
func (f Frames) checkOffset(bad Report) {
	o := f.Offset
	if o.Min < 1 || o.Max > maxSmall {
		bad("offset", "must be ≥ 1 and ≤ %d, got %s", maxSmall, o)
	} else if o.Min > o.Max {
		bad("offset", "range [%d, %d] has min > max", o.Min, o.Max)
	}
}

// checkMode applies the rules the frame mode sets for a sampled dataset's
// offset, and reports whether it found a problem.
func (f Frames) checkMode(bad Report) bool {
	o := f.Offset
	switch f.Mode {
	case FramesAll, FramesStride:
		switch {
		case !o.Fixed():
			bad("offset", "pair_frames: %s needs one fixed offset (F = %s frames per sample is the same in every batch), got %s", f.Mode, f.countText(), o)
			return true
		case f.Mode == FramesStride && f.Stride > 0 && o.Min%f.Stride != 0:
			bad("offset", "pair_frames: stride needs an offset that is a multiple of stride %d, got %d", f.Stride, o.Min)
			return true
		}
	case FramesFixedN:
		if f.N >= 2 && o.Min < f.N-1 {
			bad("offset", "pair_frames: fixed_n with num_frames %d needs offset ≥ %d so the frames are distinct, got %s", f.N, f.N-1, o)
			return true
		}
	}
	return false
}

// countText says how the mode derives F from the offset.
func (f Frames) countText() string {
	if f.Mode == FramesStride {
		return "offset/stride+1"
	}
	return "offset+1"
}

// checkName refuses names that would break episode ids (dataset/split/shard/record).
func checkName(name string) string {
	switch {
	case len(name) > 128:
		return "at most 128 bytes"
	case strings.ContainsAny(name, "/\\"):
		return "must not contain a slash (episode ids are dataset/split/shard/record)"
	case strings.TrimSpace(name) != name:
		return "must not start or end with spaces"
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return "must not contain control characters"
		}
	}
	return ""
}

// Validate checks a config again, for one built or changed in code (a
// --seed flag, a built-in demo mix): the checks Parse does after decoding.
func (c *Config) Validate() error {
	var p problems
	c.validate(p.add)
	return p.err()
}

// validate checks what needs no dataset metadata, after defaults are set.
func (c *Config) validate(add AddFunc) {
	top := func(key, format string, args ...any) { add(c.lines[key], "", key, format, args...) }
	c.checkAugment(add)
	if c.BatchSize <= 0 || c.BatchSize > maxBatchSize {
		top("batch_size", "must be in 1..%d, got %d", maxBatchSize, c.BatchSize)
	}
	for _, s := range c.ImageSize {
		if s <= 0 || s > maxImageSide {
			top("image_size", "must be [height, width], each in 1..%d, got %v", maxImageSide, c.ImageSize)
			break
		}
	}
	if !c.Layout.Valid() {
		top("layout", "%s", layouts.notOneOf(c.Layout.String()))
	}
	if !c.Meta.Valid() {
		top("meta", "%s", metaModes.notOneOf(c.Meta.String()))
	}
	if !c.Resize.Valid() {
		top("resize", "%s", resizeModes.notOneOf(c.Resize.String()))
	}
	if !c.Decode.Valid() {
		top("decode", "%s", decodeModes.notOneOf(c.Decode.String()))
	}
	c.checkGPUDecode(add)
	if c.WindowShards <= 0 || c.WindowShards > maxSmall {
		top("window_shards", "must be in 1..%d, got %d", maxSmall, c.WindowShards)
	}
	if _, set := c.lines["num_batches"]; c.NumBatches < 0 || c.NumBatches > maxBatches || (set && c.NumBatches == 0) {
		top("num_batches", "must be in 1..%d (leave it out for one pass over the sample units), got %d", int64(maxBatches), c.NumBatches)
	}
	c.checkOneKind(top)
	rules := c.rules()
	rules.ValidateMix(add, top)

	if len(c.Datasets) == 0 {
		top("datasets", "the mix needs at least one dataset")
		return
	}
	names := make(map[string]int)
	sampled := 0
	var first *DatasetConfig // first sampled dataset, for the F checks
	for i := range c.Datasets {
		d := &c.Datasets[i]
		id := d.Name
		if id == "" {
			id = fmt.Sprintf("datasets[%d]", i)
		}
		field := func(key, format string, args ...any) { add(d.Line(key), id, key, format, args...) }
		if d.Name == "" {
			field("name", "required (could not derive one from source %q)", d.Source)
		} else if msg := checkName(d.Name); msg != "" {
			field("name", "%s", msg)
		} else if prev, dup := names[d.Name]; dup {
			field("name", "used twice (also datasets[%d]); give each entry its own name — two copies of one dataset need two names", prev)
		} else {
			names[d.Name] = i
		}
		if d.Split == "" {
			field("split", "must not be empty (default %s)", DefaultSplit)
		}
		d.steps, d.blocks = c.Steps, c.blocks
		f := c.FramesOf(d)
		rules.ValidateDataset(d, id, f, add, field)
		for j, k := range d.ActionKeys {
			if k == "" {
				field("action_keys", "key %d is empty", j)
			}
		}
		if !d.Sampled() {
			continue
		}
		sampled++
		if d.Source == "" {
			field("source", "required: a local dataset directory, gs://bucket/prefix/name/version or hf://datasets/OWNER/NAME[@REVISION][/PATH]")
		}
		first = rules.ValidateSampled(d, first, f, field)
	}
	if sampled == 0 {
		top("datasets", "every dataset has weight ≤ 0, which drops it: nothing left to mix")
	}
	c.checkProportionate(add)
}

// checkProportionate refuses numeric weights that leave nothing for the
// proportionate datasets: alongside them, numeric weights are fractions of
// the batch.
func (c *Config) checkProportionate(add func(line int, dataset, field, format string, args ...any)) {
	sum := new(big.Rat)
	var prop, num []string
	var at *DatasetConfig
	for i := range c.Datasets {
		d := &c.Datasets[i]
		switch {
		case d.Weight.Proportionate:
			prop = append(prop, d.Name)
			if at == nil {
				at = d
			}
		case d.Sampled():
			sum.Add(sum, d.Weight.Value)
			num = append(num, fmt.Sprintf("%s %s", d.Name, d.Weight))
		}
	}
	if at == nil || sum.Cmp(big.NewRat(1, 1)) < 0 {
		return
	}
	add(at.Line("weight"), at.Name, "weight", "proportionate datasets (%s) share what the numeric weights leave of the batch, and those (%s) already sum to %s; "+
		"give them fractions that sum to less than 1 (a dataset without a weight has weight 1)",
		strings.Join(prop, ", "), strings.Join(num, ", "), sum.FloatString(3))
}
