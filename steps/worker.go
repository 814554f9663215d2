package steps

import "github.com/oxefs/oxefs/sample"

// Worker is what one worker goroutine brings to Assembler.Build: the
// scratch reused from sample to sample. Its frames are decoded by the
// worker's sample.FrameWorker. It is not safe for concurrent use.
type Worker struct {
	idx    [][]int // by request: the steps of a slot
	state  []int   // the state's or the action's steps
	floats []float64
	row    []float64
	chunk  []float64
	text   []byte
	reqs   []sample.Request
}

// NewWorker returns a worker's scratch.
func NewWorker() *Worker { return &Worker{} }

// Footprint is the bytes the worker's reusable buffers hold.
func (w *Worker) Footprint() int {
	n := cap(w.text) + 8*(cap(w.floats)+cap(w.row)+cap(w.chunk)+cap(w.state))
	for _, x := range w.idx {
		n += 8 * cap(x)
	}
	return n
}
