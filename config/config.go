package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
)

// Config is a mix config: what to serve and how. Parse fills every default,
// so a Config from Parse is complete; JSON-encoding it gives the config as
// loaded (info.json), which Parse reads back to the same Config.
type Config struct {
	Seed              uint64     `json:"seed"`
	BatchSize         int        `json:"batch_size"`
	ImageSize         [2]int     `json:"image_size"` // [height, width]
	Layout            Layout     `json:"layout"`
	Meta              MetaMode   `json:"meta"`
	SamplesPerEpisode int        `json:"samples_per_episode"`
	PairFrames        FrameMode  `json:"pair_frames"`
	Stride            int        `json:"stride,omitempty"`     // pair_frames: stride
	NumFrames         int        `json:"num_frames,omitempty"` // pair_frames: fixed_n
	Resize            ResizeMode `json:"resize"`
	Decode            DecodeMode `json:"decode"`
	WindowShards      int        `json:"window_shards"`
	NumBatches        int64      `json:"num_batches,omitempty"` // 0: one pass over the sample units
	Normalize         Normalize  `json:"normalize"`
	// Steps, the YAML's `sample` block, when set makes samples step
	// samples: deltas around t (camera slots, state and action chunks)
	// instead of frame pairs. Only config/kind.go (the registry of kinds) asks
	// whether it is set.
	Steps *StepSpec `json:"sample,omitempty"`
	// Augment, the YAML's `augment` block, augments every camera's
	// training frames (a camera slot's own block overrides it); nil:
	// none.
	Augment  *Augment        `json:"augment,omitempty"`
	Datasets []DatasetConfig `json:"datasets"`

	lines map[string]int // line of each top-level key
	// blocks are the blocks of the registered kinds the YAML holds, by
	// key (KindDef.Key), as their Parse read them; nil: none.
	blocks map[string]any
}

// DatasetConfig is one entry of `datasets`.
type DatasetConfig struct {
	Name        string   `json:"name"`
	Source      string   `json:"source"`
	Anonymous   bool     `json:"anonymous,omitempty"`
	Split       string   `json:"split"`
	ValSplit    string   `json:"val_split,omitempty"`
	Weight      Weight   `json:"weight"`
	ImageKey    string   `json:"image_key,omitempty"` // "": the dataset's only image feature
	Offset      Offset   `json:"offset,omitzero"`     // zero in step mode: PlanOffset
	LanguageKey string   `json:"language_key,omitempty"`
	ActionKeys  []string `json:"action_keys,omitempty"`
	StateKey    string   `json:"state_key,omitempty"`
	Robot       string   `json:"robot,omitempty"`
	// Cameras maps the mix's camera slots (StepSpec.Cameras) to the
	// dataset's image keys; a slot it leaves out is zeros with image_mask
	// 0. Only with a `sample` block. Nil: the dataset's only image goes to
	// the first slot (SlotKeys); empty: no camera at all.
	Cameras map[string]string `json:"cameras,omitzero"`
	// FPS is the dataset's frame rate where its metadata gives none (RLDS),
	// for deltas in seconds; 0: the dataset's own.
	FPS float64 `json:"fps,omitempty"`
	// Augment is the dataset's own augment block: it replaces the mix's
	// and the slots' for every camera of its samples; nil: theirs.
	Augment *Augment `json:"augment,omitempty"`

	line  int            // line of the entry
	lines map[string]int // line of each key
	// steps and blocks are the mix's sample block (Config.Steps) and
	// registered kinds' blocks, set by Validate, so that CheckFeatures
	// asks the mix's kind (`cameras` in step mode).
	steps  *StepSpec
	blocks map[string]any
}

// Normalize says how batches normalise actions and states with each
// dataset's statistics.
type Normalize struct {
	Action NormMode `json:"action"`
	State  NormMode `json:"state"`
}

// Any reports whether anything is normalised.
func (n Normalize) Any() bool { return n.Action != NormNone || n.State != NormNone }

// Offset is a dataset's frame offset, the distance from a sample's first
// frame to its last: a fixed value (Min == Max) or a range [Min, Max]
// drawn per sample.
type Offset struct{ Min, Max int }

// FixedOffset is an offset of exactly n steps.
func FixedOffset(n int) Offset { return Offset{n, n} }

// Fixed reports whether the offset is one value.
func (o Offset) Fixed() bool { return o.Min == o.Max }

