package cache

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/oxefs/oxefs/cache/example"
	"github.com/oxefs/oxefs/cache/tfds"
	"github.com/oxefs/oxefs/episode"
)

// Ref names one episode: the record-th record of shard Shard of Split.
type Ref = episode.Key

// Episode is one parsed RLDS episode. It is immutable and shared: the RAM
// cache hands the same *Episode to every reader, so nothing it returns may be
// modified.
//
// TFDS writes an episode as one tf.train.Example. Features inside the
// `steps` Dataset are flattened to keys such as "steps/observation/image" and
// stacked over steps: a bytes feature (image, text, encoded tensor) holds one
// value per step, a numeric tensor of shape S holds steps×prod(S) values,
// step-major.
type Episode struct {
	// ID is stable across runs and machines: dataset/split/shard/record.
	ID      string
	Dataset string
	Ref

	steps int
	ex    *example.Example
	specs *tfds.Features
	shard string // shard file name, for errors
	size  int    // bytes held, the RAM cache cost
}

// Steps returns the number of steps.
func (e *Episode) Steps() int { return e.steps }

// Size returns the bytes the episode holds in memory.
func (e *Episode) Size() int { return e.size }

// Keys returns the feature keys present in the record, sorted.
func (e *Episode) Keys() []string { return e.ex.Keys() }

func (e *Episode) corrupt(format string, args ...any) error {
	return &CorruptError{Dataset: e.Dataset, Shard: e.shard, Record: e.Record, Err: fmt.Errorf(format, args...)}
}

// Feature returns the view of one flattened feature. A key that features.json
// does not declare is an error naming the keys that exist; a declared key
// missing from the record, or with the wrong number of values, is a
// *CorruptError.
func (e *Episode) Feature(key string) (FeatureView, error) {
	spec, ok := e.specs.Lookup(key)
	if !ok {
		return FeatureView{}, &UnknownFeatureError{Dataset: e.Dataset, Key: key, Valid: featureKeys(e.specs)}
	}
	if spec.Ragged() {
		return FeatureView{}, fmt.Errorf("dataset %s: feature %q is a sequence inside each step (stored ragged); "+
			"oxefs reads per-step tensors, images and texts", e.Dataset, key)
	}
	f, ok := e.ex.Feature(key)
	if !ok {
		return FeatureView{}, e.corrupt("feature %q missing from the record", key)
	}
	v := FeatureView{Spec: spec, f: f, ep: e, per: valuesPerRow(spec)}
	rows := 1
	if spec.PerStep {
		rows = e.steps
	}
	if v.per >= 0 && f.Len() != rows*v.per {
		return FeatureView{}, e.corrupt("feature %q has %d values, want %d (%d rows of %v)",
			key, f.Len(), rows*v.per, rows, spec.Shape)
	}
	if v.per < 0 { // unknown dimension: only the total is known
		if rows == 0 || f.Len()%rows != 0 {
			return FeatureView{}, e.corrupt("feature %q has %d values, not a multiple of %d rows", key, f.Len(), rows)
		}
		v.per = f.Len() / max(rows, 1)
	}
	return v, nil
}

// FeatureView reads one feature of one episode.
type FeatureView struct {
	Spec tfds.Feature
	f    example.Feature
	ep   *Episode
	per  int
}

// Per returns the number of values per step (1 for byte-valued features).
func (v FeatureView) Per() int { return v.per }

// Bytes returns the step-th value of a byte-valued feature (an encoded image,
// a text, an encoded tensor); step is 0 for episode-level features. The slice
// is shared and must not be modified.
func (v FeatureView) Bytes(step int) []byte {
	return v.f.Bytes(step)
}

// Float64s appends every value of a numeric feature to dst, converted to
// float64, step-major: value i of step s is at s*Per()+i. Tensors stored
// with bytes or zlib encoding are decoded.
func (v FeatureView) Float64s(dst []float64) ([]float64, error) {
	switch v.f.Kind() {
	case example.KindFloat:
		for _, x := range v.f.AppendFloats(nil) {
			dst = append(dst, float64(x))
		}
		return dst, nil
	case example.KindInt64:
		vals := v.f.AppendInt64s(nil)
		for _, x := range vals {
			dst = append(dst, float64(x))
		}
		return dst, nil
	case example.KindBytes:
		if v.Spec.Encoding != "bytes" && v.Spec.Encoding != "zlib" {
			return dst, v.ep.corrupt("feature %q holds bytes, not numbers (dtype %s)", v.Spec.Key, v.Spec.DType)
		}
		var buf []byte
		for i := range v.f.Len() {
			raw, err := v.decodeTensorBytes(i, buf[:0])
			if err != nil {
				return dst, err
			}
			buf = raw
			if dst, err = appendRawTensor(dst, raw, v.Spec.DType); err != nil {
				return dst, v.ep.corrupt("feature %q step %d: %v", v.Spec.Key, i, err)
			}
		}
		return dst, nil
	}
	return dst, nil
}

// MaxTensorBytes bounds one decoded value of a bytes- or zlib-encoded
// tensor whose shape has an unknown dimension (a fixed shape bounds it by
// shape × dtype size): a zlib stream that inflates to more is corrupt, found
// without inflating past the bound.
const MaxTensorBytes = 64 << 20

// tensorBytes is the most bytes one value of an encoded tensor may decode
// to: its shape × dtype size when the shape is fixed, else MaxTensorBytes.
func tensorBytes(spec tfds.Feature) int {
	n, size := shapeElems(spec.Shape), dtypeSize(spec.DType)
	if n < 0 || size == 0 || n > MaxTensorBytes/size {
		return MaxTensorBytes
	}
	return n * size
}

