package rlds

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/format/rlds/example"
	"github.com/oxefs/oxefs/format/rlds/tfds"
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
	id      string // dataset/split/shard/record, stable across runs and machines
	dataset string
	key     episode.Key

	steps int
	ex    *example.Example
	specs *tfds.Features
	// views holds one view per declared feature, in specs order, made once
	// at load so that Feature hands out a pointer without allocating. A
	// view's feature is the zero example.Feature when the record lacks it.
	views   []view
	neutral []episode.Feature // specs converted, in specs order
	shard   string            // shard file name, for errors
	size    int               // bytes held, the RAM cache cost
	rec     *record           // the buffer ex points into, shared by renamed copies; nil: not pooled
}

var _ episode.Recycled = (*Episode)(nil)

// newEpisode wraps a parsed record; specs and neutral list the dataset's
// features in the same order.
func newEpisode(id, dataset string, key episode.Key, steps int, ex *example.Example, specs *tfds.Features, neutral []episode.Feature, shard string, size int) *Episode {
	e := &Episode{id: id, dataset: dataset, key: key, steps: steps, ex: ex, specs: specs, neutral: neutral, shard: shard, size: size}
	e.makeViews()
	return e
}

func (e *Episode) makeViews() {
	all := e.specs.All()
	e.views = make([]view, len(all))
	for i, spec := range all {
		f, ok := e.ex.Feature(spec.Key)
		e.views[i] = view{spec: spec, f: f, present: ok, ep: e, per: valuesPerRow(spec), neutral: &e.neutral[i]}
	}
}

// ID is dataset/split/shard/record.
func (e *Episode) ID() string { return e.id }

// Dataset is the name of the dataset the episode was loaded for.
func (e *Episode) Dataset() string { return e.dataset }

// Key names the episode within its dataset.
func (e *Episode) Key() episode.Key { return e.key }

// Steps returns the number of steps.
func (e *Episode) Steps() int { return e.steps }

// Size returns the bytes the episode holds in memory.
func (e *Episode) Size() int { return e.size }

// Keys returns the feature keys present in the record, sorted.
func (e *Episode) Keys() []string { return e.ex.Keys() }

// Rename returns the episode under another dataset's name, sharing the
// parsed record.
func (e *Episode) Rename(dataset string) episode.Episode {
	c := *e
	c.dataset = dataset
	c.id = dataset + "/" + e.key.Split + "/" + strconv.Itoa(e.key.Shard) + "/" + strconv.Itoa(e.key.Record)
	// The views are e's, found once at load; only their owner changes.
	c.views = slices.Clone(e.views)
	for i := range c.views {
		c.views[i].ep = &c
	}
	return &c
}

// Corrupt wraps err in a *episode.CorruptError naming the episode's shard and record.
func (e *Episode) Corrupt(err error) error {
	return &episode.CorruptError{Dataset: e.dataset, Shard: e.shard, Record: e.key.Record, Err: err}
}

func (e *Episode) corrupt(format string, args ...any) error {
	return e.Corrupt(fmt.Errorf(format, args...))
}

// Feature returns the view of one flattened feature. A key that features.json
// does not declare is an error naming the keys that exist; a declared key
// missing from the record, or with the wrong number of values, is a
// *episode.CorruptError.
func (e *Episode) Feature(key string) (episode.View, error) {
	i, ok := e.specs.Index(key)
	if !ok {
		return nil, &episode.UnknownFeatureError{Dataset: e.dataset, Key: key, Valid: e.specs.Keys()}
	}
	v := &e.views[i]
	spec := v.spec
	if spec.Ragged() {
		return nil, fmt.Errorf("dataset %s: feature %q is a sequence inside each step (stored ragged); "+
			"oxefs reads per-step tensors, images and texts", e.dataset, key)
	}
	if !v.present {
		return nil, e.corrupt("feature %q missing from the record", key)
	}
	rows := 1
	if spec.PerStep {
		rows = e.steps
	}
	n := v.f.Len()
	if v.per >= 0 && n != rows*v.per {
		return nil, e.corrupt("feature %q has %d values, want %d (%d rows of %v)",
			key, n, rows*v.per, rows, spec.Shape)
	}
	if v.per < 0 { // unknown dimension: only the total is known
		if rows == 0 || n%rows != 0 {
			return nil, e.corrupt("feature %q has %d values, not a multiple of %d rows", key, n, rows)
		}
		return &unknownPer{view: v, per: n / max(rows, 1)}, nil
	}
	return v, nil
}

