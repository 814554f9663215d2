package splitspec

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/oxefs/oxefs/episode"
)

// Errors of Resolve match one of these with errors.Is; all are *SplitError.
var (
	// ErrInvalidSplit: the split string does not parse, or a slice is out of
	// range of its split.
	ErrInvalidSplit = errors.New("invalid split")
	// ErrUnknownSplit: the split string names a split the dataset lacks.
	ErrUnknownSplit = errors.New("unknown split")
	// ErrEmptySplit: the split string selects no episodes at all.
	ErrEmptySplit = errors.New("split selects no episodes")
)

// SplitError is an error about a split string. Its message names the string
// and says what exists.
type SplitError struct {
	Spec string // the split string as given
	Err  error  // ErrInvalidSplit, ErrUnknownSplit or ErrEmptySplit
	msg  string
}

func (e *SplitError) Error() string { return e.msg }
func (e *SplitError) Unwrap() error { return e.Err }

func splitErr(spec string, kind error, format string, args ...any) error {
	return &SplitError{Spec: spec, Err: kind, msg: fmt.Sprintf("split %q", spec) + fmt.Sprintf(format, args...)}
}

// Resolve turns a split string into the ordered episode ranges it selects
// from splits, exactly as tfds.load(split=...) does (core/splits.py in TFDS
// 4.9). splits are the dataset's, in its own order (dataset_info.json's for
// RLDS, info.json's for LeRobot), each with the episodes of its shards:
//
//   - A split string is a union of terms separated by "+", with any whitespace
//     around each "+". A term is NAME or NAME[SLICE]; NAME is letters,
//     digits, "_" and "-" (TFDS parses even a string that is exactly a
//     split's name, so a split named otherwise cannot be selected). Other
//     whitespace is an error, except for one trailing newline, which
//     Python's regular expression "$" lets through.
//   - SLICE is FROM:TO with either side optional, or one shard: Kshard.
//     Bounds are episode indices ("train[10:200]"), percents of the split
//     ("train[:90%]", decimals allowed) or shard indices ("train[:4shard]",
//     "train[4shard]" for shard 4 alone). The unit written on FROM, else on
//     TO, applies to both sides. Negative bounds count from the end.
//   - Percents become indices by Python's round(pct * n / 100.0) in double
//     precision, which rounds halves to even: 10% of 5 episodes is 0, 30% is
//     2, 50% is 2, 70% is 4. TFDS's other rounding, pct1_dropremainder, is
//     only reachable from its Python ReadInstruction API, not from strings.
//   - Shard bounds follow Python slicing of the shard list (beyond the end
//     clamps; negative counts from the end); a TO of zero or below is first
//     shifted by the shard count and then sliced, so "[:0shard]" selects
//     every shard and, with 4 shards, "[:-6shard]" the first two.
//   - An index bound with magnitude above the split size is an error; a
//     term whose FROM is not below its TO selects nothing, and is dropped.
//     (TFDS itself, given FROM > TO within one shard, computes a negative
//     take that tf.data reads as "to the end of the shard", so "train[7:3]"
//     reads records 7.. of shard 0 there. That is a bug; it is not copied.)
//   - "all" is the union of every split in the order of splits; it takes
//     no slice.
//
// Ranges keep the order of the terms; a split named twice is read twice, as
// TFDS reads it. A string that selects nothing at all is ErrEmptySplit, which
// TFDS reports only when reading ("corresponds to no data").
//
// A negative shard length counts as an empty shard, and episode counts
// saturate at math.MaxInt64; a format checks its lengths when it reads them.
func Resolve(spec string, splits []episode.Split) ([]episode.Range, error) {
	info := newDataset(splits)
	if len(info) == 0 {
		return nil, splitErr(spec, ErrUnknownSplit, ": the dataset has no splits")
	}
	terms, err := parseSpec(spec)
	if err != nil {
		return nil, err
	}
	if terms, err = expandAll(spec, terms, info); err != nil {
		return nil, err
	}
	ranges := make([]episode.Range, 0, len(terms))
	for _, t := range terms {
		r, err := t.resolve(spec, info)
		if err != nil {
			return nil, err
		}
		ranges = append(ranges, r)
	}
	var named []string
	out := ranges[:0]
	for _, r := range ranges {
		if !containsString(named, r.Split) {
			named = append(named, r.Split)
		}
		if r.From < r.To {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		sizes := make([]string, len(named))
		for i, name := range named {
			s, _ := info.split(name)
			sizes[i] = fmt.Sprintf("%s has %d", name, s.episodes())
		}
		return nil, splitErr(spec, ErrEmptySplit, " selects no episodes (%s)", strings.Join(sizes, ", "))
	}
	return out, nil
}

// dataset is the splits Resolve works on, each with its shard offsets.
type dataset []splitOffsets

type splitOffsets struct {
	name string
	// offsets[i] is the number of episodes in shards before shard i;
	// len(offsets) is the shard count plus one.
	offsets []int64
}

// newDataset computes the shard offsets of splits. Negative lengths count as
// empty shards and sums saturate, so that every answer stays in range.
func newDataset(splits []episode.Split) dataset {
	d := make(dataset, len(splits))
	for i, s := range splits {
		off := make([]int64, len(s.ShardEpisodes)+1)
		for k, n := range s.ShardEpisodes {
			off[k+1] = off[k] + max(0, min(n, math.MaxInt64-off[k]))
		}
		d[i] = splitOffsets{name: s.Name, offsets: off}
	}
	return d
}

func (d dataset) split(name string) (splitOffsets, bool) {
	for _, s := range d {
		if s.name == name {
			return s, true
		}
	}
	return splitOffsets{}, false
}

func (d dataset) names() []string {
	names := make([]string, len(d))
	for i, s := range d {
		names[i] = s.name
	}
	return names
}

func (s splitOffsets) episodes() int64 { return s.offsets[len(s.offsets)-1] }

func containsString(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

type unit uint8

const (
	unitAbs unit = iota
	unitPercent
	unitShard
)

// bound is one side of a slice; unset means "from the start" or "to the end".
type bound struct {
	set bool
	n   int64   // index or shard, saturated to ±math.MaxInt64
	big bool    // the index's magnitude exceeds math.MaxInt64
	pct float64 // percent
}

// term is one NAME or NAME[SLICE] of a union.
type term struct {
	text     string // as written
	split    string
	all      bool
	unit     unit
	from, to bound
}

const syntaxHelp = "want NAME or NAME[SLICE] joined by +, e.g. train, train[:90%], train[10:200], train[:4shard], train[4shard], train+val; see https://www.tensorflow.org/datasets/splits"

// parseSpec is TFDS's AbstractSplit.from_spec on a string: split on "+",
// parse every term (all parse errors come before any unknown split).
func parseSpec(spec string) ([]term, error) {
	parts := splitPlus(spec)
	terms := make([]term, 0, len(parts))
	for _, p := range parts {
		t, err := parseTerm(p)
		if err != nil {
			return nil, splitErr(spec, ErrInvalidSplit, ": %s", err)
		}
		terms = append(terms, t)
	}
	return terms, nil
}

// isPySpace is Python's str.isspace, which its regular expressions use for
// \s: Unicode White_Space plus the separators U+001C..U+001F.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// isPyWord is Python's \w on str: letters, numbers and "_".
func isPyWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// splitPlus is Python's re.split(r'\s*\+\s*', s).
func splitPlus(s string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); {
		j := skipSpace(s, i)
		if j < len(s) && s[j] == '+' {
			parts = append(parts, s[start:i])
			j = skipSpace(s, j+1)
			start, i = j, j
			continue
		}
		// No match at i, nor at any space between i and j.
		if j > i {
			i = j
		} else {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
		}
	}
	return append(parts, s[start:])
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isPySpace(r) {
			break
		}
		i += size
	}
	return i
}

