package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Keys of the sample block.
var (
	sampleKeys = []string{"drop_last", "cameras", "state", "action"}
	slotKeys   = []string{"size", "steps", "seconds", "augment", "decode"}
	// slotListKeys are those of a slot in the list form of
	// sample.cameras, the one the config as loaded (info.json) writes.
	slotListKeys = []string{"name", "size", "deltas", "augment", "decode"}
	deltaKeys    = []string{"steps", "seconds"}
)

// stepsForm says what a steps value may be.
const stepsForm = `must be a list of integers or a slice "start:stop[:step]" (stop excluded)`

// sample reads the sample block. Its keys' lines go into c.lines as
// sample.<key>, sample.cameras.<slot>, sample.cameras.<slot>.size and
// <deltas>.steps or <deltas>.seconds; sampleDefaults reads them back.
func (p *parser) sample(c *Config, v *yaml.Node) {
	s := &StepSpec{}
	c.Steps = s
	if v.Kind != yaml.MappingNode {
		field{p: p, key: "sample", v: v}.bad(`must be a mapping such as {cameras: {primary: {steps: [0]}}, action: {steps: "0:50"}}`)
		return
	}
	lines := make(map[string]int)
	p.mapping(v, "", sampleKeys, lines, func(key string, v *yaml.Node) {
		switch key {
		case "drop_last":
			field{p: p, key: "sample.drop_last", v: v, line: lines[key]}.int(&s.DropLast)
		case "cameras":
			p.slots(c, v)
		case "state":
			p.deltas(c, "sample.state", v, &s.State)
		case "action":
			p.deltas(c, "sample.action", v, &s.Action)
		}
	})
	for k, l := range lines {
		c.lines["sample."+k] = l
	}
}

// slots reads sample.cameras: a mapping of slot names to {size, steps or
// seconds}, or the list of {name, size, deltas} that JSON gives back.
func (p *parser) slots(c *Config, v *yaml.Node) {
	s := c.Steps
	seen := make(map[string]int)
	fresh := func(name string, line int) bool {
		if prev, dup := seen[name]; dup {
			p.add(line, "", "sample.cameras", "slot %q given twice (first on line %d)", name, prev)
			return false
		}
		seen[name] = line
		c.lines["sample.cameras."+name] = line
		return true
	}
	switch v.Kind {
	case yaml.MappingNode:
		for j := 0; j+1 < len(v.Content); j += 2 {
			k, sv := resolve(v.Content[j]), resolve(v.Content[j+1])
			if k == nil || sv == nil {
				continue
			}
			if k.Kind != yaml.ScalarNode || k.Value == "<<" {
				p.add(k.Line, "", "sample.cameras", "slot names must be plain names (merge keys are not supported)")
				continue
			}
			if !fresh(k.Value, k.Line) {
				continue
			}
			slot := CameraSlot{Name: k.Value}
			prefix := "sample.cameras." + slot.Name
			switch {
			case sv.Kind == yaml.ScalarNode && sv.Tag == "!!null":
				// `primary:`: every default
			case sv.Kind != yaml.MappingNode:
				field{p: p, key: prefix, v: sv}.bad("must be a mapping such as {size: [224, 224], steps: [-1, 0]}")
			default:
				p.mapping(sv, "", slotKeys, make(map[string]int), func(key string, v *yaml.Node) {
					switch key {
					case "size":
						p.slotSize(c, prefix, v, &slot.Size)
					case "augment":
						slot.Augment = p.augmentBlock("", prefix+".augment", v, c.lines, false)
					case "decode":
						p.slotDecode(c, prefix, v, &slot.Decode)
					default:
						p.delta(c, prefix, key, v, &slot.Deltas)
					}
				})
			}
			s.Cameras = append(s.Cameras, slot)
		}
	case yaml.SequenceNode:
		for _, e := range v.Content {
			e = resolve(e)
			if e == nil || e.Kind != yaml.MappingNode {
				p.add(lineOf(e), "", "sample.cameras", "each slot of the list must be a mapping {name: …, size: [h, w], deltas: {steps: […]}}")
				continue
			}
			var slot CameraSlot
			for j := 0; j+1 < len(e.Content); j += 2 {
				if k := resolve(e.Content[j]); k != nil && k.Value == "name" {
					if n := resolve(e.Content[j+1]); n != nil && n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
						slot.Name = n.Value
					}
				}
			}
			if slot.Name == "" {
				p.add(e.Line, "", "sample.cameras", "each slot of the list needs a name")
				continue
			}
			if !fresh(slot.Name, e.Line) {
				continue
			}
			prefix := "sample.cameras." + slot.Name
			p.mapping(e, "", slotListKeys, make(map[string]int), func(key string, v *yaml.Node) {
				switch key {
				case "size":
					p.slotSize(c, prefix, v, &slot.Size)
				case "deltas":
					p.deltas(c, prefix, v, &slot.Deltas)
				case "augment":
					slot.Augment = p.augmentBlock("", prefix+".augment", v, c.lines, false)
				case "decode":
					p.slotDecode(c, prefix, v, &slot.Decode)
				}
			})
			s.Cameras = append(s.Cameras, slot)
		}
	default:
		field{p: p, key: "sample.cameras", v: v}.bad("must be a mapping of camera slots such as {primary: {size: [224, 224]}, wrist: {size: [128, 128]}}")
	}
}

