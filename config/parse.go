package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Keys of a config and of a dataset entry, in the order the docs list them.
var (
	configKeys = []string{"seed", "batch_size", "image_size", "layout", "meta", "samples_per_episode",
		"pair_frames", "stride", "num_frames", "resize", "decode", "window_shards", "num_batches", "normalize", "sample", "augment", "datasets"}
	normalizeKeys = []string{"action", "state"}
	datasetKeys   = []string{"name", "source", "anonymous", "split", "val_split", "weight", "image_key",
		"offset", "language_key", "action_keys", "state_key", "robot", "cameras", "fps", "augment"}
)

// Parse reads a mix config: strict YAML (an unknown or repeated key is an
// error, with its line), defaults filled, and every check that needs no
// dataset metadata done. Errors are ConfigErrors naming the line, the
// dataset, the field and what is valid. Parse does no I/O.
func Parse(b []byte) (*Config, error) {
	p := &parser{}
	c, ok := p.parse(b)
	if ok {
		// Values that did not decode kept their defaults, so validating
		// adds only problems of their own.
		c.validate(p.add)
	}
	if len(p.errs) > 0 {
		sort.SliceStable(p.errs, func(i, j int) bool { return p.errs[i].Line < p.errs[j].Line })
		return nil, p.errs
	}
	return c, nil
}

// parser decodes one document, collecting its problems.
type parser struct {
	problems
	// blocksRead are the registered kinds' keys whose value was read.
	blocksRead map[string]bool
}

// parse decodes the YAML into a Config with defaults; ok reports that the
// document was a mapping, so that validating it makes sense.
func (p *parser) parse(b []byte) (c *Config, ok bool) {
	c = &Config{
		BatchSize:         DefaultBatchSize,
		ImageSize:         [2]int{DefaultImageSize, DefaultImageSize},
		SamplesPerEpisode: DefaultSamplesPerEpisode,
		WindowShards:      DefaultWindowShards,
		lines:             make(map[string]int),
		// layout, meta, pair_frames, resize and decode: each enumeration's zero
		// value is its default.
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.add(0, "", "", "the config is empty: it needs at least `datasets`")
		} else {
			p.add(0, "", "", "%s", syntaxError(b, err))
		}
		return c, false
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		p.add(next.Line, "", "", "the config holds more than one YAML document (remove the `---`)")
		return c, false
	}
	root := resolve(&doc)
	if root != nil && root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = resolve(root.Content[0])
	}
	if root == nil || root.Kind != yaml.MappingNode {
		p.add(lineOf(root), "", "", "the config must be a mapping of keys (seed, batch_size, …, datasets)")
		return c, false
	}
	p.mapping(root, "", topKeys(), c.lines, func(key string, v *yaml.Node) {
		f := field{p: p, key: key, v: v, line: c.lines[key]}
		switch key {
		case "seed":
			f.uint64(&c.Seed)
		case "batch_size":
			f.int(&c.BatchSize)
		case "image_size":
			f.pair(&c.ImageSize, false)
		case "layout":
			enum(f, &c.Layout, ParseLayout)
		case "meta":
			enum(f, &c.Meta, ParseMetaMode)
		case "samples_per_episode":
			f.int(&c.SamplesPerEpisode)
		case "pair_frames":
			enum(f, &c.PairFrames, ParseFrameMode)
		case "stride":
			f.int(&c.Stride)
		case "num_frames":
			f.int(&c.NumFrames)
		case "resize":
			enum(f, &c.Resize, ParseResizeMode)
		case "decode":
			enum(f, &c.Decode, ParseDecodeMode)
		case "window_shards":
			f.int(&c.WindowShards)
		case "num_batches":
			f.int64(&c.NumBatches)
		case "normalize":
			if v.Kind != yaml.MappingNode {
				f.bad("must be a mapping such as {action: q01_q99}")
				return
			}
			p.mapping(v, "", normalizeKeys, map[string]int{}, func(key string, v *yaml.Node) {
				g := field{p: p, key: "normalize." + key, v: v, line: v.Line}
				if key == "action" {
					enum(g, &c.Normalize.Action, ParseNormMode)
				} else {
					enum(g, &c.Normalize.State, ParseNormMode)
				}
			})
		case "sample":
			p.sample(c, v)
		case "augment":
			c.Augment = p.augmentBlock("", "augment", v, c.lines, true)
		case "datasets":
			p.datasets(c, v)
		default:
			p.kindBlock(c, blockKind(key), v)
		}
	})
	if _, ok := c.lines["datasets"]; !ok {
		p.add(0, "", "datasets", "required: the list of datasets to mix")
		return c, false
	}
	p.sampleDefaults(c)
	p.emptyBlocks(c)
	return c, true
}

