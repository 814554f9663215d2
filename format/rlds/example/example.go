// Package example owns the tf.train.Example wire format: a zero-copy parser
// that validates a serialized Example once and then hands out its features
// as views of the input bytes, and a Builder that writes Examples for tests
// and `oxefs synth`.
//
// The messages (tensorflow/core/example/{example,feature}.proto, proto3):
//
//	Example   { Features features = 1; }
//	Features  { map<string, Feature> feature = 1; }
//	Feature   { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; } }
//	BytesList { repeated bytes value = 1; }
//	FloatList { repeated float value = 1; }   // packed or not
//	Int64List { repeated int64 value = 1; }   // packed or not
//
// Parse follows the protobuf decoding rules exactly as the reference runtime
// (google.golang.org/protobuf) applies them to these messages, and the tests
// check it against that runtime: unknown fields and fields with an
// unexpected wire type are skipped (groups included, which must be well
// formed); repeated scalars are accepted packed and unpacked, mixed; a
// message field that occurs twice is merged, so two bytes_list fields in one
// Feature concatenate while a float_list after a bytes_list replaces it (a
// oneof); map entries come in any order, a missing key is "", a missing
// value an empty Feature, and a later entry with the same key replaces the
// earlier one. Map keys are proto3 strings and must be valid UTF-8, as the
// reference runtime requires; TFDS feature names always are. Field numbers
// above 2^29-1 are rejected, as the reference runtime does.
//
// example belongs to the RLDS format: only format/rlds and its writer
// (format/rlds/synth) import it. It imports nothing else of oxefs.
package example

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Kind is the type of a feature's values: the oneof case of a Feature.
type Kind uint8

// The kinds. Their values are the Feature oneof field numbers.
const (
	KindNone  Kind = 0 // no kind set: an empty feature
	KindBytes Kind = 1 // bytes_list
	KindFloat Kind = 2 // float_list
	KindInt64 Kind = 3 // int64_list
)

func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindBytes:
		return "bytes_list"
	case KindFloat:
		return "float_list"
	case KindInt64:
		return "int64_list"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ErrNotExample matches every error from Parse.
var ErrNotExample = errors.New("not a tf.train.Example")

// Feature is one feature's values, as a view of the bytes given to Parse.
// The zero Feature is empty, of KindNone. A Feature is valid as long as
// those bytes are neither modified nor reused.
//
// Bytes values are located at Parse: offs holds a (start, end) pair per
// value, so Bytes(i) is O(1) and a loop over all steps' images is linear.
// That index costs 8 bytes per value (under 1 KiB for an episode of 120
// images; at worst 4 bytes per input byte, for a list of empty values).
// Float and int64 values are decoded only by AppendFloats and AppendInt64s;
// offs then holds a (start, end) pair per FloatList or Int64List message
// body, which is one pair unless the encoder split the list.
type Feature struct {
	src  []byte
	offs []uint32
	n    int
	kind Kind
}

// Kind returns the type of the values.
func (f Feature) Kind() Kind { return f.kind }

// Len returns the number of values.
func (f Feature) Len() int { return f.n }

// Bytes returns the i-th value of a bytes feature, as a sub-slice of the
// input that must not be modified. It panics if f is not of KindBytes or i
// is out of range, like an index expression.
func (f Feature) Bytes(i int) []byte {
	if f.kind != KindBytes || uint(i) >= uint(f.n) {
		f.badIndex(i)
	}
	s, e := f.offs[2*i], f.offs[2*i+1]
	return f.src[s:e:e]
}

func (f Feature) badIndex(i int) {
	panic(fmt.Sprintf("example: Bytes(%d) on a %v feature with %d values", i, f.kind, f.n))
}

// AppendBytes appends every value of a bytes feature to dst, as sub-slices
// of the input that must not be modified. It appends nothing for other
// kinds.
func (f Feature) AppendBytes(dst [][]byte) [][]byte {
	if f.kind != KindBytes {
		return dst
	}
	dst = slices.Grow(dst, f.n)
	for i := 0; i+1 < len(f.offs); i += 2 {
		s, e := f.offs[i], f.offs[i+1]
		dst = append(dst, f.src[s:e:e])
	}
	return dst
}

