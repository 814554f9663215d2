package tfds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// DefaultTemplate is the shard file name template of a split whose
// dataset_info.json entry names none (datasets written by older TFDS), and
// the template TFDS itself writes by default.
const DefaultTemplate = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"

// DefaultFileFormat is the file format of a dataset whose dataset_info.json
// names none.
const DefaultFileFormat = "tfrecord"

// DatasetInfo is what oxefs needs from a dataset_info.json.
type DatasetInfo struct {
	Name       string // builder name, the {DATASET} of shard names: "bridge"
	Version    string // "0.1.0"
	ConfigName string // "" unless the builder has configs
	FileFormat string // "tfrecord" (DefaultFileFormat) unless the file says otherwise
	Splits     []SplitInfo
}

// SplitInfo is one split of a dataset. Treat it as read-only: Locate and
// NumExamples use offsets computed from ShardLengths when it was parsed.
type SplitInfo struct {
	Name         string
	NumBytes     int64   // total size of the split's shards, 0 when unknown
	ShardLengths []int64 // examples (episodes) in each shard, in shard order
	// FilepathTemplate names the shard files relative to the dataset
	// directory; DefaultTemplate when dataset_info.json has none.
	FilepathTemplate string

	// offsets[i] is the number of examples in shards before shard i;
	// len(offsets) == len(ShardLengths)+1. Nil for a SplitInfo not made by
	// ParseDatasetInfo.
	offsets []int64
}

// infoJSON mirrors the fields of TFDS's DatasetInfo proto that oxefs reads,
// as json_format.MessageToJson writes them (lowerCamelCase names, int64 as
// strings). Unknown fields are ignored, as TFDS ignores them.
type infoJSON struct {
	Name       string      `json:"name"`
	Version    string      `json:"version"`
	ConfigName string      `json:"configName"`
	FileFormat string      `json:"fileFormat"`
	Splits     []splitJSON `json:"splits"`
}

type splitJSON struct {
	Name             string    `json:"name"`
	NumBytes         pbInt64   `json:"numBytes"`
	ShardLengths     []pbInt64 `json:"shardLengths"`
	FilepathTemplate string    `json:"filepathTemplate"`
}

// pbInt64 is a proto-JSON int64: a JSON string of an integer ("12", as TFDS
// writes it) or a JSON number with an integral value.
type pbInt64 int64

func (p *pbInt64) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if strings.TrimSpace(s) != s || s == "" {
			return fmt.Errorf("bad int64 %q", s)
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		*p = pbInt64(n)
		return nil
	}
	// Numbers such as 1e3 or 12.0 are integers too, as long as they fit.
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return fmt.Errorf("bad int64 %s", b)
	}
	*p = pbInt64(f)
	return nil
}

// ParseDatasetInfo parses the bytes of a dataset_info.json. It checks what
// TFDS checks when it loads the file (split names are unique and hold a
// letter or digit) plus what oxefs relies on: shard lengths are not negative
// and their sum fits an int64, and every filepathTemplate expands (known
// variables, balanced braces).
func ParseDatasetInfo(b []byte) (*DatasetInfo, error) {
	var j infoJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("dataset_info.json: %w", err)
	}
	d := &DatasetInfo{
		Name:       j.Name,
		Version:    j.Version,
		ConfigName: j.ConfigName,
		FileFormat: j.FileFormat,
		Splits:     make([]SplitInfo, 0, len(j.Splits)),
	}
	if d.FileFormat == "" {
		d.FileFormat = DefaultFileFormat
	}
	seen := make(map[string]bool, len(j.Splits))
	for _, sj := range j.Splits {
		s := SplitInfo{
			Name:             sj.Name,
			NumBytes:         int64(sj.NumBytes),
			ShardLengths:     make([]int64, len(sj.ShardLengths)),
			FilepathTemplate: sj.FilepathTemplate,
		}
		if s.FilepathTemplate == "" {
			s.FilepathTemplate = DefaultTemplate
		}
		if err := checkSplitName(s.Name); err != nil {
			return nil, fmt.Errorf("dataset_info.json: %w", err)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("dataset_info.json: split %q listed twice", s.Name)
		}
		seen[s.Name] = true
		for i, n := range sj.ShardLengths {
			s.ShardLengths[i] = int64(n)
		}
		offsets, err := shardOffsets(s.ShardLengths)
		if err != nil {
			return nil, fmt.Errorf("dataset_info.json: split %s: %w", s.Name, err)
		}
		s.offsets = offsets
		// Expand one name now so that a bad template fails at load, not at
		// the first read. The dataset name may be empty here; ShardNames
		// reports that when a template needs it.
		name := d.Name
		if name == "" {
			name = "dataset"
		}
		if _, err := shardName(s.FilepathTemplate, name, s.Name, d.FileFormat, 0, max(len(s.ShardLengths), 1)); err != nil {
			return nil, fmt.Errorf("dataset_info.json: split %s: %w", s.Name, err)
		}
		d.Splits = append(d.Splits, s)
	}
	return d, nil
}

// checkSplitName applies TFDS's ShardedFileTemplate check: a split name is
// not empty and holds at least one alphanumeric character.
func checkSplitName(name string) error {
	if name == "" {
		return errors.New("a split has an empty name")
	}
	for _, r := range name {
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			return nil
		}
	}
	return fmt.Errorf("split name %q holds no letter or digit", name)
}

func shardOffsets(lengths []int64) ([]int64, error) {
	off := make([]int64, len(lengths)+1)
	for i, n := range lengths {
		if n < 0 {
			return nil, fmt.Errorf("shard %d has a negative length %d", i, n)
		}
		if off[i] > math.MaxInt64-n {
			return nil, fmt.Errorf("shard lengths overflow int64 at shard %d", i)
		}
		off[i+1] = off[i] + n
	}
	return off, nil
}

