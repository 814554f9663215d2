package example

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// checkReference parses b with Parse and with the protobuf runtime and
// fails unless both reject it or both accept it with the same features. It
// returns the model when both accept.
func checkReference(t *testing.T, b []byte) (model, bool) {
	t.Helper()
	want, refErr := reference(t).decode(b)
	ex, err := Parse(b)
	if err != nil && !errors.Is(err, ErrNotExample) {
		t.Fatalf("Parse error %v does not match ErrNotExample", err)
	}
	if errors.Is(refErr, errRefPanic) {
		// The case described at errRefPanic: the reference stopped before
		// deciding, so there is nothing to compare. Callers that know what
		// the input holds check that themselves.
		if err != nil {
			return nil, false
		}
		return modelOf(ex), true
	}
	switch {
	case refErr != nil && err != nil:
		return nil, false
	case refErr != nil:
		t.Fatalf("Parse accepted what the reference rejects (%v):\n% x", refErr, b)
	case err != nil:
		t.Fatalf("Parse rejected what the reference accepts: %v\n% x", err, b)
	}
	got := modelOf(ex)
	// The reference holds floats as float64, which quiets signalling NaNs;
	// Parse keeps the bits, so compare with NaNs quietened.
	if d := got.quietNaNs().diff(want.quietNaNs()); d != "" {
		t.Fatalf("Parse vs reference: %s\n% x", d, b)
	}
	if ex.Len() != len(want) {
		t.Fatalf("Len %d, want %d", ex.Len(), len(want))
	}
	return got, true
}

var testKeys = []string{
	"", "steps/observation/image", "steps/action", "steps/is_first", "episode_metadata/file_path",
	"k", "ü/naïve", "日本", "steps/observation/state", "a\x00b",
}

// randFeat returns a random feature.
func randFeat(r *rand.Rand) feat {
	f := feat{Kind: Kind(r.IntN(4))}
	n := r.IntN(6)
	if r.IntN(8) == 0 {
		n = 200 + r.IntN(100) // long enough for multi-byte lengths
	}
	for range n {
		switch f.Kind {
		case KindBytes:
			v := make([]byte, r.IntN(4)*r.IntN(60))
			for i := range v {
				v[i] = byte(r.Uint32())
			}
			f.Bytes = append(f.Bytes, v)
		case KindFloat:
			x := r.Uint32()
			switch r.IntN(4) {
			case 0:
				x = math.Float32bits(float32(r.NormFloat64()))
			case 1:
				x = 0x7fc00001 // a NaN with a payload
			}
			f.Floats = append(f.Floats, x)
		case KindInt64:
			x := int64(r.Uint64())
			switch r.IntN(4) {
			case 0:
				x = int64(r.IntN(3))
			case 1:
				x = -int64(r.IntN(300))
			case 2:
				x >>= r.IntN(64)
			}
			f.Ints = append(f.Ints, x)
		}
	}
	return f
}

func randModel(r *rand.Rand) model {
	m := model{}
	for range r.IntN(8) {
		m[testKeys[r.IntN(len(testKeys))]] = randFeat(r)
	}
	return m
}

// TestParseMatchesReferenceMarshal: Examples marshalled by the protobuf
// runtime (packed, map in random order) parse to the same features.
func TestParseMatchesReferenceMarshal(t *testing.T) {
	rf := reference(t)
	for seed := range 300 {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), 2))
			m := randModel(r)
			b, err := proto.Marshal(rf.message(m))
			if err != nil {
				t.Fatal(err)
			}
			got, ok := checkReference(t, b)
			if !ok {
				t.Fatal("both rejected a marshalled Example")
			}
			// Marshalling through the reference quiets signalling NaNs.
			if d := got.quietNaNs().diff(m.quietNaNs()); d != "" {
				t.Fatalf("Parse vs input: %s", d)
			}
		})
	}
}

// wire is a hand encoder that makes every choice the format allows.
type wire struct{ r *rand.Rand }

func tag(b []byte, num protowire.Number, typ protowire.Type) []byte {
	return protowire.AppendTag(b, num, typ)
}

func bytesField(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(tag(b, num, protowire.BytesType), v)
}