// AppendFloats appends every value of a float feature to dst. It appends
// nothing for other kinds.
func (f Feature) AppendFloats(dst []float32) []float32 { return appendFloats(f, dst) }

// AppendFloatsAsFloat64 is AppendFloats converting each value to float64
// (exactly) as it goes, with no []float32 in between.
func (f Feature) AppendFloatsAsFloat64(dst []float64) []float64 { return appendFloats(f, dst) }

func appendFloats[T float32 | float64](f Feature, dst []T) []T {
	if f.kind != KindFloat {
		return dst
	}
	dst = slices.Grow(dst, f.n)
	for i := 0; i+1 < len(f.offs); i += 2 {
		body := f.src[f.offs[i]:f.offs[i+1]]
		for len(body) > 0 {
			// Parse validated these bytes; the n < 0 checks are never true.
			num, typ, n := protowire.ConsumeTag(body)
			if n < 0 {
				return dst
			}
			body = body[n:]
			switch {
			case num == 1 && typ == protowire.BytesType:
				v, n := protowire.ConsumeBytes(body)
				if n < 0 {
					return dst
				}
				dst = appendLE32(dst, v)
				body = body[n:]
			case num == 1 && typ == protowire.Fixed32Type:
				if len(body) < 4 {
					return dst
				}
				dst = append(dst, T(math.Float32frombits(binary.LittleEndian.Uint32(body))))
				body = body[4:]
			default:
				n := protowire.ConsumeFieldValue(num, typ, body)
				if n < 0 {
					return dst
				}
				body = body[n:]
			}
		}
	}
	return dst
}

// appendLE32 appends the little-endian float32s in v to dst.
func appendLE32[T float32 | float64](dst []T, v []byte) []T {
	n := len(v) / 4
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	out := dst[start:]
	for i := range out {
		out[i] = T(math.Float32frombits(binary.LittleEndian.Uint32(v[4*i:])))
	}
	return dst
}

// AppendInt64s appends every value of an int64 feature to dst. It appends
// nothing for other kinds.
func (f Feature) AppendInt64s(dst []int64) []int64 { return appendInt64s(f, dst) }

// AppendInt64sAsFloat64 is AppendInt64s converting each value to float64
// as it goes (float64(x), rounded where |x| > 2⁵³), with no []int64 in
// between.
func (f Feature) AppendInt64sAsFloat64(dst []float64) []float64 { return appendInt64s(f, dst) }

func appendInt64s[T int64 | float64](f Feature, dst []T) []T {
	if f.kind != KindInt64 {
		return dst
	}
	dst = slices.Grow(dst, f.n)
	for i := 0; i+1 < len(f.offs); i += 2 {
		body := f.src[f.offs[i]:f.offs[i+1]]
		for len(body) > 0 {
			// Parse validated these bytes; the n < 0 checks are never true.
			num, typ, n := protowire.ConsumeTag(body)
			if n < 0 {
				return dst
			}
			body = body[n:]
			switch {
			case num == 1 && typ == protowire.BytesType:
				v, n := protowire.ConsumeBytes(body)
				if n < 0 {
					return dst
				}
				for len(v) > 0 {
					if c := v[0]; c < 0x80 { // most steps' flags and indices
						dst = append(dst, T(int64(c)))
						v = v[1:]
						continue
					}
					x, m := protowire.ConsumeVarint(v)
					if m < 0 {
						return dst
					}
					dst = append(dst, T(int64(x)))
					v = v[m:]
				}
				body = body[n:]
			case num == 1 && typ == protowire.VarintType:
				x, n := protowire.ConsumeVarint(body)
				if n < 0 {
					return dst
				}
				dst = append(dst, T(int64(x)))
				body = body[n:]
			default:
				n := protowire.ConsumeFieldValue(num, typ, body)
				if n < 0 {
					return dst
				}
				body = body[n:]
			}
		}
	}
	return dst
}

// Example is a parsed tf.train.Example: its features indexed by key, each a
// view of the parsed bytes. It is immutable, so safe for concurrent use.
type Example struct {
	ents []entry // sorted by key, keys unique
}