// ValidStarts is the number of frames t of an episode of steps steps that
// can start a sample: t ∈ [0, steps−1−Min]. Zero or less means the episode
// is too short for the offset and has no sample units.
func (o Offset) ValidStarts(steps int) int { return steps - o.Min }

// String writes the offset as the config does: n or [min, max].
func (o Offset) String() string {
	if o.Fixed() {
		return fmt.Sprint(o.Min)
	}
	return fmt.Sprintf("[%d, %d]", o.Min, o.Max)
}

// MarshalJSON writes an int or [min, max].
func (o Offset) MarshalJSON() ([]byte, error) {
	if o.Fixed() {
		return json.Marshal(o.Min)
	}
	return json.Marshal([2]int{o.Min, o.Max})
}

// Defaults and bounds.
const (
	DefaultBatchSize         = 64
	DefaultImageSize         = 256
	DefaultSamplesPerEpisode = 1
	DefaultWindowShards      = 4
	DefaultSplit             = "train"
	DefaultOffset            = 1

	maxBatchSize = 1 << 16
	maxImageSide = 8192
	maxSmall     = 1 << 20 // samples_per_episode, window_shards, offset, stride
	maxNumFrames = 1024
	maxBatches   = 1 << 50
)

// MarshalJSON writes the config as loaded (info.json), which Parse reads
// back. A step-mode config leaves out pair_frames, a pair-mode key.
func (c Config) MarshalJSON() ([]byte, error) { return c.marshalBlock() }

// Line returns the line of a top-level key in the YAML, or of a key of the
// sample block written as a path (sample.action, sample.cameras.wrist,
// sample.cameras.wrist.steps); 0 if unknown.
func (c *Config) Line(key string) int { return c.lines[key] }

// Line returns the line of one of the dataset's keys (a slot of its
// cameras is cameras.<slot>), or of the entry when key is "" or absent.
func (d *DatasetConfig) Line(key string) int {
	if l, ok := d.lines[key]; ok {
		return l
	}
	return d.line
}

// Sampled reports whether the dataset takes part in the mix: a weight
// ≤ 0 drops it before anything is opened.
func (d *DatasetConfig) Sampled() bool { return d.Weight.Sampled() }

// PlanOffset is the offset the plan counts dataset d's sample units with
// (Offset.ValidStarts): d's offset in pair mode; in step mode a fixed
// offset of sample.drop_last, so that t ∈ [0, L−drop_last) — 0 when
// nothing is dropped, and every t of the episode is a unit.
func (c *Config) PlanOffset(d *DatasetConfig) Offset { return c.rules().PlanOffset(d) }

// FramesOf is the frame selection of dataset d's samples: the mix's
// pair_frames, stride, num_frames and samples_per_episode with d's offset.
// Pair mode only: step mode takes its frames from the sample block.
func (c *Config) FramesOf(d *DatasetConfig) Frames {
	return Frames{
		Mode:              c.PairFrames,
		Offset:            d.Offset,
		Stride:            c.Stride,
		N:                 c.NumFrames,
		SamplesPerEpisode: c.SamplesPerEpisode,
	}
}

// Frames is F, the frames of each sample. A valid config gives the same F
// for every dataset it samples. Pair mode only.
func (c *Config) Frames() int {
	for i := range c.Datasets {
		if d := &c.Datasets[i]; d.Sampled() {
			return c.FramesOf(d).Count()
		}
	}
	if c.PairFrames == FramesFixedN {
		return c.NumFrames
	}
	return 2
}

// Load reads and parses a config file; errors name the file.
func Load(file string) (*Config, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return c, nil
}

// versionDir matches a TFDS version directory: 0.1.0, 1.0.0.
var versionDir = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*$`)

// hfRevision matches the revision of an hf:// location (@v3.0 in
// hf://datasets/lerobot/pusht@v3.0/sub).
var hfRevision = regexp.MustCompile(`@[^/]*`)

// nameFromSource derives a dataset name from its source:
// gs://gresearch/robotics/bridge/0.1.0 → bridge,
// hf://datasets/lerobot/pusht@v3.0 → pusht.
func nameFromSource(src string) string {
	p := strings.TrimRight(strings.TrimPrefix(src, "gs://"), "/")
	if rest, ok := strings.CutPrefix(p, "hf://"); ok {
		// A revision is not part of the name.
		p = hfRevision.ReplaceAllString(rest, "")
	}
	base := path.Base(p)
	if versionDir.MatchString(base) {
		base = path.Base(path.Dir(p))
	}
	if base == "." || base == "/" || base == "" {
		return ""
	}
	return base
}