// parseTerm is TFDS's _str_to_relative_instruction.
func parseTerm(text string) (term, error) {
	t := term{text: text}
	bad := fmt.Errorf("unrecognized split format %q (%s)", text, syntaxHelp)
	s := strings.TrimSuffix(text, "\n")
	nameEnd := len(s)
	for i, r := range s {
		if !isPyWord(r) && r != '-' {
			nameEnd = i
			break
		}
	}
	t.split = s[:nameEnd]
	rest := s[nameEnd:]
	if t.split == "" {
		return t, bad
	}
	if rest == "" {
		t.all = t.split == "all"
		return t, nil
	}
	if len(rest) < 3 || rest[0] != '[' || rest[len(rest)-1] != ']' {
		return t, bad
	}
	selector := rest[1 : len(rest)-1]
	for _, r := range selector {
		if !isPyWord(r) && !strings.ContainsRune("%:.-", r) {
			return t, bad
		}
	}
	if t.split == "all" {
		return t, fmt.Errorf("%q: all does not support slicing", text)
	}
	fields := strings.Split(selector, ":")
	vals := make([]string, len(fields))
	units := make([]string, len(fields))
	anySet := false
	for i, f := range fields {
		var ok bool
		if vals[i], units[i], ok = parseBound(f); !ok {
			return t, bad
		}
		anySet = anySet || f != ""
	}
	if !anySet || len(fields) > 2 {
		return t, bad
	}
	if len(fields) == 1 { // NAME[K] and K must be a shard
		n, big, err := pyInt(vals[0])
		if err != nil {
			return t, fmt.Errorf("%q: %w", text, err)
		}
		if units[0] != "shard" {
			return t, fmt.Errorf("%q: indices and percents need slice syntax, e.g. %s[:%s]; only a shard can be selected alone, e.g. %s[4shard]", text, t.split, fields[0], t.split)
		}
		t.unit = unitShard
		t.from = bound{set: true, n: n, big: big}
		if n < math.MaxInt64 { // beyond, slicing clamps anyway
			n++
		}
		t.to = bound{set: true, n: n}
		return t, nil
	}
	switch u := units[0] + units[1]; {
	case strings.HasPrefix(u, "%"):
		t.unit = unitPercent
	case strings.HasPrefix(u, "shard"):
		t.unit = unitShard
	}
	for i, b := range []*bound{&t.from, &t.to} {
		if vals[i] == "" {
			continue
		}
		b.set = true
		var err error
		if t.unit == unitPercent {
			b.pct, err = pyFloat(vals[i])
		} else {
			b.n, b.big, err = pyInt(vals[i])
		}
		if err != nil {
			return t, fmt.Errorf("%q: %w", text, err)
		}
	}
	if t.unit == unitPercent && (math.Abs(t.from.pct) > 100 || math.Abs(t.to.pct) > 100) {
		return t, fmt.Errorf("%q: percent bounds must be in [-100, 100]", text)
	}
	return t, nil
}