type entry struct {
	key string
	f   Feature
}

// Feature returns the feature named key and whether it exists.
func (e *Example) Feature(key string) (Feature, bool) {
	i, ok := slices.BinarySearchFunc(e.ents, key, func(en entry, k string) int {
		return strings.Compare(en.key, k)
	})
	if !ok {
		return Feature{}, false
	}
	return e.ents[i].f, true
}

// Keys returns the feature names in sorted order, in a new slice.
func (e *Example) Keys() []string {
	keys := make([]string, len(e.ents))
	for i := range e.ents {
		keys[i] = e.ents[i].key
	}
	return keys
}

// Len returns the number of features.
func (e *Example) Len() int { return len(e.ents) }

// Parse validates the serialized Example b in one pass and indexes its
// features by key, so that no accessor can fail later. Values are not
// copied: the Features refer to b, which must stay unchanged while they are
// in use (the keys are copied, into one string). Parse allocates only the
// index, in four allocations whatever the size of the values: the Example,
// its entries, the key string and the offsets described at Feature. Every
// error matches ErrNotExample and names the field and the byte offset.
func Parse(b []byte) (*Example, error) {
	if uint64(len(b)) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: %d bytes is over the 4 GiB limit", ErrNotExample, len(b))
	}
	p := parsers.Get().(*parser)
	defer p.release()
	p.src = b
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.finish(), nil
}

// parsers recycles the parsers' scratch slices, so that in steady state
// Parse allocates only what it returns.
var parsers = sync.Pool{New: func() any { return new(parser) }}

// parser holds the state of one Parse. Its scratch slices are copied into
// exact-size ones by finish, then reused by the next Parse.
type parser struct {
	src  []byte
	ents []pentry
	offs []uint32

	// context for error messages
	inEntry bool   // whether a map entry is being parsed
	entry   int    // number of the last map entry started
	keyKnw  bool   // whether the entry's key has been read
	key     []byte // the entry's key, once read
}

// maxScratch bounds the scratch a pooled parser keeps, in elements.
const maxScratch = 1 << 14

func (p *parser) release() {
	p.src, p.key, p.inEntry = nil, nil, false
	p.ents, p.offs = p.ents[:0], p.offs[:0]
	if cap(p.ents) > maxScratch {
		p.ents = nil
	}
	if cap(p.offs) > maxScratch {
		p.offs = nil
	}
	parsers.Put(p)
}

// pentry is a map entry as parsed, before sorting and dropping duplicates.
type pentry struct {
	ks, ke uint32 // key bytes in src
	os, oe int    // offsets in parser.offs
	n      int
	kind   Kind
}

// fail returns an error naming the field being parsed and the offset.
// Inside a map entry, field is relative to the entry.
func (p *parser) fail(field string, off int, what string) error {
	where := field
	if p.inEntry {
		where = fmt.Sprintf("features.feature entry %d", p.entry)
		if p.keyKnw {
			where = fmt.Sprintf("features.feature[%q]", p.key)
		}
		if field != "" {
			where += "." + field
		}
	}
	if where == "" {
		where = "Example"
	}
	return fmt.Errorf("%w: %s at offset %d: %s", ErrNotExample, where, off, what)
}

// wireErr describes a negative length returned by protowire.
func wireErr(n int) string { return protowire.ParseError(n).Error() }

// fields walks the fields of the message src[start:end], named name in
// errors. For each field it calls fn with the field's number, wire type and
// the offset of its value; fn either parses the value, returning the offset
// just past it and true, or returns false to have it skipped as unknown.
// The reference runtime skips a known field with the wrong wire type the
// same way.
func (p *parser) fields(name string, start, end int, fn func(num protowire.Number, typ protowire.Type, pos int) (int, bool, error)) error {
	pos := start
	for pos < end {
		num, typ, n := protowire.ConsumeTag(p.src[pos:end])
		if n < 0 {
			return p.fail(name, pos, "bad tag: "+wireErr(n))
		}
		if num > protowire.MaxValidNumber {
			return p.fail(name, pos, fmt.Sprintf("field number %d out of range", num))
		}
		tag := pos
		pos += n
		next, ok, err := fn(num, typ, pos)
		if err != nil {
			return err
		}
		if ok {
			pos = next
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, p.src[pos:end])
		if m < 0 {
			return p.fail(name, tag, fmt.Sprintf("field %d (wire type %d): %s", num, typ, wireErr(m)))
		}
		pos += m
	}
	return nil
}

