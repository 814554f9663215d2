package example

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// This file holds the reference: tensorflow/core/example/{feature,example}
// .proto rebuilt as descriptors at test time, decoded by the protobuf
// runtime through dynamicpb, and a plain model of an Example to compare.

// feat is a feature as plain values. Floats are kept as bits so that NaNs
// compare equal.
type feat struct {
	Kind   Kind
	Bytes  [][]byte
	Floats []uint32
	Ints   []int64
}

func (f feat) equal(g feat) bool {
	return f.Kind == g.Kind && slices.EqualFunc(f.Bytes, g.Bytes, func(a, b []byte) bool { return string(a) == string(b) }) &&
		slices.Equal(f.Floats, g.Floats) && slices.Equal(f.Ints, g.Ints)
}

func (f feat) String() string {
	switch f.Kind {
	case KindBytes:
		return fmt.Sprintf("bytes%q", f.Bytes)
	case KindFloat:
		return fmt.Sprintf("floats%x", f.Floats)
	case KindInt64:
		return fmt.Sprintf("ints%d", f.Ints)
	}
	return "none"
}

type model map[string]feat

// diff returns "" when m and o hold the same features, else a description.
func (m model) diff(o model) string {
	keys := func(x model) []string {
		var ks []string
		for k := range x {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	if mk, ok := keys(m), keys(o); !slices.Equal(mk, ok) {
		return fmt.Sprintf("keys %q vs %q", mk, ok)
	}
	for k, f := range m {
		if !f.equal(o[k]) {
			return fmt.Sprintf("feature %q: %v vs %v", k, f, o[k])
		}
	}
	return ""
}

// quietNaNs returns a copy of m with every NaN's quiet bit set.
func (m model) quietNaNs() model {
	out := model{}
	for k, f := range m {
		if f.Floats != nil {
			fs := slices.Clone(f.Floats)
			for i, x := range fs {
				if x&0x7f800000 == 0x7f800000 && x&0x7fffff != 0 {
					fs[i] = x | 0x400000
				}
			}
			f.Floats = fs
		}
		out[k] = f
	}
	return out
}

func floatBits(fs []float32) []uint32 {
	var out []uint32
	for _, f := range fs {
		out = append(out, math.Float32bits(f))
	}
	return out
}

// modelOf reads a parsed Example through its public API.
func modelOf(e *Example) model {
	m := model{}
	for _, k := range e.Keys() {
		f, ok := e.Feature(k)
		if !ok {
			panic("Keys lists " + k + " but Feature does not find it")
		}
		g := feat{Kind: f.Kind()}
		switch f.Kind() {
		case KindBytes:
			g.Bytes = f.AppendBytes(nil)
			for i := range f.Len() {
				if string(f.Bytes(i)) != string(g.Bytes[i]) {
					panic("Bytes and AppendBytes disagree")
				}
			}
		case KindFloat:
			fs := f.AppendFloats(nil)
			g.Floats = floatBits(fs)
			wide := f.AppendFloatsAsFloat64([]float64{-1})
			if len(wide) != len(fs)+1 || wide[0] != -1 {
				panic("AppendFloatsAsFloat64 did not append to dst")
			}
			for i, v := range fs {
				if math.Float64bits(wide[i+1]) != math.Float64bits(float64(v)) {
					panic("AppendFloats and AppendFloatsAsFloat64 disagree")
				}
			}
		case KindInt64:
			g.Ints = f.AppendInt64s(nil)
			wide := f.AppendInt64sAsFloat64([]float64{-1})
			if len(wide) != len(g.Ints)+1 || wide[0] != -1 {
				panic("AppendInt64sAsFloat64 did not append to dst")
			}
			for i, v := range g.Ints {
				if wide[i+1] != float64(v) {
					panic("AppendInt64s and AppendInt64sAsFloat64 disagree")
				}
			}
		}
		if n := len(g.Bytes) + len(g.Floats) + len(g.Ints); n != f.Len() {
			panic(fmt.Sprintf("feature %q: Len %d, %d values", k, f.Len(), n))
		}
		m[k] = g
	}
	return m
}

// ref holds the descriptors of the reference messages.
type ref struct {
	example, features, feature protoreflect.MessageDescriptor
	featureMap                 protoreflect.FieldDescriptor
	kind                       protoreflect.OneofDescriptor
}

var (
	refOnce sync.Once
	refDesc ref
	refErr  error
)

// reference builds (once) the tf.train.Example descriptors by hand, as
// protoc would from tensorflow/core/example/{feature,example}.proto.
func reference(tb testing.TB) ref {
	tb.Helper()
	refOnce.Do(func() { refDesc, refErr = buildReference() })
	if refErr != nil {
		tb.Fatalf("building reference descriptors: %v", refErr)
	}
	return refDesc
}

func buildReference() (ref, error) {
	s, i32 := proto.String, proto.Int32
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	typ := func(t descriptorpb.FieldDescriptorProto_Type) *descriptorpb.FieldDescriptorProto_Type {
		return t.Enum()
	}
	packed := &descriptorpb.FieldOptions{Packed: proto.Bool(true)}
	list := func(name string, t descriptorpb.FieldDescriptorProto_Type, o *descriptorpb.FieldOptions) *descriptorpb.DescriptorProto {
		return &descriptorpb.DescriptorProto{
			Name:  s(name),
			Field: []*descriptorpb.FieldDescriptorProto{{Name: s("value"), JsonName: s("value"), Number: i32(1), Label: rep, Type: typ(t), Options: o}},
		}
	}
	oneofField := func(name, json, msg string, num int32) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{
			Name: s(name), JsonName: s(json), Number: i32(num), Label: opt,
			Type: typ(descriptorpb.FieldDescriptorProto_TYPE_MESSAGE), TypeName: s(".tensorflow." + msg), OneofIndex: i32(0),
		}
	}
	featureFile := &descriptorpb.FileDescriptorProto{
		Name:    s("tensorflow/core/example/feature.proto"),
		Package: s("tensorflow"),
		Syntax:  s("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			list("BytesList", descriptorpb.FieldDescriptorProto_TYPE_BYTES, nil),
			list("FloatList", descriptorpb.FieldDescriptorProto_TYPE_FLOAT, packed),
			list("Int64List", descriptorpb.FieldDescriptorProto_TYPE_INT64, packed),
			{
				Name: s("Feature"),
				Field: []*descriptorpb.FieldDescriptorProto{
					oneofField("bytes_list", "bytesList", "BytesList", 1),
					oneofField("float_list", "floatList", "FloatList", 2),
					oneofField("int64_list", "int64List", "Int64List", 3),
				},
				OneofDecl: []*descriptorpb.OneofDescriptorProto{{Name: s("kind")}},
			},
			{
				Name: s("Features"),
				Field: []*descriptorpb.FieldDescriptorProto{{
					Name: s("feature"), JsonName: s("feature"), Number: i32(1), Label: rep,
					Type: typ(descriptorpb.FieldDescriptorProto_TYPE_MESSAGE), TypeName: s(".tensorflow.Features.FeatureEntry"),
				}},
				NestedType: []*descriptorpb.DescriptorProto{{
					Name: s("FeatureEntry"),
					Field: []*descriptorpb.FieldDescriptorProto{
						{Name: s("key"), JsonName: s("key"), Number: i32(1), Label: opt, Type: typ(descriptorpb.FieldDescriptorProto_TYPE_STRING)},
						{Name: s("value"), JsonName: s("value"), Number: i32(2), Label: opt, Type: typ(descriptorpb.FieldDescriptorProto_TYPE_MESSAGE), TypeName: s(".tensorflow.Feature")},
					},
					Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
				}},
			},
		},
	}
	exampleFile := &descriptorpb.FileDescriptorProto{
		Name:       s("tensorflow/core/example/example.proto"),
		Package:    s("tensorflow"),
		Syntax:     s("proto3"),
		Dependency: []string{"tensorflow/core/example/feature.proto"},
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: s("Example"),
			Field: []*descriptorpb.FieldDescriptorProto{{
				Name: s("features"), JsonName: s("features"), Number: i32(1), Label: opt,
				Type: typ(descriptorpb.FieldDescriptorProto_TYPE_MESSAGE), TypeName: s(".tensorflow.Features"),
			}},
		}},
	}
	files := new(protoregistry.Files)
	fd, err := protodesc.NewFile(featureFile, files)
	if err != nil {
		return ref{}, err
	}
	if err := files.RegisterFile(fd); err != nil {
		return ref{}, err
	}
	ed, err := protodesc.NewFile(exampleFile, files)
	if err != nil {
		return ref{}, err
	}
	r := ref{
		example:  ed.Messages().ByName("Example"),
		features: fd.Messages().ByName("Features"),
		feature:  fd.Messages().ByName("Feature"),
	}
	r.featureMap = r.features.Fields().ByName("feature")
	r.kind = r.feature.Oneofs().ByName("kind")
	if !r.featureMap.IsMap() || r.kind == nil {
		return ref{}, fmt.Errorf("descriptors are not as expected")
	}
	return r, nil
}