// slotDecode reads a slot's decode mode; its line marks it as given.
func (p *parser) slotDecode(c *Config, prefix string, v *yaml.Node, dst **DecodeMode) {
	var m DecodeMode
	if enum(field{p: p, key: prefix + ".decode", v: v, line: v.Line}, &m, ParseDecodeMode) {
		*dst = &m
		c.lines[prefix+".decode"] = v.Line
	}
}

// slotSize reads a slot's size; its line marks it as given.
func (p *parser) slotSize(c *Config, prefix string, v *yaml.Node, dst *[2]int) {
	if (field{p: p, key: prefix + ".size", v: v, line: v.Line}).pair(dst, false) {
		c.lines[prefix+".size"] = v.Line
	}
}

// deltas reads {steps: …} or {seconds: …} for the deltas at prefix
// (sample.state, sample.cameras.wrist).
func (p *parser) deltas(c *Config, prefix string, v *yaml.Node, dst *Deltas) {
	if v.Kind != yaml.MappingNode {
		field{p: p, key: prefix, v: v}.bad(`must be a mapping such as {steps: [-1, 0]}, {steps: "0:50"} or {seconds: [0.0, 0.1]}`)
		return
	}
	p.mapping(v, "", deltaKeys, make(map[string]int), func(key string, v *yaml.Node) {
		p.delta(c, prefix, key, v, dst)
	})
}

// delta reads steps or seconds into dst; its line (prefix.steps or
// prefix.seconds) marks it as given. Giving both is an error, reported on
// the second.
func (p *parser) delta(c *Config, prefix, key string, v *yaml.Node, dst *Deltas) {
	other := "seconds"
	if key == "seconds" {
		other = "steps"
	}
	if l, ok := c.lines[prefix+"."+other]; ok {
		p.add(v.Line, "", prefix, "give its deltas as steps or as seconds, not both (%s on line %d)", other, l)
		return
	}
	f := field{p: p, key: prefix + "." + key, v: v, line: v.Line}
	ok := false
	if key == "steps" {
		ok = f.steps(&dst.Steps)
	} else {
		ok = f.seconds(&dst.Seconds)
	}
	if ok {
		c.lines[prefix+"."+key] = v.Line
	}
}

// steps reads a steps value: a list of integers, one integer, or a slice
// string (ParseSteps).
func (f field) steps(dst *[]int) bool {
	one := func(n *yaml.Node) (int, bool) {
		var v int64
		if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil || v < -1<<40 || v > 1<<40 {
			return 0, false
		}
		return int(v), true
	}
	switch {
	case f.scalar() && f.v.Tag == "!!int":
		v, ok := one(f.v)
		if !ok {
			return f.bad("%s", stepsForm)
		}
		*dst = []int{v}
	case f.scalar() && f.v.Tag == "!!str":
		s, err := ParseSteps(f.v.Value)
		if err != nil {
			f.p.add(f.v.Line, f.dataset, f.key, "%v", err)
			return false
		}
		*dst = s
	case f.v.Kind == yaml.SequenceNode:
		out := make([]int, 0, len(f.v.Content))
		for _, e := range f.v.Content {
			v, ok := one(resolve(e))
			if !ok {
				return f.bad("%s", stepsForm)
			}
			out = append(out, v)
		}
		*dst = out
	default:
		return f.bad("%s", stepsForm)
	}
	return true
}

// seconds reads a seconds value: a list of numbers, or one number.
func (f field) seconds(dst *[]float64) bool {
	one := func(n *yaml.Node) (float64, bool) {
		var v float64
		if n == nil || n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&v) != nil {
			return 0, false
		}
		if v == 0 {
			v = 0 // -0 is 0, so that the JSON round trip is exact
		}
		return v, true
	}
	const form = "must be a list of numbers (seconds, such as [-0.1, 0.0])"
	if f.scalar() {
		v, ok := one(f.v)
		if !ok {
			return f.bad(form)
		}
		*dst = []float64{v}
		return true
	}
	if f.v.Kind != yaml.SequenceNode {
		return f.bad(form)
	}
	out := make([]float64, 0, len(f.v.Content))
	for _, e := range f.v.Content {
		v, ok := one(resolve(e))
		if !ok {
			return f.bad(form)
		}
		out = append(out, v)
	}
	*dst = out
	return true
}

