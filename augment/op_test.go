package augment

import (
	"slices"
	"strings"
	"testing"

	"github.com/oxefs/oxefs/frames"
)

// testOp is a well-formed op of one column, for the registry's tests.
func testOp(name string) Op {
	return Op{
		Name:     name,
		OK:       func(r Range) bool { return r.Lo >= 0 && r.Hi <= 1 },
		Valid:    "[lo, hi] within [0, 1]",
		Columns:  []Column{{Name: name, Meaning: "a test op's value"}},
		Identity: []float32{0},
		Draw: func(r Range, rand Rand) (v [frames.FrameOpValues]float32) {
			v[0] = float32(rand.Uniform(0, r.Lo, r.Hi))
			return v
		},
		Apply: func(frames.Frame, *[frames.FrameOpValues]float32) {},
	}
}

// TestRegisterRefuses: an op whose name is taken or that lacks a part is
// refused at registration, naming why.
func TestRegisterRefuses(t *testing.T) {
	t.Cleanup(Register(testOp("first")))
	noDraw := testOp("nodraw")
	noDraw.Draw = nil
	wide := testOp("wide")
	wide.Columns = make([]Column, frames.FrameOpValues+1)
	for _, tc := range []struct {
		name string
		op   Op
		want string
	}{
		{"a fused stage's key", testOp(FieldHue), "taken"},
		{"a setting's key", testOp("shared"), "taken"},
		{"registered twice", testOp("first"), "taken"},
		{"no name", testOp(""), "without a name"},
		{"no draw", noDraw, "required"},
		{"too many columns", wide, "columns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), tc.want) {
					t.Errorf("Register panicked with %v, want a message with %q", r, tc.want)
				}
			}()
			Register(tc.op)
		})
	}
}

// TestRegisteredOpSpec: a registered op is a key, an op name and columns
// after the fused stages'; its range is checked; taking it out restores
// the table, and without registered ops a row is exactly Vector.
func TestRegisteredOpSpec(t *testing.T) {
	p := Draw(mustPreset(t, "lerobot"), 3, 4, 5, Camera{Slot: 1})
	if row := p.Row(nil); !slices.Equal(row, func() []float32 { v := p.Vector(); return v[:] }()) || Width() != NumColumns {
		t.Fatalf("without registered ops the row %v is not Vector", row)
	}
	undo := Register(testOp("blur"))
	if !slices.Contains(Keys(), "blur") || !slices.Contains(OpNames(), "blur") || Width() != NumColumns+1 || Columns()[NumColumns] != "blur" || ColumnDoc()[NumColumns] != "a test op's value" {
		t.Fatalf("the op is not in Keys, OpNames, Width or Columns: %v", Columns())
	}
	i, _, _ := LookupOp("blur")
	var s Spec
	s.Ops[i] = Range{0.2, 1.5}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "augment blur [0.2, 1.5] is not valid (valid: [lo, hi] within [0, 1])") {
		t.Errorf("Validate: %v", err)
	}
	s.Ops[i] = Range{0.2, 0.4}
	if err := s.Validate(); err != nil || !s.Enabled() {
		t.Errorf("Validate: %v, Enabled %v", err, s.Enabled())
	}
	undo()
	if slices.Contains(Keys(), "blur") || Width() != NumColumns {
		t.Fatalf("the op is still registered: %v", Keys())
	}
}

// mustPreset is Preset for a name the test knows exists.
func mustPreset(t *testing.T, name string) Spec {
	t.Helper()
	s, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