// Split returns the split with the given name.
func (d *DatasetInfo) Split(name string) (*SplitInfo, bool) {
	for i := range d.Splits {
		if d.Splits[i].Name == name {
			return &d.Splits[i], true
		}
	}
	return nil, false
}

// SplitNames lists the split names in dataset_info.json order.
func (d *DatasetInfo) SplitNames() []string {
	names := make([]string, len(d.Splits))
	for i, s := range d.Splits {
		names[i] = s.Name
	}
	return names
}

// NumExamples is the number of examples (episodes) in the split.
func (s *SplitInfo) NumExamples() int64 {
	off := s.offsetsOrCompute()
	return off[len(off)-1]
}

func (s *SplitInfo) offsetsOrCompute() []int64 {
	if len(s.offsets) == len(s.ShardLengths)+1 {
		return s.offsets
	}
	// A SplitInfo built by hand: negative lengths count as empty shards and
	// sums saturate, so the answers stay in range.
	off := make([]int64, len(s.ShardLengths)+1)
	for i, n := range s.ShardLengths {
		off[i+1] = off[i] + max(0, min(n, math.MaxInt64-off[i]))
	}
	return off
}

// Locate maps example i of the split, counted from 0 across all its shards
// in order, to the shard that holds it and its record index within that
// shard. Empty shards are skipped, as TFDS skips them. For i outside
// [0, NumExamples()) it returns (-1, -1).
func (s *SplitInfo) Locate(i int64) (shard int, record int64) {
	off := s.offsetsOrCompute()
	if i < 0 || i >= off[len(off)-1] {
		return -1, -1
	}
	// The first shard whose end lies beyond i; an empty shard ends where it
	// starts, so it is never chosen.
	k := sort.Search(len(s.ShardLengths), func(k int) bool { return off[k+1] > i })
	return k, i - off[k]
}

// ShardNames returns the file names of the split's shards, in shard order,
// relative to the dataset directory, exactly as TFDS names them: the
// filepathTemplate with {DATASET} the dataset name, {SPLIT} the split name,
// {FILEFORMAT} the file format, and {SHARD_INDEX}, {NUM_SHARDS} and
// {SHARD_X_OF_Y} ("00007-of-01024") zero-padded to 5 digits, or to the
// number of digits of the shard count when that is longer.
func (d *DatasetInfo) ShardNames(split string) ([]string, error) {
	s, ok := d.Split(split)
	if !ok {
		return nil, fmt.Errorf("dataset %s: no split %q (valid: %s)", d.Name, split, strings.Join(d.SplitNames(), ", "))
	}
	tmpl := s.FilepathTemplate
	if tmpl == "" {
		tmpl = DefaultTemplate
	}
	format := d.FileFormat
	if format == "" {
		format = DefaultFileFormat
	}
	names := make([]string, len(s.ShardLengths))
	for i := range names {
		name, err := shardName(tmpl, d.Name, s.Name, format, i, len(names))
		if err != nil {
			return nil, fmt.Errorf("dataset %s split %s: %w", d.Name, s.Name, err)
		}
		names[i] = name
	}
	return names, nil
}

// Template variables, as TFDS's naming.py defines them.
var templateVars = []string{"DATASET", "SPLIT", "FILEFORMAT", "SHARD_INDEX", "NUM_SHARDS", "SHARD_X_OF_Y"}

// shardName expands a filepathTemplate the way TFDS's
// ShardedFileTemplate.relative_filepath does: Python's str.format with the
// variables as keyword arguments, so "{{" and "}}" are literal braces.
// Format specs and conversions ("{SPLIT:>8}", "{SPLIT!r}") are refused
// rather than imitated; no TFDS dataset uses them.
func shardName(tmpl, dataset, split, format string, index, numShards int) (string, error) {
	// naming._num_digits_needed: max(len(str(num_shards)), 5).
	width := max(len(strconv.Itoa(numShards)), 5)
	idx := fmt.Sprintf("%0*d", width, index)
	num := fmt.Sprintf("%0*d", width, numShards)
	vars := map[string]string{
		"SPLIT":        split,
		"FILEFORMAT":   format,
		"SHARD_INDEX":  idx,
		"NUM_SHARDS":   num,
		"SHARD_X_OF_Y": idx + "-of-" + num,
	}
	if dataset != "" {
		vars["DATASET"] = dataset
	}
	var b strings.Builder
	for i := 0; i < len(tmpl); {
		c := tmpl[i]
		switch {
		case c == '{' && strings.HasPrefix(tmpl[i:], "{{"):
			b.WriteByte('{')
			i += 2
		case c == '}' && strings.HasPrefix(tmpl[i:], "}}"):
			b.WriteByte('}')
			i += 2
		case c == '}':
			return "", fmt.Errorf("filepathTemplate %q: single '}' at byte %d", tmpl, i)
		case c == '{':
			end := strings.IndexByte(tmpl[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("filepathTemplate %q: unclosed '{' at byte %d", tmpl, i)
			}
			field := tmpl[i+1 : i+end]
			if field == "" || strings.ContainsAny(field, ":!.[{") {
				return "", fmt.Errorf("filepathTemplate %q: unsupported field {%s} (use one of {%s})", tmpl, field, strings.Join(templateVars, "}, {"))
			}
			v, ok := vars[field]
			if !ok {
				if field == "DATASET" {
					return "", fmt.Errorf("filepathTemplate %q uses {DATASET} but dataset_info.json has no name", tmpl)
				}
				return "", fmt.Errorf("filepathTemplate %q: unknown variable {%s} (TFDS knows {%s})", tmpl, field, strings.Join(templateVars, "}, {"))
			}
			b.WriteString(v)
			i += end + 1
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}
