package sample

import (
	"context"

	"github.com/oxefs/oxefs/episode"
	"github.com/oxefs/oxefs/plan"
)

// Kind is one kind of sample, as the batch builder sees it. A Kind is made
// once per mix (loader/kind.go), is immutable and is shared by every view
// and every worker.
type Kind interface {
	// Files says what one batch is to the scheduler.
	Files() Files
	// NewWorker returns the scratch one decode worker goroutine reuses from
	// sample to sample; Batch.Build is given back only workers of its Kind.
	NewWorker() Worker
	// NewBatch starts batch n over buf, a buffer of Files' size. Every
	// sample of it is then built once (or again, after a failure), each
	// on one worker, concurrently; then Finish.
	NewBatch(n int64, buf []byte) (Batch, error)
	// Needs says what an episode of dataset d must be longer than, for
	// the error of a dataset none of whose episodes is long enough.
	Needs(d int) Need
}

// Files is what a batch is to the scheduler (batch.Config).
type Files struct {
	// Samples is the batch size.
	Samples int
	// Shape is the shape of the batch's one uint8 array, whose .npy header
	// the scheduler writes; with Parts, it is the buffer's size in bytes.
	Shape []int
	// Parts, when set, are the batch's files, each a range of one buffer
	// that holds its own .npy header (batch.Config.Headerless, Parts).
	Parts []Part
}

// Part is one file of a batch of several.
type Part struct {
	// Suffix follows the batch's name: ".action.npy".
	Suffix    string
	Off, Size int64
}

// Need is what an episode of a dataset must be longer than: What (offset
// 3, drop_last 2), the steps that takes, and what to lower (Fix).
type Need struct {
	What  string
	Steps int
	Fix   string
}

// Worker is one decode worker goroutine's scratch for a Kind. It is not
// safe for concurrent use.
type Worker interface {
	// Footprint is the bytes its reusable buffers hold.
	Footprint() int
}

// Batch is one batch being built.
type Batch interface {
	// Build writes sample i of the batch from s, the planned sample or the
	// substitute the builder chose for it, and its episode ep. Its frames
	// go through f, the batch's frame stage on this worker, with the
	// transform parameters f.Params draws for each camera. Errors: a
	// *ShortEpisodeError when ep is too short, a *episode.CorruptError for
	// bad data (wrapping a *frames.ImageError for a bad image), or a read's
	// error naming the episode. After an error sample i holds partial data
	// and is built again from a substitute (or the batch fails).
	Build(ctx context.Context, w Worker, f Frames, i int, s plan.Sample, ep episode.Episode) error
	// Finish is called once every sample is built: it writes what only the
	// whole batch knows and returns the batch's metadata file (nil for
	// none). samples are the planned samples; repeat, when not nil, marks
	// those that only fill the batch (the val view's repeats).
	Finish(samples []plan.Sample, repeat []bool) ([]byte, error)
}
