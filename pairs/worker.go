package pairs

import "github.com/oxefs/oxefs/sample"

// Worker is what one worker goroutine brings to Assembler.Build: the
// scratch that is reused from sample to sample (frame indices, metadata
// values, the frame request), so that building allocates nothing per
// frame in steady state. Its frames are decoded by the worker's
// sample.FrameWorker. It is not safe for concurrent use: make one per
// worker goroutine.
type Worker struct {
	idx    []int
	floats []float64
	text   []byte
	req    [1]sample.Request
}

// NewWorker returns a worker's scratch.
func NewWorker() *Worker { return &Worker{} }

// Footprint is the bytes the worker's reusable buffers hold.
func (w *Worker) Footprint() int {
	return cap(w.text) + 8*cap(w.floats) + 8*cap(w.idx)
}