func (p *parser) datasets(c *Config, v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		p.add(v.Line, "", "datasets", "must be a list of datasets (- name: …, source: …)")
		return
	}
	for i, n := range v.Content {
		n = resolve(n)
		id := fmt.Sprintf("datasets[%d]", i)
		d := DatasetConfig{
			Split:  DefaultSplit,
			Weight: NewWeight(1, 1),
			Offset: Offset{DefaultOffset, DefaultOffset},
			line:   lineOf(n),
			lines:  make(map[string]int),
		}
		if n == nil || n.Kind != yaml.MappingNode {
			p.add(lineOf(n), id, "", "must be a mapping (name: …, source: …, weight: …)")
			continue
		}
		// The name first, so that messages about other keys can use it.
		for j := 0; j+1 < len(n.Content); j += 2 {
			if k := resolve(n.Content[j]); k != nil && k.Value == "name" {
				if v := resolve(n.Content[j+1]); v != nil && v.Kind == yaml.ScalarNode && v.Tag != "!!null" && v.Value != "" {
					id = v.Value
				}
			}
		}
		p.mapping(n, id, datasetKeys, d.lines, func(key string, v *yaml.Node) {
			f := field{p: p, key: key, v: v, dataset: id, line: d.lines[key]}
			switch key {
			case "name":
				f.str(&d.Name)
			case "source":
				f.str(&d.Source)
			case "anonymous":
				f.bool(&d.Anonymous)
			case "split":
				f.str(&d.Split)
			case "val_split":
				f.str(&d.ValSplit)
			case "weight":
				f.weight(&d.Weight)
			case "image_key":
				f.str(&d.ImageKey)
			case "offset":
				var o [2]int
				if f.pair(&o, true) {
					d.Offset = Offset{o[0], o[1]}
				}
			case "language_key":
				f.str(&d.LanguageKey)
			case "action_keys":
				f.strs(&d.ActionKeys)
			case "state_key":
				f.str(&d.StateKey)
			case "robot":
				f.str(&d.Robot)
			case "cameras":
				p.cameras(&d, id, v)
			case "fps":
				f.float(&d.FPS)
			case "augment":
				d.Augment = p.augmentBlock(id, "augment", v, d.lines, false)
			}
		})
		if _, named := d.lines["name"]; !named && d.Source != "" {
			d.Name = nameFromSource(d.Source)
		}
		c.Datasets = append(c.Datasets, d)
	}
}

// mapping walks a YAML mapping, refusing unknown and repeated keys and
// recording each key's line.
func (p *parser) mapping(n *yaml.Node, dataset string, valid []string, lines map[string]int, each func(key string, v *yaml.Node)) {
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := resolve(n.Content[j]), resolve(n.Content[j+1])
		if k == nil || v == nil {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			p.add(k.Line, dataset, "", "keys must be plain names")
			continue
		}
		key := k.Value
		if key == "<<" {
			p.add(k.Line, dataset, key, "merge keys are not supported; write the keys out (aliases to whole values are fine)")
			continue
		}
		if !contains(valid, key) {
			msg := fmt.Sprintf("unknown key %q", key)
			if s := closest(key, valid, 3); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
			p.add(k.Line, dataset, "", "%s; valid keys: %s", msg, strings.Join(valid, ", "))
			continue
		}
		if prev, dup := lines[key]; dup {
			p.add(k.Line, dataset, key, "given twice (first on line %d)", prev)
			continue
		}
		lines[key] = k.Line
		if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
			continue // `key:` with no value: the default
		}
		each(key, v)
	}
}