// float reads a number.
func (f field) float(dst *float64) bool {
	var v float64
	if !f.scalar() || (f.v.Tag != "!!int" && f.v.Tag != "!!float") || f.v.Decode(&v) != nil {
		return f.bad("must be a number")
	}
	*dst = v
	return true
}

// ParseSteps reads a Python slice "start:stop[:step]" as the steps of
// range(start, stop, step): start and stop are required (negative values
// are steps before t, not counted from an end), step defaults to 1 and
// must not be 0, stop is excluded. "0:50" is 0…49, "-1:1" is [-1, 0],
// "0:16:4" is [0, 4, 8, 12]. The slice must hold 1 to 4096 steps, each
// within ±1048576.
func ParseSteps(s string) ([]int, error) {
	bad := func(format string, args ...any) ([]int, error) {
		return nil, fmt.Errorf("%q: %s; steps %s", s, fmt.Sprintf(format, args...), stepsForm)
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return bad("not a slice")
	}
	var v [3]int64
	v[2] = 1
	for i, t := range parts {
		t = strings.TrimSpace(t)
		if t == "" && i == 2 {
			continue
		}
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return bad("%q is not an integer", t)
		}
		if n < -maxSmall || n > maxSmall {
			return bad("%d is beyond ±%d", n, maxSmall)
		}
		v[i] = n
	}
	start, stop, step := v[0], v[1], v[2]
	if step == 0 {
		return bad("the step must not be 0")
	}
	n := int64(0)
	if step > 0 && stop > start {
		n = (stop - start + step - 1) / step
	} else if step < 0 && stop < start {
		n = (start - stop - step - 1) / -step
	}
	switch {
	case n == 0:
		return bad("the slice is empty (stop is excluded, and must lie past start in the step's direction)")
	case n > maxDeltas:
		return bad("%d steps, more than %d", n, maxDeltas)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = int(start + int64(i)*step)
	}
	return out, nil
}

// cameras reads a dataset's cameras: a mapping of slot names to its image
// keys. Each slot's line is kept as cameras.<slot>.
func (p *parser) cameras(d *DatasetConfig, id string, v *yaml.Node) {
	if v.Kind != yaml.MappingNode {
		field{p: p, key: "cameras", v: v, dataset: id}.bad("must be a mapping of camera slots to image keys, such as {primary: observation.images.top}")
		return
	}
	m := make(map[string]string, len(v.Content)/2)
	for j := 0; j+1 < len(v.Content); j += 2 {
		k, kv := resolve(v.Content[j]), resolve(v.Content[j+1])
		if k == nil || kv == nil {
			continue
		}
		if k.Kind != yaml.ScalarNode || k.Value == "<<" {
			p.add(k.Line, id, "cameras", "slot names must be plain names (merge keys are not supported)")
			continue
		}
		if prev, dup := d.lines["cameras."+k.Value]; dup {
			p.add(k.Line, id, "cameras", "slot %q given twice (first on line %d)", k.Value, prev)
			continue
		}
		d.lines["cameras."+k.Value] = k.Line
		var key string
		if (field{p: p, key: "cameras." + k.Value, v: kv, dataset: id, line: k.Line}).str(&key) {
			if kv.Tag == "!!null" {
				p.add(k.Line, id, "cameras", "slot %s: no image key (leave the slot out for zeros with image_mask 0)", k.Value)
				continue
			}
			m[k.Value] = key
		}
	}
	d.Cameras = m
}

// sampleDefaults fills what the sample block leaves out, once every key is
// read (a slot's size defaults to image_size, which may come later): a
// slot's size, deltas [0], and no offset in step mode.
func (p *parser) sampleDefaults(c *Config) {
	s := c.Steps
	if s == nil {
		if l, ok := c.lines["sample"]; ok {
			p.add(l, "", "sample", "has no value: write `sample: {}` for step samples with every default, or leave the key out for frame pairs")
		}
		return
	}
	deltas := func(prefix string, d *Deltas) {
		_, steps := c.lines[prefix+".steps"]
		_, seconds := c.lines[prefix+".seconds"]
		if !steps && !seconds && d.Len() == 0 {
			d.Steps = []int{0}
		}
	}
	for i := range s.Cameras {
		slot := &s.Cameras[i]
		prefix := "sample.cameras." + slot.Name
		if _, ok := c.lines[prefix+".size"]; !ok {
			slot.Size = c.ImageSize
		}
		deltas(prefix, &slot.Deltas)
	}
	deltas("sample.state", &s.State)
	deltas("sample.action", &s.Action)
	for i := range c.Datasets {
		if d := &c.Datasets[i]; !hasKey(d.lines, "offset") {
			d.Offset = Offset{}
		}
	}
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

// finite reports whether x is a number other than ±Inf and NaN.
func finite(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) }