// view reads one feature of one episode.
type view struct {
	spec    tfds.Feature
	neutral *episode.Feature
	f       example.Feature
	present bool
	ep      *Episode
	per     int // -1: the shape has an unknown dimension (see unknownPer)
}

// unknownPer is a view of a feature whose shape has an unknown dimension:
// its values per step are known only once the record's total is.
type unknownPer struct {
	*view
	per int
}

func (u *unknownPer) Per() int { return u.per }

// Spec describes the feature.
func (v *view) Spec() episode.Feature { return *v.neutral }

// Per returns the number of values per step (1 for byte-valued features).
func (v *view) Per() int { return v.per }

// Bytes returns the step-th value of a byte-valued feature (an encoded image,
// a text, an encoded tensor); step is 0 for episode-level features. The slice
// is shared and must not be modified.
func (v *view) Bytes(step int) []byte {
	return v.f.Bytes(step)
}

// Float64s appends every value of a numeric feature to dst, converted to
// float64, step-major: value i of step s is at s*Per()+i. Tensors stored
// with bytes or zlib encoding are decoded.
func (v *view) Float64s(dst []float64) ([]float64, error) {
	switch v.f.Kind() {
	case example.KindFloat:
		return v.f.AppendFloatsAsFloat64(dst), nil
	case example.KindInt64:
		return v.f.AppendInt64sAsFloat64(dst), nil
	case example.KindBytes:
		if v.spec.Encoding != "bytes" && v.spec.Encoding != "zlib" {
			return dst, v.ep.corrupt("feature %q holds bytes, not numbers (dtype %s)", v.spec.Key, v.spec.DType)
		}
		var buf []byte
		for i := range v.f.Len() {
			raw, err := v.decodeTensorBytes(i, buf[:0])
			if err != nil {
				return dst, err
			}
			buf = raw
			if dst, err = appendRawTensor(dst, raw, v.spec.DType); err != nil {
				return dst, v.ep.corrupt("feature %q step %d: %v", v.spec.Key, i, err)
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
func (v *view) decodeTensorBytes(i int, buf []byte) ([]byte, error) {
	b := v.f.Bytes(i)
	limit := tensorBytes(v.spec)
	if v.spec.Encoding != "zlib" {
		if len(b) > limit {
			return nil, v.ep.corrupt("feature %q step %d: %d bytes, more than %d (%v %s)", v.spec.Key, i, len(b), limit, v.spec.Shape, v.spec.DType)
		}
		return b, nil
	}
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, v.ep.corrupt("feature %q step %d: zlib: %v", v.spec.Key, i, err)
	}
	out := bytes.NewBuffer(buf)
	n, err := out.ReadFrom(io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, v.ep.corrupt("feature %q step %d: zlib: %v", v.spec.Key, i, err)
	}
	if n > int64(limit) {
		return nil, v.ep.corrupt("feature %q step %d: zlib: inflates to more than %d bytes (%v %s)", v.spec.Key, i, limit, v.spec.Shape, v.spec.DType)
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
func (v *view) Int64s(dst []int64) ([]int64, error) {
	if v.f.Kind() != example.KindInt64 {
		return dst, v.ep.corrupt("feature %q is not an int64 list (dtype %s)", v.spec.Key, v.spec.DType)
	}
	return v.f.AppendInt64s(dst), nil
}

// valuesPerRow is how many Example values one step (or the episode, for an
// episode-level feature) holds: one encoded blob for images, texts and
// bytes/zlib-encoded tensors, one value per element otherwise; -1 when the
// shape has an unknown dimension.
func valuesPerRow(f tfds.Feature) int {
	if f.Kind == episode.KindImage || f.Kind == episode.KindText || f.Encoding == "bytes" || f.Encoding == "zlib" {
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

// neutralFeatures converts a dataset's TFDS features to the neutral model,
// in the same order.
func neutralFeatures(specs *tfds.Features) []episode.Feature {
	all := specs.All()
	out := make([]episode.Feature, len(all))
	for i, f := range all {
		out[i] = episode.Feature{
			Key: f.Key, Kind: f.Kind, DType: f.DType, Shape: f.Shape, Encoding: f.Encoding,
			PerStep: f.PerStep, Ragged: f.Ragged(), Class: f.Class, NumClasses: f.NumClasses,
		}
	}
	return out
}