// parseBound matches one side of a slice against TFDS's
// ^((?P<val>-?[\d_.]+)(?P<unit>%|shard)?)?$ and returns the value and unit.
func parseBound(s string) (val, unit string, ok bool) {
	switch {
	case strings.HasSuffix(s, "%"):
		s, unit = s[:len(s)-1], "%"
	case strings.HasSuffix(s, "shard"):
		s, unit = s[:len(s)-len("shard")], "shard"
	}
	v := strings.TrimPrefix(s, "-")
	if v == "" {
		return "", "", s == "" && unit == ""
	}
	for _, r := range v {
		if !unicode.IsDigit(r) && r != '_' && r != '.' {
			return "", "", false
		}
	}
	return s, unit, true
}

// maxIntDigits is CPython's default limit on the digits int() converts.
const maxIntDigits = 4300

// pyInt is Python's int(s) on a string of an optional "-" then digits (any
// Unicode decimal digits) and underscores, as the split grammar allows. The
// result saturates at ±math.MaxInt64, with big set beyond.
func pyInt(s string) (n int64, big bool, err error) {
	digits, neg, ok := pyDigits(s, false)
	if !ok {
		return 0, false, fmt.Errorf("invalid integer %q", s)
	}
	if len(digits) > maxIntDigits {
		return 0, false, fmt.Errorf("integer %q has more than %d digits", s, maxIntDigits)
	}
	for _, d := range digits {
		v := int64(d - '0')
		if n > (math.MaxInt64-v)/10 {
			n, big = math.MaxInt64, true
			break
		}
		n = n*10 + v
	}
	if neg {
		n = -n
	}
	return n, big, nil
}

// pyFloat is Python's float(s) on the same alphabet plus one ".".
func pyFloat(s string) (float64, error) {
	digits, _, ok := pyDigits(s, true)
	if !ok {
		return 0, fmt.Errorf("invalid number %q", s)
	}
	f, err := strconv.ParseFloat(digits, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) { // out of range: ±Inf, as Python
		return 0, fmt.Errorf("invalid number %q", s)
	}
	return f, nil
}