// sub reads the length-delimited value at pos and returns its body.
func (p *parser) sub(name string, pos, end int) (bs, be int, err error) {
	v, n := protowire.ConsumeBytes(p.src[pos:end])
	if n < 0 {
		return 0, 0, p.fail(name, pos, wireErr(n))
	}
	return pos + n - len(v), pos + n, nil
}

func (p *parser) parse() error {
	p.entry = -1
	p.inEntry = false
	return p.fields("", 0, len(p.src), func(num protowire.Number, typ protowire.Type, pos int) (int, bool, error) {
		if num != 1 || typ != protowire.BytesType {
			return 0, false, nil
		}
		bs, be, err := p.sub("features", pos, len(p.src))
		if err != nil {
			return 0, false, err
		}
		// A repeated features field merges: its entries join the map.
		return be, true, p.features(bs, be)
	})
}

func (p *parser) features(start, end int) error {
	return p.fields("features", start, end, func(num protowire.Number, typ protowire.Type, pos int) (int, bool, error) {
		if num != 1 || typ != protowire.BytesType {
			return 0, false, nil
		}
		bs, be, err := p.sub("features.feature", pos, end)
		if err != nil {
			return 0, false, err
		}
		return be, true, p.mapEntry(bs, be)
	})
}

func (p *parser) mapEntry(start, end int) error {
	p.entry++
	p.inEntry, p.keyKnw, p.key = true, false, nil
	e := pentry{ks: uint32(start), ke: uint32(start), os: len(p.offs), oe: len(p.offs)}
	err := p.fields("", start, end, func(num protowire.Number, typ protowire.Type, pos int) (int, bool, error) {
		if typ != protowire.BytesType || (num != 1 && num != 2) {
			return 0, false, nil
		}
		if num == 1 {
			ks, ke, err := p.sub("key", pos, end)
			if err != nil {
				return 0, false, err
			}
			if !utf8.Valid(p.src[ks:ke]) {
				return 0, false, p.fail("key", pos, "key is not valid UTF-8")
			}
			e.ks, e.ke = uint32(ks), uint32(ke)
			p.keyKnw, p.key = true, p.src[ks:ke]
			return ke, true, nil
		}
		vs, ve, err := p.sub("value", pos, end)
		if err != nil {
			return 0, false, err
		}
		// A repeated value field merges into the same Feature.
		return ve, true, p.feature(vs, ve, &e)
	})
	p.inEntry = false
	if err != nil {
		return err
	}
	e.oe = len(p.offs)
	p.ents = append(p.ents, e)
	return nil
}

func (p *parser) feature(start, end int, e *pentry) error {
	return p.fields("value", start, end, func(num protowire.Number, typ protowire.Type, pos int) (int, bool, error) {
		if typ != protowire.BytesType || num < 1 || num > 3 {
			return 0, false, nil
		}
		kind := Kind(num)
		ls, le, err := p.sub(listField[kind], pos, end)
		if err != nil {
			return 0, false, err
		}
		if kind != e.kind {
			// Setting another oneof case clears the current one.
			e.kind, e.n = kind, 0
			p.offs = p.offs[:e.os]
		}
		switch kind {
		case KindBytes:
			err = p.bytesList(ls, le, e)
		case KindFloat:
			err = p.floatList(ls, le, e)
		default:
			err = p.int64List(ls, le, e)
		}
		return le, true, err
	})
}

// listField names the list field of each kind in errors.
var listField = [...]string{
	KindBytes: "value.bytes_list",
	KindFloat: "value.float_list",
	KindInt64: "value.int64_list",
}

func (p *parser) bytesList(start, end int, e *pentry) error {
	return p.fields("value.bytes_list", start, end, func(num protowire.Number, typ protowire.Type, pos int) (int, bool, error) {
		if num != 1 || typ != protowire.BytesType {
			return 0, false, nil
		}
		vs, ve, err := p.sub("value.bytes_list.value", pos, end)
		if err != nil {
			return 0, false, err
		}
		p.offs = append(p.offs, uint32(vs), uint32(ve))
		e.n++
		return ve, true, nil
	})
}

