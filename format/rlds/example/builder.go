package example

import (
	"encoding/binary"
	"math"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// Builder assembles a tf.train.Example, for tests and `oxefs synth`. The
// zero Builder is empty and ready to use. Adding a key that is already
// present replaces its feature, as in a proto map.
type Builder struct {
	feats map[string]bfeature
}

type bfeature struct {
	kind   Kind
	bytes  [][]byte
	floats []float32
	ints   []int64
}

func (b *Builder) set(key string, f bfeature) {
	if b.feats == nil {
		b.feats = make(map[string]bfeature)
	}
	b.feats[key] = f
}

// AddBytes sets key to a bytes_list of vals. The list is copied; the byte
// slices themselves are referenced until Marshal.
func (b *Builder) AddBytes(key string, vals ...[]byte) {
	b.set(key, bfeature{kind: KindBytes, bytes: slices.Clone(vals)})
}

// AddFloats sets key to a float_list of vals.
func (b *Builder) AddFloats(key string, vals ...float32) {
	b.set(key, bfeature{kind: KindFloat, floats: slices.Clone(vals)})
}

// AddInt64s sets key to an int64_list of vals.
func (b *Builder) AddInt64s(key string, vals ...int64) {
	b.set(key, bfeature{kind: KindInt64, ints: slices.Clone(vals)})
}

// listSize returns the size of the feature's list message body, encoded as
// protobuf-go encodes it: repeated scalars packed, an empty packed field
// left out.
func (f bfeature) listSize() int {
	switch f.kind {
	case KindBytes:
		n := 0
		for _, v := range f.bytes {
			n += 1 + protowire.SizeBytes(len(v))
		}
		return n
	case KindFloat:
		if len(f.floats) == 0 {
			return 0
		}
		return 1 + protowire.SizeBytes(4*len(f.floats))
	default:
		if len(f.ints) == 0 {
			return 0
		}
		return 1 + protowire.SizeBytes(f.packedInts())
	}
}

func (f bfeature) packedInts() int {
	n := 0
	for _, v := range f.ints {
		n += protowire.SizeVarint(uint64(v))
	}
	return n
}

func (f bfeature) appendList(dst []byte) []byte {
	switch f.kind {
	case KindBytes:
		for _, v := range f.bytes {
			dst = protowire.AppendTag(dst, 1, protowire.BytesType)
			dst = protowire.AppendBytes(dst, v)
		}
	case KindFloat:
		if len(f.floats) == 0 {
			return dst
		}
		dst = protowire.AppendTag(dst, 1, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(4*len(f.floats)))
		for _, v := range f.floats {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
		}
	default:
		if len(f.ints) == 0 {
			return dst
		}
		dst = protowire.AppendTag(dst, 1, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(f.packedInts()))
		for _, v := range f.ints {
			dst = protowire.AppendVarint(dst, uint64(v))
		}
	}
	return dst
}

// Marshal returns the serialized Example: keys in sorted order, repeated
// scalars packed, every entry with its key and value written out. The
// output is the same for the same features.
func (b *Builder) Marshal() []byte {
	keys := make([]string, 0, len(b.feats))
	for k := range b.feats {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	// Sizes first, so the output is allocated once.
	sizes := make([]struct{ list, feature, entry int }, len(keys))
	features := 0
	for i, k := range keys {
		s := &sizes[i]
		s.list = b.feats[k].listSize()
		s.feature = 1 + protowire.SizeBytes(s.list)
		s.entry = 1 + protowire.SizeBytes(len(k)) + 1 + protowire.SizeBytes(s.feature)
		features += 1 + protowire.SizeBytes(s.entry)
	}
	out := make([]byte, 0, 1+protowire.SizeBytes(features))
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	out = protowire.AppendVarint(out, uint64(features))
	for i, k := range keys {
		f, s := b.feats[k], sizes[i]
		out = protowire.AppendTag(out, 1, protowire.BytesType) // Features.feature
		out = protowire.AppendVarint(out, uint64(s.entry))
		out = protowire.AppendTag(out, 1, protowire.BytesType) // key
		out = protowire.AppendString(out, k)
		out = protowire.AppendTag(out, 2, protowire.BytesType) // value
		out = protowire.AppendVarint(out, uint64(s.feature))
		out = protowire.AppendTag(out, protowire.Number(f.kind), protowire.BytesType)
		out = protowire.AppendVarint(out, uint64(s.list))
		out = f.appendList(out)
	}
	return out
}