// decodeTensorBytes returns the step-th value of an encoded tensor, raw
// (numpy tobytes()), inflating a zlib one into buf. Inflation stops one
// byte past tensorBytes, so a zlib bomb costs at most that much memory.
func (v FeatureView) decodeTensorBytes(i int, buf []byte) ([]byte, error) {
	b := v.f.Bytes(i)
	limit := tensorBytes(v.Spec)
	if v.Spec.Encoding != "zlib" {
		if len(b) > limit {
			return nil, v.ep.corrupt("feature %q step %d: %d bytes, more than %d (%v %s)", v.Spec.Key, i, len(b), limit, v.Spec.Shape, v.Spec.DType)
		}
		return b, nil
	}
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, v.ep.corrupt("feature %q step %d: zlib: %v", v.Spec.Key, i, err)
	}
	out := bytes.NewBuffer(buf)
	n, err := out.ReadFrom(io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, v.ep.corrupt("feature %q step %d: zlib: %v", v.Spec.Key, i, err)
	}
	if n > int64(limit) {
		return nil, v.ep.corrupt("feature %q step %d: zlib: inflates to more than %d bytes (%v %s)", v.Spec.Key, i, limit, v.Spec.Shape, v.Spec.DType)
	}
	return out.Bytes(), nil
}

// appendRawTensor decodes numpy tobytes() output (little-endian) of dtype.
func appendRawTensor(dst []float64, raw []byte, dtype string) ([]float64, error) {
	size := dtypeSize(dtype)
	if size == 0 {
		return dst, fmt.Errorf("cannot decode dtype %s", dtype)
	}
	if len(raw)%size != 0 {
		return dst, fmt.Errorf("%d bytes is not a whole number of %s values", len(raw), dtype)
	}
	le := binary.LittleEndian
	for o := 0; o < len(raw); o += size {
		var x float64
		switch dtype {
		case "float32":
			x = float64(math.Float32frombits(le.Uint32(raw[o:])))
		case "float64":
			x = math.Float64frombits(le.Uint64(raw[o:]))
		case "float16":
			x = float16(le.Uint16(raw[o:]))
		case "int8":
			x = float64(int8(raw[o]))
		case "uint8", "bool":
			x = float64(raw[o])
		case "int16":
			x = float64(int16(le.Uint16(raw[o:])))
		case "uint16":
			x = float64(le.Uint16(raw[o:]))
		case "int32":
			x = float64(int32(le.Uint32(raw[o:])))
		case "uint32":
			x = float64(le.Uint32(raw[o:]))
		case "int64":
			x = float64(int64(le.Uint64(raw[o:])))
		case "uint64":
			x = float64(le.Uint64(raw[o:]))
		}
		dst = append(dst, x)
	}
	return dst, nil
}

func dtypeSize(dtype string) int {
	switch dtype {
	case "int8", "uint8", "bool":
		return 1
	case "int16", "uint16", "float16":
		return 2
	case "int32", "uint32", "float32":
		return 4
	case "int64", "uint64", "float64":
		return 8
	}
	return 0
}

// float16 converts IEEE half precision bits.
func float16(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}

// Int64s appends every value of an integer feature stored as int64_list.
func (v FeatureView) Int64s(dst []int64) ([]int64, error) {
	if v.f.Kind() != example.KindInt64 {
		return dst, v.ep.corrupt("feature %q is not an int64 list (dtype %s)", v.Spec.Key, v.Spec.DType)
	}
	return v.f.AppendInt64s(dst), nil
}

func featureKeys(f *tfds.Features) []string {
	all := f.All()
	keys := make([]string, len(all))
	for i, x := range all {
		keys[i] = x.Key
	}
	return keys
}

// valuesPerRow is how many Example values one step (or the episode, for an
// episode-level feature) holds: one encoded blob for images, texts and
// bytes/zlib-encoded tensors, one value per element otherwise; -1 when the
// shape has an unknown dimension.
func valuesPerRow(f tfds.Feature) int {
	if f.Kind == tfds.KindImage || f.Kind == tfds.KindText || f.Encoding == "bytes" || f.Encoding == "zlib" {
		return 1
	}
	return shapeElems(f.Shape)
}

// shapeElems is the product of a shape's dimensions, or -1 when one is
// unknown.
func shapeElems(shape []int) int {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return -1
		}
		n *= d
	}
	return n
}

// stepCount derives the number of steps of a parsed episode from its
// per-step features: RLDS's is_first when present, else the first per-step
// feature whose per-step size is known.
func stepCount(ex *example.Example, specs *tfds.Features) (int, error) {
	try := func(spec tfds.Feature) (int, bool) {
		f, ok := ex.Feature(spec.Key)
		if !ok || spec.Ragged() {
			return 0, false
		}
		per := valuesPerRow(spec)
		if per <= 0 {
			return 0, false
		}
		if f.Len()%per != 0 {
			return 0, false
		}
		return f.Len() / per, true
	}
	if spec, ok := specs.Lookup("steps/is_first"); ok {
		if n, ok := try(spec); ok {
			return n, nil
		}
	}
	for _, spec := range specs.All() {
		if spec.PerStep {
			if n, ok := try(spec); ok {
				return n, nil
			}
		}
	}
	return 0, errors.New("no per-step feature in the record to count steps by")
}
