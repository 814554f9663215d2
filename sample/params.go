package sample

import "github.com/oxefs/oxefs/plan"

// Params are one claim's transform parameters: what augmentation drew for
// a (sample, camera slot). The stage does not look inside them: two
// requests share a decode only if their Params are equal (==), and the
// FrameDecoder is given them to apply. They must be comparable; nil is
// the identity.
type Params any

// Transformer draws Params for camera slot k of sample i of batch n of a
// view, s being the sample the plan put there (its Key is the sample's
// own keyed draw; a substitute built in its place keeps these Params).
// Pairs have one slot, 0. It must be a pure function of its arguments and
// its own configuration (the seed), so that batch n stays a function of
// (config, seed, n), and safe for concurrent use.
type Transformer interface {
	Params(n int64, i int, s plan.Sample, k int) Params
}

// Identity is the Transformer that draws nothing: frames are decoded and
// resized as they are.
type Identity struct{}

// Params returns nil, the identity.
func (Identity) Params(int64, int, plan.Sample, int) Params { return nil }