// unknown appends a field that the reader must skip: a number not in
// known, or a known number with a wire type that no field here has (fixed64
// or a group), which the reader must skip too.
func (w wire) unknown(b []byte, known ...protowire.Number) []byte {
	num := protowire.Number(1 + w.r.IntN(40))
	if slices.Contains(known, num) && w.r.IntN(2) == 0 {
		num = 1000 + protowire.Number(w.r.IntN(1<<20))
	}
	choice := w.r.IntN(5)
	if slices.Contains(known, num) {
		choice = 2 + 2*w.r.IntN(2)
	}
	switch choice {
	case 0:
		return protowire.AppendVarint(tag(b, num, protowire.VarintType), w.r.Uint64())
	case 1:
		return protowire.AppendFixed32(tag(b, num, protowire.Fixed32Type), w.r.Uint32())
	case 2:
		return protowire.AppendFixed64(tag(b, num, protowire.Fixed64Type), w.r.Uint64())
	case 3:
		return bytesField(b, num, []byte("junk"))
	default:
		b = tag(b, num, protowire.StartGroupType)
		b = protowire.AppendVarint(tag(b, 1, protowire.VarintType), 1)
		b = bytesField(b, 2, []byte{0x0a, 0x00})
		return tag(b, num, protowire.EndGroupType)
	}
}

func (w wire) maybeUnknown(b []byte, known ...protowire.Number) []byte {
	for w.r.IntN(4) == 0 {
		b = w.unknown(b, known...)
	}
	return b
}

// list encodes the values of f as one list message body.
func (w wire) list(f feat, from, to int) []byte {
	var b []byte
	b = w.maybeUnknown(b, 1)
	switch f.Kind {
	case KindBytes:
		for _, v := range f.Bytes[from:to] {
			b = bytesField(b, 1, v)
			b = w.maybeUnknown(b, 1)
		}
	case KindFloat:
		for i := from; i < to; {
			if w.r.IntN(2) == 0 { // unpacked
				b = protowire.AppendFixed32(tag(b, 1, protowire.Fixed32Type), f.Floats[i])
				i++
				continue
			}
			j := i + w.r.IntN(to-i+1)
			var p []byte
			for _, x := range f.Floats[i:j] {
				p = binary.LittleEndian.AppendUint32(p, x)
			}
			b = bytesField(b, 1, p)
			i = j
		}
	case KindInt64:
		for i := from; i < to; {
			if w.r.IntN(2) == 0 {
				b = protowire.AppendVarint(tag(b, 1, protowire.VarintType), uint64(f.Ints[i]))
				i++
				continue
			}
			j := i + w.r.IntN(to-i+1)
			var p []byte
			for _, x := range f.Ints[i:j] {
				p = protowire.AppendVarint(p, uint64(x))
			}
			b = bytesField(b, 1, p)
			i = j
		}
	}
	return w.maybeUnknown(b, 1)
}

func (f feat) len() int { return len(f.Bytes) + len(f.Floats) + len(f.Ints) }

// feature encodes f as a Feature body, possibly split into several list
// fields (merged by the reader), possibly after a decoy of another kind
// (replaced, as a oneof).
func (w wire) feature(f feat) []byte {
	var b []byte
	if f.Kind != KindNone && w.r.IntN(4) == 0 {
		decoy := randFeat(w.r)
		if decoy.Kind != KindNone && decoy.Kind != f.Kind {
			b = bytesField(b, protowire.Number(decoy.Kind), w.list(decoy, 0, decoy.len()))
		}
	}
	if f.Kind == KindNone {
		return w.maybeUnknown(b, 1, 2, 3)
	}
	for i := 0; ; {
		j := i + w.r.IntN(f.len()-i+1)
		if w.r.IntN(2) == 0 {
			j = f.len()
		}
		b = bytesField(b, protowire.Number(f.Kind), w.list(f, i, j))
		b = w.maybeUnknown(b, 1, 2, 3)
		if i = j; i == f.len() {
			break
		}
	}
	return b
}

