package pairs

import (
	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/frames"
)

// Worker is what one worker goroutine brings to Assembler.Build: its
// frames.Decoder and the scratch that is reused from sample to sample
// (frame indices, metadata values, the camera's frame source), so that
// building allocates nothing per frame in steady state. It is not safe for
// concurrent use: make one per worker goroutine.
type Worker struct {
	dec *frames.Decoder

	// scratch
	idx    []int
	floats []float64
	text   []byte
	view   episode.View // the camera's feature, read by images
	images frames.Images
	video  frames.Video
}

// NewWorker returns a worker that decodes with d and owns it: Close closes
// it.
func NewWorker(d *frames.Decoder) *Worker { return &Worker{dec: d} }

// Decoder returns the worker's decoder.
func (w *Worker) Decoder() *frames.Decoder { return w.dec }

// Footprint is the bytes the worker's reusable buffers hold, its decoder's
// included, for the daemon's memory budget.
func (w *Worker) Footprint() int {
	return w.dec.Footprint() + cap(w.text) + 8*cap(w.floats) + 8*cap(w.idx)
}

// Close closes the worker's decoder.
func (w *Worker) Close() { w.dec.Close() }
