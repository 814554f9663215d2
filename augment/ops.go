package augment

// ops is the table of the augmentation ops that are none of the fused
// stages, in the order they are applied, after the colour ops: one line
// per op, its Op, described in its own file op_<name>.go (see Op), such
// as
//
//	opInvert, // op_invert.go
//
// The ops' recorded columns follow the fused stages' in the table's
// order, so a line added at the end moves no existing column. The table
// is empty today: every op the presets use is a fused stage (spec.go).
var ops = []Op{}