func (w wire) entry(key string, f feat) []byte {
	var b []byte
	keyField := func(b []byte) []byte {
		if key == "" && w.r.IntN(2) == 0 {
			return b // a missing key is ""
		}
		if w.r.IntN(4) == 0 {
			b = bytesField(b, 1, []byte("overridden key"))
		}
		return bytesField(b, 1, []byte(key))
	}
	valueField := func(b []byte) []byte {
		if f.Kind == KindNone && w.r.IntN(2) == 0 {
			return b // a missing value is an empty Feature
		}
		body := w.feature(f)
		if w.r.IntN(4) == 0 && len(body) > 0 {
			// Split the Feature in two value fields, which merge. Cut at
			// a field boundary.
			cut := fieldBoundary(body, w.r)
			b = bytesField(b, 2, body[:cut])
			body = body[cut:]
		}
		return bytesField(b, 2, body)
	}
	b = w.maybeUnknown(b, 1, 2)
	if w.r.IntN(2) == 0 {
		b = valueField(keyField(b))
	} else {
		b = keyField(valueField(b))
	}
	return w.maybeUnknown(b, 1, 2)
}

// fieldBoundary returns a random offset in msg at which a field starts.
func fieldBoundary(msg []byte, r *rand.Rand) int {
	cuts := []int{0}
	for pos := 0; pos < len(msg); {
		_, _, n := protowire.ConsumeField(msg[pos:])
		if n < 0 {
			panic("test encoder wrote a bad field")
		}
		pos += n
		cuts = append(cuts, pos)
	}
	return cuts[r.IntN(len(cuts))]
}

// example encodes entries (which may repeat keys) as an Example, possibly
// spread over several features fields.
func (w wire) example(keys []string, feats []feat) []byte {
	var b, features []byte
	flush := func() {
		b = bytesField(b, 1, features)
		b = w.maybeUnknown(b, 1)
		features = nil
	}
	b = w.maybeUnknown(b, 1)
	for i := range keys {
		features = w.maybeUnknown(features, 1)
		features = bytesField(features, 1, w.entry(keys[i], feats[i]))
		if w.r.IntN(5) == 0 {
			flush()
		}
	}
	if len(features) > 0 || w.r.IntN(2) == 0 {
		flush()
	}
	return b
}

// TestParseRandomEncodings encodes random features in every way the wire
// format allows (unpacked and split lists, repeated and merged messages,
// oneof replacement, duplicate keys, unknown fields everywhere) and checks
// Parse against both the intended features and the reference runtime.
func TestParseRandomEncodings(t *testing.T) {
	for seed := range 500 {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), 3))
			var keys []string
			var feats []feat
			want := model{}
			for range r.IntN(10) {
				k, f := testKeys[r.IntN(len(testKeys))], randFeat(r)
				keys, feats = append(keys, k), append(feats, f)
				want[k] = f // a later duplicate replaces
			}
			b := wire{r}.example(keys, feats)
			got, ok := checkReference(t, b)
			if !ok {
				t.Fatalf("both rejected a valid encoding:\n% x", b)
			}
			if d := got.diff(want); d != "" {
				t.Fatalf("Parse vs intended: %s", d)
			}
		})
	}
}

