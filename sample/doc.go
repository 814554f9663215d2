// Package sample is the seam between the batch builder (package assemble)
// and the kinds of sample it builds: frame pairs (package pairs) and step
// samples (package steps). The builder knows only Kind; a factory in the
// composition root (loader/kind.go) is the one place that maps a config to
// a kind.
//
// # Kinds
//
// A Kind says what a batch is to the scheduler (Files), makes the scratch
// of one decode worker (NewWorker) and starts a batch (NewBatch). The
// Batch builds sample i from a planned sample — or from the substitute the
// builder chose for it — and its episode, and writes the batch's
// metadata once every sample is built (Finish). Kinds differ in what a
// sample holds; what they share lives here once: the batch-level frame
// stage, the camera's frame source, the parameter slot of augmentation,
// and the reading of a dataset's action, state and language keys (Keys,
// Language, Affine).
//
// # The frame stage
//
// Every frame a sample shows is asked of the batch's Stage as a Request:
// one camera of one episode (dataset, episode, image key), the step shown
// at each position, the output size and layout (a frames.Slot in the
// batch's buffer) and Params, the per-(sample, camera) transform
// parameters a Transformer draws (Identity: none). The stage decodes each
// distinct (dataset, episode, image key, step, size, Params) once per
// batch: the first sample that asks claims it and decodes it — straight
// into its place in the batch buffer when its request is nothing but
// frames it claimed, in ascending order — and the others copy the
// owner's pixels once it is done. A worker decodes every frame it claimed
// before it waits on another's, so no worker waits on one that waits; a
// sample whose decode fails gives its claims up, and those waiting decode
// the frame themselves. Decoding is deterministic, so the bytes never
// depend on who decoded. The builder revokes a sample's claims (Revoke)
// when its build fails after them, before a substitute overwrites it.
//
// Decoding itself goes through a FrameDecoder, chosen once per worker:
// CPU (package frames: libjpeg-turbo or image/jpeg, PNG, libavcodec for
// video) is the one there is; a GPU decoder, a pass-through one or a
// viewer's tap is another implementation, given to the worker pool, with
// no change to the kinds or the builder.
package sample