// errRefPanic reports that the reference runtime panicked. protobuf-go
// v1.36.12 does so in its reflective decoder (the one dynamicpb uses,
// proto/decode.go unmarshalMap) on a map entry whose key field comes twice,
// first valid and then with a wrong wire type: the second overwrites the
// parsed key with an invalid Value, and mapv.Set panics with "type
// mismatch: cannot convert nil to map key". The wire format says to skip
// such a field as unknown, which is what Parse does; tests that meet this
// case compare Parse with their own expectations only.
var errRefPanic = errors.New("reference runtime panicked")

// decode unmarshals b with the protobuf runtime and returns its model.
func (r ref) decode(b []byte) (_ model, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errRefPanic, p)
		}
	}()
	m := dynamicpb.NewMessage(r.example)
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, err
	}
	out := model{}
	fs := m.Get(r.example.Fields().ByName("features")).Message()
	fs.Get(r.featureMap).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		fm := v.Message()
		var f feat
		if which := fm.WhichOneof(r.kind); which != nil {
			f.Kind = Kind(which.Number())
			l := fm.Get(which).Message()
			vals := l.Get(l.Descriptor().Fields().ByNumber(1)).List()
			for i := range vals.Len() {
				switch f.Kind {
				case KindBytes:
					f.Bytes = append(f.Bytes, vals.Get(i).Bytes())
				case KindFloat:
					f.Floats = append(f.Floats, math.Float32bits(float32(vals.Get(i).Float())))
				case KindInt64:
					f.Ints = append(f.Ints, vals.Get(i).Int())
				}
			}
		}
		out[k.String()] = f
		return true
	})
	return out, nil
}

// message builds a reference message from a model, for proto.Marshal.
func (r ref) message(m model) *dynamicpb.Message {
	ex := dynamicpb.NewMessage(r.example)
	fsd := r.example.Fields().ByName("features")
	fs := ex.Mutable(fsd).Message()
	mp := fs.Mutable(r.featureMap).Map()
	for k, f := range m {
		fv := mp.NewValue()
		if f.Kind != KindNone {
			fd := r.feature.Fields().ByNumber(protoreflect.FieldNumber(f.Kind))
			l := fv.Message().Mutable(fd).Message()
			vals := l.Mutable(l.Descriptor().Fields().ByNumber(1)).List()
			for _, b := range f.Bytes {
				vals.Append(protoreflect.ValueOfBytes(b))
			}
			for _, x := range f.Floats {
				vals.Append(protoreflect.ValueOfFloat32(math.Float32frombits(x)))
			}
			for _, x := range f.Ints {
				vals.Append(protoreflect.ValueOfInt64(x))
			}
		}
		mp.Set(protoreflect.ValueOfString(k).MapKey(), fv)
	}
	return ex
}