// enc is a tiny helper for the hand-written cases below.
func enc(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func fld(num protowire.Number, parts ...[]byte) []byte { return bytesField(nil, num, enc(parts...)) }

func varintField(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(tag(nil, num, protowire.VarintType), v)
}

func fixed32Field(num protowire.Number, v uint32) []byte {
	return protowire.AppendFixed32(tag(nil, num, protowire.Fixed32Type), v)
}

// ex wraps map entries into an Example.
func ex(entries ...[]byte) []byte { return fld(1, entries...) }

// ent builds a map entry with a key and a Feature body.
func ent(key string, feature ...[]byte) []byte {
	return fld(1, fld(1, []byte(key)), fld(2, feature...))
}

func packedFloats(fs ...float32) []byte {
	var p []byte
	for _, f := range fs {
		p = binary.LittleEndian.AppendUint32(p, math.Float32bits(f))
	}
	return fld(1, p)
}

func packedInts(xs ...int64) []byte {
	var p []byte
	for _, x := range xs {
		p = protowire.AppendVarint(p, uint64(x))
	}
	return fld(1, p)
}

func TestParseEncodings(t *testing.T) {
	f1, f2, f3 := math.Float32bits(1.5), math.Float32bits(-2), math.Float32bits(3)
	tests := []struct {
		name string
		in   []byte
		want model
	}{
		{"empty message", nil, model{}},
		{"empty features", fld(1), model{}},
		{"packed floats", ex(ent("a", fld(2, packedFloats(1.5, -2, 3)))), model{"a": {Kind: KindFloat, Floats: []uint32{f1, f2, f3}}}},
		{"unpacked floats", ex(ent("a", fld(2, fixed32Field(1, f1), fixed32Field(1, f2)))), model{"a": {Kind: KindFloat, Floats: []uint32{f1, f2}}}},
		{"packed and unpacked floats", ex(ent("a", fld(2, fixed32Field(1, f1), packedFloats(-2, 3)))), model{"a": {Kind: KindFloat, Floats: []uint32{f1, f2, f3}}}},
		{"packed ints", ex(ent("a", fld(3, packedInts(0, -1, 1<<40)))), model{"a": {Kind: KindInt64, Ints: []int64{0, -1, 1 << 40}}}},
		{"unpacked ints", ex(ent("a", fld(3, varintField(1, 5), varintField(1, math.MaxUint64)))), model{"a": {Kind: KindInt64, Ints: []int64{5, -1}}}},
		{"bytes", ex(ent("img", fld(1, fld(1, []byte("jpeg0")), fld(1), fld(1, []byte("jpeg2"))))), model{"img": {Kind: KindBytes, Bytes: [][]byte{[]byte("jpeg0"), {}, []byte("jpeg2")}}}},
		{"two bytes_lists merge", ex(ent("b", fld(1, fld(1, []byte("x"))), fld(1, fld(1, []byte("y"))))), model{"b": {Kind: KindBytes, Bytes: [][]byte{[]byte("x"), []byte("y")}}}},
		{"oneof: float_list replaces bytes_list", ex(ent("o", fld(1, fld(1, []byte("x"))), fld(2, packedFloats(3)))), model{"o": {Kind: KindFloat, Floats: []uint32{f3}}}},
		{"oneof: back to bytes starts afresh", ex(ent("o", fld(1, fld(1, []byte("x"))), fld(2, packedFloats(3)), fld(1, fld(1, []byte("z"))))), model{"o": {Kind: KindBytes, Bytes: [][]byte{[]byte("z")}}}},
		{"empty list sets the kind", ex(ent("e", fld(3))), model{"e": {Kind: KindInt64}}},
		{"no kind", ex(ent("n")), model{"n": {}}},
		{"missing value", ex(fld(1, fld(1, []byte("m")))), model{"m": {}}},
		{"missing key", ex(fld(1, fld(2, fld(3, packedInts(7))))), model{"": {Kind: KindInt64, Ints: []int64{7}}}},
		{"value before key", ex(fld(1, fld(2, fld(3, packedInts(7))), fld(1, []byte("v")))), model{"v": {Kind: KindInt64, Ints: []int64{7}}}},
		{"last key field wins", ex(fld(1, fld(1, []byte("old")), fld(2, fld(3, packedInts(7))), fld(1, []byte("new")))), model{"new": {Kind: KindInt64, Ints: []int64{7}}}},
		// The reference runtime panics on this one (see errRefPanic).
		{"key field with a wrong wire type is skipped", ex(fld(1, fld(1, []byte("a")), varintField(1, 3), fld(2))), model{"a": {}}},
		{"two value fields merge", ex(fld(1, fld(1, []byte("k")), fld(2, fld(3, packedInts(1))), fld(2, fld(3, packedInts(2))))), model{"k": {Kind: KindInt64, Ints: []int64{1, 2}}}},
		{"duplicate key: later entry wins", ex(ent("d", fld(3, packedInts(1))), ent("x", fld(3)), ent("d", fld(2, packedFloats(3)))), model{"d": {Kind: KindFloat, Floats: []uint32{f3}}, "x": {Kind: KindInt64}}},
		{"repeated features fields merge", enc(ex(ent("a", fld(3, packedInts(1)))), ex(ent("b", fld(3, packedInts(2))), ent("a", fld(3)))), model{"a": {Kind: KindInt64}, "b": {Kind: KindInt64, Ints: []int64{2}}}},
		{"unknown fields everywhere", enc(
			varintField(9, 1),
			fld(1, fixed32Field(2, 0), fld(1, varintField(3, 1), fld(1, []byte("u")), fld(2, varintField(4, 1), fld(3, varintField(2, 1), packedInts(4))))),
			fld(2, []byte("unknown submessage")),
		), model{"u": {Kind: KindInt64, Ints: []int64{4}}}},
		{"known numbers with the wrong wire type are skipped", enc(
			varintField(1, 3),
			fld(1, varintField(1, 3), fld(1, varintField(1, 3), varintField(2, 3), fld(1, []byte("w")), fld(2, varintField(1, 1), fld(2, varintField(1, 1), fixed32Field(1, f1))))),
		), model{"w": {Kind: KindFloat, Floats: []uint32{f1}}}},
		{"unknown group", enc(
			tag(nil, 5, protowire.StartGroupType), varintField(1, 1), tag(nil, 5, protowire.EndGroupType),
			ex(ent("g", fld(3, packedInts(1)))),
		), model{"g": {Kind: KindInt64, Ints: []int64{1}}}},
		{"known field as a group", enc(
			tag(nil, 1, protowire.StartGroupType), tag(nil, 1, protowire.EndGroupType),
			ex(ent("g", fld(3, packedInts(1)))),
		), model{"g": {Kind: KindInt64, Ints: []int64{1}}}},
		{"non-minimal varints", func() []byte {
			features := fld(1, fld(1, []byte("z")), fld(2, fld(3)))
			// Tag 1/bytes in two bytes, the length in two bytes.
			return enc([]byte{0x8a, 0x00, 0x80 | byte(len(features)), 0x00}, features)
		}(), model{"z": {Kind: KindInt64}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := checkReference(t, tc.in)
			if !ok {
				t.Fatalf("both rejected:\n% x", tc.in)
			}
			if d := got.diff(tc.want); d != "" {
				t.Fatalf("got vs want: %s", d)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	good := ex(ent("a", fld(3, packedInts(1))))
	tests := []struct {
		name string
		in   []byte
		want string // in the error message
	}{
		{"truncated tag", []byte{0x80}, "offset 0"},
		{"field number 0", []byte{0x02, 0x00}, "bad tag"},
		{"field number too big", protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3|2), "out of range"},
		{"wire type 6", []byte{0x0e}, "offset 0"},
		{"wire type 7", []byte{0x0f}, "offset 0"},
		{"end group at top level", []byte{0x0c}, "offset 0"},
		{"unterminated group", []byte{0x2b, 0x08, 0x01}, "offset 0"},
		{"mismatched end group", []byte{0x2b, 0x34}, "offset 0"},
		{"length past end", []byte{0x0a, 0x05, 0x0a}, "features"},
		{"entry length past end", fld(1, []byte{0x0a, 0x09}), "features.feature"},
		{"varint overflow", enc(varintField(3, 0)[:1], bytes.Repeat([]byte{0xff}, 10), []byte{0x01}), "offset 0"},
		{"packed floats of 7 bytes", ex(ent("f", fld(2, fld(1, make([]byte, 7))))), `["f"].value.float_list.value`},
		{"truncated unpacked float", ex(ent("f", fld(2, fixed32Field(1, 0)[:3]))), "float_list"},
		{"truncated packed int", ex(ent("i", fld(3, fld(1, []byte{0x80})))), "int64_list"},
		{"overlong packed int", ex(ent("i", fld(3, fld(1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})))), "int64_list"},
		{"truncated unpacked int", ex(ent("i", fld(3, []byte{0x08, 0x80}))), "int64_list"},
		{"bad bytes value length", ex(ent("b", fld(1, []byte{0x0a, 0x03, 'x'}))), "bytes_list"},
		{"key not UTF-8", ex(ent("bad\xff", fld(3))), "UTF-8"},
		{"overridden key not UTF-8", ex(fld(1, fld(1, []byte("\xc3")), fld(1, []byte("ok")))), "UTF-8"},
		{"bad unknown field inside a list", ex(ent("u", fld(3, []byte{0x15, 0x00}))), "int64_list"},
		{"bad data in a replaced oneof", ex(ent("r", fld(2, fld(1, make([]byte, 3))), fld(1))), "float_list"},
		{"bad data in an overridden entry", enc(ex(ent("d", fld(3, fld(1, []byte{0x80})))), ex(ent("d", fld(3)))), "int64_list"},
		{"good then garbage", enc(good, []byte{0xff}), "offset"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, refErr := reference(t).decode(tc.in); refErr == nil {
				t.Fatalf("the reference accepts this input; the case is wrong")
			}
			e, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse accepted it: %d keys", e.Len())
			}
			if !errors.Is(err, ErrNotExample) {
				t.Fatalf("error %v does not match ErrNotExample", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

// TestParseEveryPrefix checks Parse and the reference agree on every prefix
// of a valid Example: cut inside a field both reject, at a field boundary
// both accept what is there.
func TestParseEveryPrefix(t *testing.T) {
	var bld Builder
	bld.AddBytes("steps/observation/image", []byte("jpeg-a"), []byte("jpeg-b"))
	bld.AddFloats("steps/action", 0.5, -1, 2)
	bld.AddInt64s("steps/is_first", 1, 0, 300)
	b := bld.Marshal()
	accepted := 0
	for cut := 0; cut <= len(b); cut++ {
		t.Run(fmt.Sprint("cut", cut), func(t *testing.T) {
			if _, ok := checkReference(t, b[:cut]); ok {
				accepted++
			}
		})
	}
	// The empty prefix and the whole message at least.
	if accepted < 2 {
		t.Fatalf("only %d prefixes accepted", accepted)
	}
}

func TestBuilder(t *testing.T) {
	tests := []struct {
		name  string
		build func(*Builder)
		want  model
	}{
		{"empty", func(*Builder) {}, model{}},
		{"all kinds", func(b *Builder) {
			b.AddBytes("img", []byte("a"), nil, bytes.Repeat([]byte("x"), 300))
			b.AddFloats("act", 1, float32(math.Inf(-1)))
			b.AddInt64s("n", -1, 0, math.MaxInt64)
		}, model{
			"img": {Kind: KindBytes, Bytes: [][]byte{[]byte("a"), {}, bytes.Repeat([]byte("x"), 300)}},
			"act": {Kind: KindFloat, Floats: floatBits([]float32{1, float32(math.Inf(-1))})},
			"n":   {Kind: KindInt64, Ints: []int64{-1, 0, math.MaxInt64}},
		}},
		{"empty lists keep their kind", func(b *Builder) {
			b.AddBytes("b")
			b.AddFloats("f")
			b.AddInt64s("i")
		}, model{"b": {Kind: KindBytes}, "f": {Kind: KindFloat}, "i": {Kind: KindInt64}}},
		{"a later Add replaces", func(b *Builder) {
			b.AddInt64s("k", 1)
			b.AddFloats("k", 2)
		}, model{"k": {Kind: KindFloat, Floats: floatBits([]float32{2})}}},
		{"empty key", func(b *Builder) { b.AddInt64s("", 3) }, model{"": {Kind: KindInt64, Ints: []int64{3}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b Builder
			tc.build(&b)
			out := b.Marshal()
			got, ok := checkReference(t, out)
			if !ok {
				t.Fatal("Builder output rejected by both")
			}
			if d := got.diff(tc.want); d != "" {
				t.Fatalf("got vs want: %s", d)
			}
			if !bytes.Equal(b.Marshal(), out) {
				t.Fatal("Marshal is not deterministic")
			}
			// Same bytes as the reference's deterministic marshalling.
			refOut, err := proto.MarshalOptions{Deterministic: true}.Marshal(reference(t).message(tc.want))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, refOut) {
				t.Errorf("Builder:   % x\nreference: % x", out, refOut)
			}
		})
	}
}

func TestBuilderOrderIndependent(t *testing.T) {
	var a, b Builder
	a.AddInt64s("x", 1)
	a.AddFloats("y", 2)
	b.AddFloats("y", 2)
	b.AddInt64s("x", 1)
	if !bytes.Equal(a.Marshal(), b.Marshal()) {
		t.Fatal("Marshal depends on insertion order")
	}
}

func TestAccessors(t *testing.T) {
	var bld Builder
	bld.AddBytes("img", []byte("first"), []byte("second"))
	bld.AddFloats("f", 1, 2)
	bld.AddInt64s("i", 7)
	bld.AddInt64s("b", 8)
	in := bld.Marshal()
	e, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Keys(); !slices.Equal(got, []string{"b", "f", "i", "img"}) {
		t.Fatalf("Keys = %q", got)
	}
	e.Keys()[0] = "changed"
	if e.Keys()[0] != "b" {
		t.Fatal("Keys returned the internal slice")
	}
	img, ok := e.Feature("img")
	if !ok || img.Kind() != KindBytes || img.Len() != 2 {
		t.Fatalf("img = %v %v %d", ok, img.Kind(), img.Len())
	}
	v := img.Bytes(0)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(in)))
	if p := uintptr(unsafe.Pointer(unsafe.SliceData(v))); p < start || p >= start+uintptr(len(in)) {
		t.Fatal("Bytes copied the value")
	}
	if cap(v) != len(v) {
		t.Fatalf("Bytes(0) has cap %d > len %d: an append would write over the input", cap(v), len(v))
	}
	f, _ := e.Feature("f")
	if got := f.AppendInt64s([]int64{9}); !slices.Equal(got, []int64{9}) {
		t.Fatalf("AppendInt64s on floats = %v", got)
	}
	if got := f.AppendBytes(nil); got != nil {
		t.Fatalf("AppendBytes on floats = %v", got)
	}
	if got := img.AppendFloats(nil); got != nil {
		t.Fatalf("AppendFloats on bytes = %v", got)
	}
	if got := f.AppendFloats([]float32{0}); !slices.Equal(got, []float32{0, 1, 2}) {
		t.Fatalf("AppendFloats = %v", got)
	}
	missing, ok := e.Feature("missing")
	if ok || missing.Kind() != KindNone || missing.Len() != 0 {
		t.Fatal("missing feature is not empty")
	}
	for _, tc := range []struct {
		name string
		f    Feature
		i    int
	}{
		{"negative", img, -1},
		{"past the end", img, 2},
		{"float feature", f, 0},
		{"zero feature", Feature{}, 0},
	} {
		t.Run("Bytes panics: "+tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tc.f.Bytes(tc.i)
		})
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindNone: "none", KindBytes: "bytes_list", KindFloat: "float_list", KindInt64: "int64_list", 9: "Kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", k, got, want)
		}
	}
}

// episode builds an RLDS-like episode Example of the given number of steps.
func episode(steps int) []byte {
	r := rand.New(rand.NewPCG(1, 1))
	var b Builder
	imgs := make([][]byte, steps)
	for i := range imgs {
		imgs[i] = make([]byte, 12<<10+r.IntN(6<<10)) // JPEG-sized
		for j := range imgs[i] {
			imgs[i][j] = byte(r.Uint32())
		}
	}
	b.AddBytes("steps/observation/image", imgs...)
	floats := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(r.NormFloat64())
		}
		return out
	}
	flags := func(first bool) []int64 {
		out := make([]int64, steps)
		if first {
			out[0] = 1
		} else {
			out[steps-1] = 1
		}
		return out
	}
	b.AddFloats("steps/action", floats(steps*7)...)
	b.AddFloats("steps/observation/state", floats(steps*8)...)
	b.AddFloats("steps/reward", floats(steps)...)
	b.AddFloats("steps/discount", floats(steps)...)
	b.AddFloats("steps/language_embedding", floats(steps*512)...)
	b.AddInt64s("steps/is_first", flags(true)...)
	b.AddInt64s("steps/is_last", flags(false)...)
	b.AddInt64s("steps/is_terminal", flags(false)...)
	lang := make([][]byte, steps)
	for i := range lang {
		lang[i] = []byte("pick up the red block and put it in the bowl")
	}
	b.AddBytes("steps/language_instruction", lang...)
	b.AddBytes("episode_metadata/file_path", []byte("/data/bridge/train/episode_000123.npy"))
	b.AddInt64s("episode_metadata/episode_id", 123)
	for i := range 10 {
		b.AddInt64s(fmt.Sprintf("steps/observation/extra_%02d", i), flags(i%2 == 0)...)
	}
	return b.Marshal()
}

