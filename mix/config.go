package mix

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path"
	"regexp"
	"strings"
)

// Config is a mix config: what to serve and how. Parse fills every default,
// so a Config from Parse is complete; JSON-encoding it gives the config as
// loaded (info.json), which Parse reads back to the same Config.
type Config struct {
	Seed              uint64          `json:"seed"`
	BatchSize         int             `json:"batch_size"`
	ImageSize         [2]int          `json:"image_size"` // [height, width]
	Layout            string          `json:"layout"`
	Meta              string          `json:"meta"`
	SamplesPerEpisode int             `json:"samples_per_episode"`
	PairFrames        string          `json:"pair_frames"`
	Stride            int             `json:"stride,omitempty"`     // pair_frames: stride
	NumFrames         int             `json:"num_frames,omitempty"` // pair_frames: fixed_n
	Resize            string          `json:"resize"`
	WindowShards      int             `json:"window_shards"`
	NumBatches        int64           `json:"num_batches,omitempty"` // 0: one pass over the sample units
	Datasets          []DatasetConfig `json:"datasets"`

	lines map[string]int // line of each top-level key
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
	Offset      Offset   `json:"offset"`
	LanguageKey string   `json:"language_key,omitempty"`
	ActionKeys  []string `json:"action_keys,omitempty"`
	StateKey    string   `json:"state_key,omitempty"`
	Robot       string   `json:"robot,omitempty"`

	line  int            // line of the entry
	lines map[string]int // line of each key
}

// Offset is a dataset's frame offset: a fixed value (Min == Max) or a range
// [Min, Max] drawn per sample.
type Offset struct{ Min, Max int }

// MarshalJSON writes an int or [min, max].
func (o Offset) MarshalJSON() ([]byte, error) {
	if o.Min == o.Max {
		return json.Marshal(o.Min)
	}
	return json.Marshal([2]int{o.Min, o.Max})
}

// Choices of the enumerated fields; the first is the default.
var (
	Layouts    = []string{"BFHWC", "BCFHW"}
	MetaModes  = []string{"full", "dataset", "none"}
	PairModes  = []string{"endpoints", "all", "stride", "fixed_n"}
	ResizeMode = []string{"squash", "crop", "pad"}
)

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

// Line returns the line of a top-level key in the YAML, 0 if unknown.
func (c *Config) Line(key string) int { return c.lines[key] }

// Line returns the line of one of the dataset's keys, or of the entry when
// key is "" or absent.
func (d *DatasetConfig) Line(key string) int {
	if l, ok := d.lines[key]; ok {
		return l
	}
	return d.line
}

// Sampled reports whether the dataset takes part in the mix: a weight
// ≤ 0 drops it before anything is opened.
func (d *DatasetConfig) Sampled() bool { return d.Weight.Sampled() }

// Frames is F, the frames of each sample: 2 for endpoints, offset+1 for
// all, offset/stride+1 for stride, num_frames for fixed_n. Parse ensures it
// is the same for every dataset.
func (c *Config) Frames() int {
	switch c.PairFrames {
	case "all", "stride":
		for _, d := range c.Datasets {
			if d.Sampled() {
				if c.PairFrames == "all" {
					return d.Offset.Min + 1
				}
				return d.Offset.Min/c.Stride + 1
			}
		}
	case "fixed_n":
		return c.NumFrames
	}
	return 2
}