// pyDigits checks s against Python's numeric literal grammar for int() (or
// float() with point) and returns it in ASCII without underscores: digit
// groups joined by single underscores, and for floats an optional fraction
// after ".", one side of which may be empty. The sign is returned apart for
// ints and kept in the string for floats.
func pyDigits(s string, point bool) (ascii string, neg bool, ok bool) {
	var b strings.Builder
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
		if point {
			b.WriteByte('-')
		}
	}
	parts := []string{s}
	if point {
		parts = strings.SplitN(s, ".", 2)
	}
	if len(parts) == 2 && parts[0] == "" && parts[1] == "" {
		return "", false, false
	}
	for i, p := range parts {
		if i == 1 {
			b.WriteByte('.')
		}
		if p == "" && len(parts) == 2 {
			continue
		}
		prevDigit := false
		for _, r := range p {
			switch {
			case unicode.IsDigit(r):
				b.WriteByte(byte('0' + digitValue(r)))
				prevDigit = true
			case r == '_' && prevDigit:
				prevDigit = false
			default:
				return "", false, false
			}
		}
		if !prevDigit {
			return "", false, false
		}
	}
	return b.String(), neg, true
}

// digitValue is the value of a Unicode decimal digit (category Nd). Unicode
// encodes every such digit in a contiguous run of ten, 0 to 9, so the value is
// the distance from the start of its run of digits, modulo ten.
func digitValue(r rune) int {
	if r >= '0' && r <= '9' {
		return int(r - '0')
	}
	start := r
	for unicode.IsDigit(start - 1) {
		start--
	}
	return int(r-start) % 10
}

// expandAll replaces each "all" term by the terms of every split name joined
// with "+", as TFDS's _SplitAll does.
func expandAll(spec string, terms []term, info dataset) ([]term, error) {
	var out []term
	for _, t := range terms {
		if !t.all {
			out = append(out, t)
			continue
		}
		sub, err := parseSpec(strings.Join(info.names(), "+"))
		if err != nil {
			return nil, splitErr(spec, ErrInvalidSplit, `: "all" joins every split name, and they do not parse: %s`, err)
		}
		for _, s := range sub {
			if s.all {
				return nil, splitErr(spec, ErrInvalidSplit, `: the dataset has a split named "all", a name TFDS reserves`)
			}
		}
		out = append(out, sub...)
	}
	return out, nil
}

// resolve is TFDS's _rel_to_abs_instr: the term as an absolute range, which
// may be empty (From >= To).
func (t term) resolve(spec string, info dataset) (episode.Range, error) {
	s, ok := info.split(t.split)
	if !ok {
		named := ""
		if spec != t.split {
			named = fmt.Sprintf(" %q", t.split)
		}
		return episode.Range{}, splitErr(spec, ErrUnknownSplit, ": no such split%s (valid: %s)", named, strings.Join(info.names(), ", "))
	}
	off := s.offsets
	n := s.episodes()
	from, to := bound{n: 0}, bound{n: n}
	switch t.unit {
	case unitPercent:
		if t.from.set {
			from = pctToAbs(t.from.pct, n)
		}
		if t.to.set {
			to = pctToAbs(t.to.pct, n)
		}
	case unitShard:
		// sum(shard_lengths[:k]) with Python's slice clamping.
		prefix := func(k int64) int64 {
			m := int64(len(off) - 1)
			if k >= 0 {
				return off[min(k, m)]
			}
			return off[max(m+k, 0)]
		}
		if t.from.set {
			from.n = prefix(t.from.n)
		}
		if t.to.set {
			k := t.to.n
			if k <= 0 {
				k += int64(len(off) - 1)
			}
			to.n = prefix(k)
		}
	case unitAbs:
		if t.from.set {
			from = t.from
		}
		if t.to.set {
			to = t.to
		}
	}
	if from.big || to.big || abs64(from.n) > n || abs64(to.n) > n {
		return episode.Range{}, splitErr(spec, ErrInvalidSplit, ": %s is out of range: %s has %d episodes", t.text, t.split, n)
	}
	if from.n < 0 {
		from.n += n
	}
	if to.n < 0 {
		to.n += n
	}
	return episode.Range{Split: t.split, From: from.n, To: to.n}, nil
}

// pctToAbs is TFDS's _pct_to_abs_closest: int(round(pct * n / 100.0)), with
// Python's round-half-to-even on the double.
func pctToAbs(pct float64, n int64) bound {
	x := math.RoundToEven(pct * float64(n) / 100.0)
	if math.Abs(x) >= 1<<63 {
		return bound{big: true}
	}
	return bound{n: int64(x)}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