// yamlLine is the "line N: " the YAML decoder puts before its message.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// syntaxError words the YAML decoder's error for the config's text b. The
// decoder names the line where the block holding the problem starts, not
// the problem's (a key indented one space less than its siblings on line
// 7 reads "line 3: did not find expected '-' indicator", line 3 holding
// `datasets:`): the first line that makes the text up to it fail with the
// same problem is named instead, with the block's line beside it.
func syntaxError(b []byte, err error) string {
	msg := err.Error()
	m := yamlLine.FindStringSubmatch(msg)
	if m == nil {
		return strings.TrimPrefix(msg, "yaml: ")
	}
	problem := msg[len(m[0]):]
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) > 5000 {
		return strings.TrimPrefix(msg, "yaml: ")
	}
	start, _ := strconv.Atoi(m[1])
	for n := start; n <= len(lines); n++ {
		var doc yaml.Node
		perr := yaml.Unmarshal(bytes.Join(lines[:n], nil), &doc)
		if perr == nil {
			continue
		}
		pm := yamlLine.FindStringSubmatch(perr.Error())
		if pm == nil || perr.Error()[len(pm[0]):] != problem {
			break // a cut the text itself does not have: keep the decoder's line
		}
		if n == start {
			break
		}
		return fmt.Sprintf("line %d: %s (in the block that starts on line %d: check the indentation of line %d)", n, problem, start, n)
	}
	return strings.TrimPrefix(msg, "yaml: ")
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

// field decodes one value, reporting what it should have been.
type field struct {
	p       *parser
	key     string
	dataset string
	line    int // the key's
	v       *yaml.Node
}

func (f field) bad(format string, args ...any) bool {
	got := f.v.Value
	switch f.v.Kind {
	case yaml.SequenceNode:
		got = "a list"
	case yaml.MappingNode:
		got = "a mapping"
	default:
		got = fmt.Sprintf("%q", got)
	}
	f.p.add(f.v.Line, f.dataset, f.key, "%s, got %s", fmt.Sprintf(format, args...), got)
	return false
}

func (f field) scalar() bool { return f.v.Kind == yaml.ScalarNode }

// int64 reads an integer; magnitudes beyond 2^60 are refused here so that
// later checks never overflow.
func (f field) int64(dst *int64) bool {
	var v int64
	if !f.scalar() || f.v.Tag != "!!int" || f.v.Decode(&v) != nil || v < -1<<60 || v > 1<<60 {
		return f.bad("must be an integer")
	}
	*dst = v
	return true
}

func (f field) int(dst *int) bool {
	var v int64
	if !f.int64(&v) {
		return false
	}
	if v < -1<<31 || v > 1<<31 {
		return f.bad("is out of range")
	}
	*dst = int(v)
	return true
}

func (f field) uint64(dst *uint64) bool {
	var v uint64
	if !f.scalar() || f.v.Tag != "!!int" || f.v.Decode(&v) != nil {
		return f.bad("must be an integer in 0..%d", uint64(1<<64-1))
	}
	*dst = v
	return true
}

func (f field) bool(dst *bool) bool {
	if !f.scalar() || f.v.Tag != "!!bool" || f.v.Decode(dst) != nil {
		return f.bad("must be true or false")
	}
	return true
}