// ConfigError is one problem with a config. Its message names the line,
// the dataset and the field, and says what is valid.
type ConfigError struct {
	Line    int    // 0 when not known
	Dataset string // the dataset's name, datasets[i] when it has none, "" for top-level fields
	Field   string
	Msg     string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	switch {
	case strings.HasPrefix(e.Dataset, "datasets["):
		b.WriteString(e.Dataset + ": ")
	case e.Dataset != "":
		fmt.Fprintf(&b, "dataset %q: ", e.Dataset)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ConfigErrors are all the problems found in one config.
type ConfigErrors []*ConfigError

func (es ConfigErrors) Error() string {
	if len(es) == 1 {
		return "mix config: " + es[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "mix config: %d problems:", len(es))
	for _, e := range es {
		b.WriteString("\n  " + e.Error())
	}
	return b.String()
}

// Unwrap makes errors.As find each *ConfigError.
func (es ConfigErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
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

// nameFromSource derives a dataset name from its source:
// gs://gresearch/robotics/bridge/0.1.0 → bridge.
func nameFromSource(src string) string {
	p := strings.TrimRight(strings.TrimPrefix(src, "gs://"), "/")
	base := path.Base(p)
	if versionDir.MatchString(base) {
		base = path.Base(path.Dir(p))
	}
	if base == "." || base == "/" || base == "" {
		return ""
	}
	return base
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

// validate checks what needs no dataset metadata, after defaults are set.
func (c *Config) validate(add func(line int, dataset, field, format string, args ...any)) {
	top := func(key, format string, args ...any) { add(c.lines[key], "", key, format, args...) }
	if c.BatchSize <= 0 || c.BatchSize > maxBatchSize {
		top("batch_size", "must be in 1..%d, got %d", maxBatchSize, c.BatchSize)
	}
	for _, s := range c.ImageSize {
		if s <= 0 || s > maxImageSide {
			top("image_size", "must be [height, width], each in 1..%d, got %v", maxImageSide, c.ImageSize)
			break
		}
	}
	choice := func(key, v string, valid []string) {
		for _, x := range valid {
			if v == x {
				return
			}
		}
		top(key, "%q is not one of %s", v, strings.Join(valid, ", "))
	}
	choice("layout", c.Layout, Layouts)
	choice("meta", c.Meta, MetaModes)
	choice("pair_frames", c.PairFrames, PairModes)
	choice("resize", c.Resize, ResizeMode)
	if c.SamplesPerEpisode < 0 || c.SamplesPerEpisode > maxSmall {
		top("samples_per_episode", "must be in 0..%d (0 = every valid pair), got %d", maxSmall, c.SamplesPerEpisode)
	}
	if c.WindowShards <= 0 || c.WindowShards > maxSmall {
		top("window_shards", "must be in 1..%d, got %d", maxSmall, c.WindowShards)
	}
	if _, set := c.lines["num_batches"]; c.NumBatches < 0 || c.NumBatches > maxBatches || (set && c.NumBatches == 0) {
		top("num_batches", "must be in 1..%d (leave it out for one pass over the sample units), got %d", int64(maxBatches), c.NumBatches)
	}
	if c.PairFrames != "stride" && c.Stride != 0 {
		top("stride", "is only used with pair_frames: stride (pair_frames is %s)", c.PairFrames)
	}
	if c.PairFrames != "fixed_n" && c.NumFrames != 0 {
		top("num_frames", "is only used with pair_frames: fixed_n (pair_frames is %s)", c.PairFrames)
	}
	switch c.PairFrames {
	case "stride":
		if c.Stride <= 0 || c.Stride > maxSmall {
			top("stride", "pair_frames: stride needs stride in 1..%d (frames t, t+stride, …, t+offset), got %d", maxSmall, c.Stride)
		}
	case "fixed_n":
		if c.NumFrames < 2 || c.NumFrames > maxNumFrames {
			top("num_frames", "pair_frames: fixed_n needs num_frames in 2..%d (frames evenly spaced over [t, t+offset]), got %d", maxNumFrames, c.NumFrames)
		}
	}

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
		o := d.Offset
		if o.Min < 1 || o.Max > maxSmall {
			field("offset", "must be ≥ 1 and ≤ %d, got %s", maxSmall, offsetText(o))
		} else if o.Min > o.Max {
			field("offset", "range [%d, %d] has min > max", o.Min, o.Max)
		}
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
			field("source", "required: a local TFDS dataset directory or gs://bucket/prefix/name/version")
		}
		switch c.PairFrames {
		case "all", "stride":
			what := "offset+1"
			if c.PairFrames == "stride" {
				what = "offset/stride+1"
			}
			switch {
			case o.Min != o.Max:
				field("offset", "pair_frames: %s needs one fixed offset (F = %s frames per sample is the same in every batch), got %s", c.PairFrames, what, offsetText(o))
			case c.PairFrames == "stride" && c.Stride > 0 && o.Min%c.Stride != 0:
				field("offset", "pair_frames: stride needs an offset that is a multiple of stride %d, got %d", c.Stride, o.Min)
			case first != nil && first.Offset != o:
				field("offset", "pair_frames: %s needs the same offset in every dataset (F = %s frames per sample): %s has %s, this one %s",
					c.PairFrames, what, first.Name, offsetText(first.Offset), offsetText(o))
			}
		case "fixed_n":
			if c.NumFrames >= 2 && o.Min < c.NumFrames-1 {
				field("offset", "pair_frames: fixed_n with num_frames %d needs offset ≥ %d so the frames are distinct, got %s", c.NumFrames, c.NumFrames-1, offsetText(o))
			}
		}
		if first == nil {
			first = d
		}
	}
	if sampled == 0 {
		top("datasets", "every dataset has weight ≤ 0, which drops it: nothing left to mix")
	}
	c.checkProportionate(add)
}

func offsetText(o Offset) string {
	if o.Min == o.Max {
		return fmt.Sprint(o.Min)
	}
	return fmt.Sprintf("[%d, %d]", o.Min, o.Max)
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
