package augment

import (
	"fmt"
	"math"
	"slices"

	"github.com/oxefs/oxefs/frames"
	"github.com/oxefs/oxefs/keyed"
)

// Op is an augmentation op that is none of the fused stages (the crop box
// and affine fused into the resize, the colour chain): one file,
// op_<name>.go, describes it, and one line of the table in ops.go
// registers it. From the Op alone a config reads its key and checks its
// domain, Draw draws its values, a batch records them as columns and
// info.json says what they mean, and frames applies it to every frame of
// the camera after the colour ops, in the table's order.
type Op struct {
	// Name is the op's key in an augment block and its field in errors.
	Name string
	// Single turns one number x, written alone in the config, into the
	// op's range (as Jitter and Symmetric do); nil: only [lo, hi].
	Single func(x float64) Range
	// OK reports whether a configured range is in the op's domain (it is
	// given finite numbers); Valid says what the domain is, for the error.
	OK    func(r Range) bool
	Valid string
	// Geometric: the op moves pixels, so wrist cameras skip it under
	// wrist_colour_only.
	Geometric bool
	// Columns name the op's values as a batch records them (at most
	// frames.FrameOpValues), each with its meaning for info.json.
	Columns []Column
	// Identity holds the values that change nothing, one per column:
	// what is recorded when the op is not drawn.
	Identity []float32
	// Draw returns the values of one (sample, camera), one per column
	// (the rest 0), for the configured range r, drawing from rand only.
	Draw func(r Range, rand Rand) [frames.FrameOpValues]float32
	// Apply changes one frame, at the slot's size, in place.
	Apply func(f frames.Frame, v *[frames.FrameOpValues]float32)
}

// Column is one recorded parameter column: its name and what it holds.
type Column struct{ Name, Meaning string }

// Rand is an op's own keyed random source for one (sample, camera): its
// draws depend on the op's name and the camera's key, never on the other
// ops, so registering an op moves no other parameter.
type Rand struct{ key uint64 }

// Float returns stream i's number, uniform in [0, 1).
func (r Rand) Float(i int) float64 { return keyed.Float(r.key, uint64(i)) }

// Uniform returns stream i's number, uniform in [lo, hi].
func (r Rand) Uniform(i int, lo, hi float64) float64 { return uniform(r.key, uint64(i), lo, hi) }

// MaxOps is how many ops the table may hold (Spec.Ops and Params hold a
// fixed array of them, so that Params stay comparable).
const MaxOps = 8

// Ops returns the registered ops, in the order they are applied.
func Ops() []Op { return slices.Clone(ops) }

// Register adds op to the table, after the ops already there; it panics
// on an op that is not well formed or whose name is taken. It is for
// init time (ops.go's table) and tests: it returns the function that
// takes the op out again, for a test's cleanup. Neither may run while
// configs are parsed or batches built.
func Register(op Op) (unregister func()) {
	if err := checkOp(op); err != nil {
		panic("augment: " + err.Error())
	}
	ops = append(ops, op)
	return func() {
		i := slices.IndexFunc(ops, func(o Op) bool { return o.Name == op.Name })
		if i >= 0 {
			ops = slices.Delete(ops, i, i+1)
		}
	}
}

// checkOp reports an op that cannot be registered.
func checkOp(op Op) error {
	switch {
	case op.Name == "":
		return fmt.Errorf("an op without a name")
	case slices.Contains(builtinKeys, op.Name) || slices.ContainsFunc(ops, func(o Op) bool { return o.Name == op.Name }):
		return fmt.Errorf("op %q: the name is taken", op.Name)
	case len(ops) >= MaxOps:
		return fmt.Errorf("op %q: the table holds %d ops at most (MaxOps)", op.Name, MaxOps)
	case len(op.Columns) == 0 || len(op.Columns) > frames.FrameOpValues:
		return fmt.Errorf("op %q: %d columns, want 1 to %d", op.Name, len(op.Columns), frames.FrameOpValues)
	case len(op.Identity) != len(op.Columns):
		return fmt.Errorf("op %q: %d identity values for %d columns", op.Name, len(op.Identity), len(op.Columns))
	case op.OK == nil || op.Valid == "" || op.Draw == nil || op.Apply == nil:
		return fmt.Errorf("op %q: OK, Valid, Draw and Apply are required", op.Name)
	}
	return nil
}

// LookupOp returns the index in the table (that of Spec.Ops) and the op
// of a config key.
func LookupOp(name string) (int, Op, bool) {
	i := slices.IndexFunc(ops, func(o Op) bool { return o.Name == name })
	if i < 0 {
		return -1, Op{}, false
	}
	return i, ops[i], true
}

// validateOps reports the first configured op whose range is outside its
// domain.
func (s Spec) validateOps() error {
	for i, op := range ops {
		r := s.Ops[i]
		if !r.on() {
			continue
		}
		finite := !math.IsNaN(r.Lo) && !math.IsNaN(r.Hi) && !math.IsInf(r.Lo, 0) && !math.IsInf(r.Hi, 0)
		if !finite || r.Lo > r.Hi || !op.OK(r) {
			return fieldErr(op.Name, r, op.Valid)
		}
	}
	for i := len(ops); i < MaxOps; i++ {
		if s.Ops[i].on() {
			return fieldErr("op", i, fmt.Sprintf("one of the %d registered ops", len(ops)))
		}
	}
	return nil
}

// opsOn reports whether s configures a registered op.
func (s Spec) opsOn() bool { return s.Ops != [MaxOps]Range{} }

// drawOps draws the configured ops of one camera with key into p.
func (s Spec) drawOps(p *Params, key uint64, geometry bool) {
	for i, op := range ops {
		r := s.Ops[i]
		if !r.on() || (op.Geometric && !geometry) {
			continue
		}
		v := op.Draw(r, Rand{keyed.Hash(key, keyed.String(op.Name))})
		clear(v[len(op.Columns):])
		if !slices.Equal(v[:len(op.Columns)], op.Identity) {
			p.Op[i] = v
			p.opOn |= 1 << i
		}
	}
}