func (p *parser) floatList(start, end int, e *pentry) error {
	n := 0
	err := p.fields("value.float_list", start, end, func(num protowire.Number, typ protowire.Type, pos int) (int, bool, error) {
		if num != 1 {
			return 0, false, nil
		}
		switch typ {
		case protowire.BytesType:
			vs, ve, err := p.sub("value.float_list.value", pos, end)
			if err != nil {
				return 0, false, err
			}
			if (ve-vs)%4 != 0 {
				return 0, false, p.fail("value.float_list.value", pos, fmt.Sprintf("packed length %d is not a multiple of 4", ve-vs))
			}
			n += (ve - vs) / 4
			return ve, true, nil
		case protowire.Fixed32Type:
			if end-pos < 4 {
				return 0, false, p.fail("value.float_list.value", pos, wireErr(-1))
			}
			n++
			return pos + 4, true, nil
		}
		return 0, false, nil
	})
	if err != nil {
		return err
	}
	p.addList(start, end, n, e)
	return nil
}

func (p *parser) int64List(start, end int, e *pentry) error {
	n := 0
	err := p.fields("value.int64_list", start, end, func(num protowire.Number, typ protowire.Type, pos int) (int, bool, error) {
		if num != 1 {
			return 0, false, nil
		}
		switch typ {
		case protowire.BytesType:
			vs, ve, err := p.sub("value.int64_list.value", pos, end)
			if err != nil {
				return 0, false, err
			}
			for i := vs; i < ve; {
				_, m := protowire.ConsumeVarint(p.src[i:ve])
				if m < 0 {
					return 0, false, p.fail("value.int64_list.value", i, "packed value: "+wireErr(m))
				}
				i += m
				n++
			}
			return ve, true, nil
		case protowire.VarintType:
			_, m := protowire.ConsumeVarint(p.src[pos:end])
			if m < 0 {
				return 0, false, p.fail("value.int64_list.value", pos, wireErr(m))
			}
			n++
			return pos + m, true, nil
		}
		return 0, false, nil
	})
	if err != nil {
		return err
	}
	p.addList(start, end, n, e)
	return nil
}

// addList records a FloatList or Int64List body holding n values.
func (p *parser) addList(start, end, n int, e *pentry) {
	if n == 0 {
		return // nothing to decode later
	}
	p.offs = append(p.offs, uint32(start), uint32(end))
	e.n += n
}

// finish sorts the entries, keeps the last of each key and copies the index
// into exact-size slices that outlive the parser.
func (p *parser) finish() *Example {
	key := func(e pentry) []byte { return p.src[e.ks:e.ke] }
	// Stable, so among equal keys the later entry stays later.
	slices.SortStableFunc(p.ents, func(a, b pentry) int { return bytes.Compare(key(a), key(b)) })
	uniq := p.ents[:0]
	for i, e := range p.ents {
		if i+1 < len(p.ents) && bytes.Equal(key(e), key(p.ents[i+1])) {
			continue // a later entry with this key replaces it
		}
		uniq = append(uniq, e)
	}
	nkey, noff := 0, 0
	for _, e := range uniq {
		nkey += int(e.ke - e.ks)
		noff += e.oe - e.os
	}
	var sb strings.Builder
	sb.Grow(nkey)
	for _, e := range uniq {
		sb.Write(key(e))
	}
	keys := sb.String()
	var offs []uint32
	if noff > 0 {
		offs = make([]uint32, 0, noff)
	}
	ex := &Example{ents: make([]entry, len(uniq))}
	k := 0
	for i, e := range uniq {
		o := len(offs)
		offs = append(offs, p.offs[e.os:e.oe]...)
		kl := int(e.ke - e.ks)
		ex.ents[i] = entry{
			key: keys[k : k+kl],
			f:   Feature{src: p.src, offs: offs[o:len(offs):len(offs)], n: e.n, kind: e.kind},
		}
		k += kl
	}
	return ex
}
