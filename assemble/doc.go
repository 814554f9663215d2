// Package assemble builds the batches of one view of a plan: for batch n, it
// takes the plan's samples, has the caller bring their remote bytes in
// (Options.Fetch), loads their episodes, and builds every sample in
// parallel on a Pool of decode workers into the batch's buffer; then the
// batch writes its metadata file. It knows the kind of sample only as a
// sample.Kind (pairs, step samples: the factory in loader/kind.go picks
// it), and gives every batch one sample.Stage, the frame stage that
// decodes each (frame, size, transform parameters) of the batch once,
// with each worker's sample.FrameDecoder.
//
// A sample whose episode is too short or damaged is substituted
// deterministically (Builder.sample): the same bad unit is always
// replaced by the same good one, whatever reader met it first, and every
// substitution is counted in Stats for stats.json.
//
// assemble knows nothing of storage or of any format: it reads episodes
// through the neutral episode.Dataset.
package assemble
