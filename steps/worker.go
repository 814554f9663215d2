package steps

import "github.com/oxefs/oxefs/frames"

// Worker is what one worker goroutine brings to Assembler.Build: a
// frames.Decoder (borrowed: the caller closes it) and the scratch reused
// from sample to sample. It is not safe for concurrent use.
type Worker struct {
	dec *frames.Decoder

	// scratch
	idx       []int
	steps     []int
	one       []int
	floats    []float64
	row       []float64
	chunk     []float64
	text      []byte
	scratch   []byte
	want      []position
	owned     []*claim
	ownedKeys []frameKey
	images    frames.Images
	video     frames.Video

	decoded int64
}

// NewWorker returns a worker that decodes with d; it does not own d.
func NewWorker(d *frames.Decoder) *Worker { return &Worker{dec: d} }

// Decoded is the number of frames the worker has decoded.
func (w *Worker) Decoded() int64 { return w.decoded }

// Footprint is the bytes the worker's reusable buffers hold, its decoder's
// left out (its owner counts it).
func (w *Worker) Footprint() int {
	return cap(w.scratch) + cap(w.text) + 8*(cap(w.floats)+cap(w.row)+cap(w.chunk)+cap(w.idx)+cap(w.steps))
}