// touchAll reads every value of every feature into reused buffers.
type touchAll struct {
	bs [][]byte
	fs []float32
	is []int64
	n  int
}

func (ta *touchAll) run(e *Example, keys []string) {
	for _, k := range keys {
		f, _ := e.Feature(k)
		switch f.Kind() {
		case KindBytes:
			for i := range f.Len() {
				ta.n += len(f.Bytes(i))
			}
			ta.bs = f.AppendBytes(ta.bs[:0])
		case KindFloat:
			ta.fs = f.AppendFloats(ta.fs[:0])
		case KindInt64:
			ta.is = f.AppendInt64s(ta.is[:0])
		}
	}
}

func TestParseAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items at random")
	}
	in := episode(60)
	e, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	keys := e.Keys()
	var ta touchAll
	ta.run(e, keys) // size the buffers
	allocs := testing.AllocsPerRun(100, func() {
		e, err := Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		ta.run(e, keys)
	})
	// Example, entries, offsets, key strings; accessors allocate nothing.
	if allocs > 4 {
		t.Fatalf("Parse and access: %.1f allocations, want at most 4", allocs)
	}
}

func BenchmarkParseEpisode(b *testing.B) {
	for _, steps := range []int{20, 60, 120} {
		in := episode(steps)
		e, err := Parse(in)
		if err != nil {
			b.Fatal(err)
		}
		keys := e.Keys()
		b.Run(fmt.Sprintf("steps=%d/parse", steps), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("steps=%d/parse+access", steps), func(b *testing.B) {
			var ta touchAll
			ta.run(e, keys)
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				e, err := Parse(in)
				if err != nil {
					b.Fatal(err)
				}
				ta.run(e, keys)
			}
		})
		b.Run(fmt.Sprintf("steps=%d/reference-dynamicpb", steps), func(b *testing.B) {
			rf := reference(b)
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rf.decode(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	var bld Builder
	bld.AddBytes("steps/observation/image", []byte("\xff\xd8\xff\xe0jpeg"), []byte{})
	bld.AddFloats("steps/action", 0.25, -1, float32(math.NaN()))
	bld.AddInt64s("steps/is_first", 1, 0, -5)
	f.Add(bld.Marshal())
	r := rand.New(rand.NewPCG(4, 4))
	for range 8 {
		var keys []string
		var feats []feat
		for range 1 + r.IntN(4) {
			keys, feats = append(keys, testKeys[r.IntN(len(testKeys))]), append(feats, randFeat(r))
		}
		f.Add(wire{r}.example(keys, feats))
	}
	f.Add([]byte{})
	f.Add(ex(ent("f", fld(2, fld(1, make([]byte, 7))))))
	f.Add(ex(ent("bad\xff", fld(3))))
	f.Add([]byte{0x2b, 0x08, 0x01, 0x2c})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, ok := checkReference(t, b); !ok {
			return
		}
		// Every accessor on every feature must not panic.
		e, _ := Parse(b)
		for _, k := range e.Keys() {
			ft, _ := e.Feature(k)
			ft.AppendBytes(nil)
			fs, is := ft.AppendFloats(nil), ft.AppendInt64s(nil)
			wf, wi := ft.AppendFloatsAsFloat64(nil), ft.AppendInt64sAsFloat64(nil)
			if len(wf) != len(fs) || len(wi) != len(is) {
				t.Fatalf("feature %q: %d floats, %d as float64; %d int64s, %d as float64", k, len(fs), len(wf), len(is), len(wi))
			}
		}
	})
}