func (f field) str(dst *string) bool {
	if !f.scalar() || f.v.Tag == "!!bool" {
		return f.bad("must be a string")
	}
	*dst = f.v.Value
	return true
}

// enum reads one of an enumeration's names; an unknown name is reported
// on the key's line with the valid choices.
func enum[T ~uint8](f field, dst *T, parse func(string) (T, error)) bool {
	var s string
	if !f.str(&s) {
		return false
	}
	v, err := parse(s)
	if err != nil {
		f.p.add(f.line, f.dataset, f.key, "%s", err.(*ConfigError).Msg)
		return false
	}
	*dst = v
	return true
}

func (f field) strs(dst *[]string) bool {
	if f.scalar() && f.v.Tag != "!!bool" {
		*dst = []string{f.v.Value}
		return true
	}
	if f.v.Kind != yaml.SequenceNode {
		return f.bad("must be a list of feature keys")
	}
	out := make([]string, 0, len(f.v.Content))
	for _, e := range f.v.Content {
		e = resolve(e)
		if e == nil || e.Kind != yaml.ScalarNode || e.Tag == "!!null" || e.Tag == "!!bool" {
			return f.bad("must be a list of feature keys")
		}
		out = append(out, e.Value)
	}
	*dst = out
	return true
}

func (f field) weight(dst *Weight) bool {
	if !f.scalar() || (f.v.Tag != "!!int" && f.v.Tag != "!!float" && f.v.Tag != "!!str") {
		return f.bad(`must be a number (1.0, 0.25, 3/4) or "proportionate"`)
	}
	w, err := ParseWeight(f.v.Value)
	if err != nil {
		return f.bad("%s", err.Error())
	}
	*dst = w
	return true
}

// pair reads [a, b]; with single, a lone integer a means [a, a].
func (f field) pair(dst *[2]int, single bool) bool {
	what := "must be a list of two integers [height, width]"
	if single {
		what = "must be an integer or a range [min, max]"
	}
	if single && f.scalar() {
		var v int
		if f.v.Tag != "!!int" || f.v.Decode(&v) != nil {
			return f.bad("%s", what)
		}
		*dst = [2]int{v, v}
		return true
	}
	if f.v.Kind != yaml.SequenceNode || len(f.v.Content) != 2 {
		return f.bad("%s", what)
	}
	for i, e := range f.v.Content {
		e = resolve(e)
		var v int64
		if e == nil || e.Kind != yaml.ScalarNode || e.Tag != "!!int" || e.Decode(&v) != nil || v < -1<<40 || v > 1<<40 {
			return f.bad("%s", what)
		}
		dst[i] = int(v)
	}
	return true
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// closest returns the candidate nearest to s by edit distance, if within
// max edits.
func closest(s string, candidates []string, max int) string {
	best, bestD := "", max+1
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// nearest returns up to n feature keys that are most likely meant by s:
// the features under s (s names a group, such as steps/action), then keys
// with the same last component (steps/state → steps/observation/state),
// then keys whose last component holds s's or is held by it, each class by
// edit distance.
func nearest(s string, candidates []string, n int) []string {
	last := s[strings.LastIndexByte(s, '/')+1:]
	class := func(c string) int {
		cl := c[strings.LastIndexByte(c, '/')+1:]
		switch {
		case strings.HasPrefix(c, s+"/"):
			return 0
		case cl == last:
			return 1
		case last != "" && (strings.Contains(cl, last) || strings.Contains(last, cl)):
			return 2
		}
		return 3
	}
	type cd struct {
		c     string
		cl, d int
	}
	all := make([]cd, len(candidates))
	for i, c := range candidates {
		all[i] = cd{c, class(c), editDistance(s, c)}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].cl != all[j].cl {
			return all[i].cl < all[j].cl
		}
		return all[i].d < all[j].d
	})
	var out []string
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, all[i].c)
	}
	return out
}

// editDistance is the Levenshtein distance of two strings, in bytes.
func editDistance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
